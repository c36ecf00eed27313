"""watcher bisect end to end: the fake GitHub's tags and compare answers make the grid, the fake
docker runs the fake engine whose behaviour depends on its image tag, real SQLite, real runs."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from kits.bisectkit import IMAGE, seed_releases, setup, write_config
from kits.smokekit import REPO

from watcher.bisect.search import budget_for, recipe_for
from watcher.cli import cli
from watcher.config.load import load_config
from watcher.config.model import recipe_digest
from watcher.core.errors import WatcherError
from watcher.store.db import Store


def run_cli(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def bisect_json(cfg_path, *args: str):
    r = run_cli("bisect", *args, "--config", str(cfg_path), "--json")
    return r, (json.loads(r.stdout) if r.stdout.strip().startswith("{") else None)


def smoke_runs(cfg_path) -> list[dict]:
    store = Store(load_config(cfg_path).db_path)
    try:
        return store.smoke_runs()
    finally:
        store.close()


def test_finds_the_exact_first_bad_build_within_budget(tmp_path, fake_github, monkeypatch):
    setup(monkeypatch, tmp_path)
    rel = seed_releases(fake_github, 16)
    tags = [r["tag"] for r in rel]
    cfg = write_config(tmp_path, fake_github, tags, ["--bad-from", "v0.1.11"])
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.15")
    assert r.exit_code == 0, r.stderr
    rep = state["report"]
    assert state["status"] == "done" and rep["exact"]
    assert rep["before"]["build"] == f"{IMAGE}:v0.1.10"
    assert rep["after"]["build"] == f"{IMAGE}:v0.1.11"
    assert rep["after"]["sha"] == rel[11]["sha"]
    assert rep["after"]["digest"].startswith("sha256:")
    assert rep["after"]["installed"] == "verified: the engine reports 0.1.11"
    assert rep["failure"] == "marlin-tile-n"
    assert rep["compare_url"].endswith(f"/compare/{rel[10]['sha']}...{rel[11]['sha']}")
    assert rep["commits_in_range"] == 2
    # both endpoints were confirmed first, then the search
    assert [s["index"] for s in state["steps"][:2]] == [0, 15]
    assert rep["runs"] == len(state["steps"]) <= budget_for(16) == 6
    runs = smoke_runs(cfg)
    assert len(runs) == rep["runs"] and all(run.get("bisect") for run in runs)
    assert "automatically" in rep["automated"] and "RTX 3090" in rep["hardware"]
    # the report on stdout
    from watcher.bisect.report import text

    shown = text(state)
    assert f"  first bad: {IMAGE}:v0.1.11 (sha256:" in shown
    assert (
        "verified: the engine reports 0.1.11" in shown
        and "  hardware: NVIDIA GeForce RTX 3090" in shown
    )
    assert f"  range: {rep['compare_url']} (2 commits)" in shown and "found automatically" in shown
    store = Store(load_config(cfg).db_path)
    try:
        events = [e for e in store.events() if e["kind"] == "bisect"]
        assert events and "first bad lmsysorg/sglang:v0.1.11" in events[0]["message"]
        assert store.evaluation_runs() == []  # old builds never become the recipe's verdict
    finally:
        store.close()


def test_untestable_builds_are_skipped_and_the_search_goes_around(
    tmp_path, fake_github, monkeypatch
):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 8)]
    # v0.1.3 crashes for another reason (no known signature); v0.1.4's label lies
    args = ["--bad-from", "v0.1.5", "--broken", "v0.1.3", "--report-version", "v0.1.4=0.1.2"]
    cfg = write_config(tmp_path, fake_github, tags, args)
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.7")
    rep = state["report"]
    skipped = {s["build"]: s["why"] for s in rep["skipped"]}
    assert "fails differently (failed:no-signature" in skipped[f"{IMAGE}:v0.1.3"]
    assert "labelled 0.1.4 but its engine reports 0.1.2" in skipped[f"{IMAGE}:v0.1.4"]
    assert rep["after"]["build"] == f"{IMAGE}:v0.1.5"
    # neither v0.1.3 nor v0.1.4 could be judged: the first bad is known only as "after v0.1.2"
    assert rep["before"]["build"] == f"{IMAGE}:v0.1.2"
    assert not rep["exact"]
    assert rep["untested_in_range"] == [f"{IMAGE}:v0.1.3", f"{IMAGE}:v0.1.4"]
    assert r.exit_code == 1
    assert rep["steps_judged"] <= budget_for(8)


def test_endpoints_are_confirmed(tmp_path, fake_github, monkeypatch):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 4)]
    cfg = write_config(tmp_path, fake_github, tags, ["--bad-from", "v0.1.0"])
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.3")
    assert r.exit_code == 1
    assert state["status"] == "failed" and "the good build does not pass" in state["message"]
    assert len(state["steps"]) == 1
    page = (tmp_path / "site" / "bisect" / f"{state['id']}.html").read_text()
    assert "Bisect of fake: failed" in page and "the good build does not pass" in page
    cfg = write_config(tmp_path, fake_github, tags, [])  # nothing breaks
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.3")
    assert state["status"] == "failed" and "the bad build passes" in state["message"]


def test_a_stopped_bisect_resumes_where_it_was(tmp_path, fake_github, monkeypatch):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 16)]
    cfg = write_config(tmp_path, fake_github, tags, ["--bad-from", "v0.1.5"], max_runs=3)
    r = run_cli("bisect", "fake", "--good", "v0.1.0", "--bad", "v0.1.15", "--config", str(cfg))
    assert r.exit_code == 1
    assert "paused: smoke.max_runs_per_day (3)" in r.stdout
    resume = [line for line in r.stderr.splitlines() if line.startswith("resume with: ")]
    assert resume, r.stderr
    bisect_id = resume[0].split("--resume ")[1].split()[0]
    assert len(smoke_runs(cfg)) == 3
    # a new day's budget (here: a larger one) and the printed command finish it
    write_config(tmp_path, fake_github, tags, ["--bad-from", "v0.1.5"], max_runs=100)
    r, state = bisect_json(cfg, "--resume", bisect_id)
    assert r.exit_code == 0, r.stderr
    assert state["id"] == bisect_id and state["report"]["after"]["build"] == f"{IMAGE}:v0.1.5"
    assert state["report"]["runs"] == len(smoke_runs(cfg)) <= budget_for(16)
    # the same command again also finds the stored bisect instead of starting over
    r = run_cli("bisect", "--resume", bisect_id, "--config", str(cfg))
    assert r.exit_code == 1 and "nothing to resume" in r.stderr


def test_find_fix(tmp_path, fake_github, monkeypatch):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 10)]
    cfg = write_config(tmp_path, fake_github, tags, ["--fixed-from", "v0.1.7"])
    r, state = bisect_json(cfg, "fake", "--bad", "v0.1.0", "--good", "v0.1.9", "--find-fix")
    assert r.exit_code == 0, r.stderr
    rep = state["report"]
    assert rep["before_word"] == "last broken" and rep["before"]["build"] == f"{IMAGE}:v0.1.6"
    assert rep["after_word"] == "first fixed" and rep["after"]["build"] == f"{IMAGE}:v0.1.7"
    assert rep["failure"] == "marlin-tile-n" and rep["runs"] <= budget_for(10)


def test_candidate_commit_range_found_in_two_runs(tmp_path, fake_github, monkeypatch):
    setup(monkeypatch, tmp_path)
    rel = seed_releases(fake_github, 32)
    tags = [r["tag"] for r in rel]
    # a tracked pull request merged as the release commit of v0.1.21
    fake_github.add_pull(
        ENGINE := "sgl-project/sglang",
        4242,
        title="Rework the Marlin loader",
        merged=True,
        merge_commit_sha=rel[21]["sha"],
        merged_at="2026-10-10T00:00:00Z",
    )
    extra = f'[[item]]\nid = "loader-pr"\nrepo = "{ENGINE}"\nkind = "pull"\nnumber = 4242\n'
    cfg = write_config(tmp_path, fake_github, tags, ["--bad-from", "v0.1.21"], extra=extra)
    cfg_text = cfg.read_text().replace(
        'title = "Marlin pad"', 'title = "Marlin pad"\nwatch = ["loader-pr"]'
    )
    cfg.write_text(cfg_text)
    assert run_cli("check-now", "--config", str(cfg), "--no-smoke").exit_code == 0
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.31")
    assert r.exit_code == 0, r.stderr
    rep = state["report"]
    assert rep["after"]["build"] == f"{IMAGE}:v0.1.21"
    phases = [s["index"] for s in state["steps"]]
    assert phases == [0, 31, 21, 20]  # the endpoints, then just after and just before
    assert rep["runs"] == 4 < budget_for(32)
    assert rep["tracked"][0]["line"].startswith(
        "the regression range contains the merge commit of #4242"
    )


def docker_runs(tmp_path) -> list[str]:
    """The images the fake docker was asked to run, in order."""
    calls = [json.loads(line) for line in docker_calls(tmp_path)]
    return [a[a.index("python") - 1] for a in calls if a[:1] == ["run"]]


def docker_calls(tmp_path) -> list[str]:
    path = tmp_path / "docker-state" / "calls.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def test_a_purged_build_inside_the_range_is_skipped_never_run(
    tmp_path, fake_github, monkeypatch, registry
):
    """Issue 33 item 7: one purged build in 16 no longer stops the bisect (it refused to start)."""
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 16)]
    registry.purge(IMAGE, "v0.1.4")
    cfg = write_config(tmp_path, fake_github, tags, ["--bad-from", "v0.1.11"])
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.15")
    assert r.exit_code == 0, r.stderr
    rep = state["report"]
    assert rep["exact"] and rep["after"]["build"] == f"{IMAGE}:v0.1.11"
    assert (
        rep["gone"] == [{"build": f"{IMAGE}:v0.1.4", "why": state["points"][4]["gone"]}]
        and "answered 404" in rep["gone"][0]["why"]
    )
    assert rep["steps_judged"] <= budget_for(16) and rep["runs"] == len(state["steps"])
    assert f"{IMAGE}:v0.1.4" not in docker_runs(tmp_path)
    # existence was asked of the registry, one HEAD per build; docker was never asked
    heads = [q for q in registry.requests if q["method"] == "HEAD" and q["status"] in (200, 404)]
    assert len(heads) == 16
    assert not any(json.loads(c)[:1] == ["manifest"] for c in docker_calls(tmp_path))


def test_a_gone_middle_build_has_its_neighbour_tried_and_the_range_says_so(
    tmp_path, fake_github, monkeypatch, registry
):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 16)]
    for tag in ("v0.1.7", "v0.1.4"):  # the first middle, and the build just before the first bad
        registry.purge(IMAGE, tag)
    page = '[[page]]\nid = "guide"\ntitle = "The guide"\noutput = "GUIDE.md"\nrecipes = ["fake"]\n'
    cfg = write_config(tmp_path, fake_github, tags, ["--bad-from", "v0.1.5"], extra=page)
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.15")
    assert [s["index"] for s in state["steps"]][:3] == [0, 15, 6]  # 7 is gone: its neighbour
    rep = state["report"]
    assert (
        rep["before"]["build"] == f"{IMAGE}:v0.1.3" and rep["after"]["build"] == f"{IMAGE}:v0.1.5"
    )
    assert rep["gone_in_range"] == [f"{IMAGE}:v0.1.4"] and rep["exact"] and r.exit_code == 0
    assert rep["runs"] <= budget_for(16)  # gone builds cost no run
    assert not {f"{IMAGE}:v0.1.7", f"{IMAGE}:v0.1.4"} & set(docker_runs(tmp_path))
    from watcher.bisect.report import summary, text

    shown = text(state)
    assert f"; between {IMAGE}:v0.1.3 and {IMAGE}:v0.1.5, {IMAGE}:v0.1.4 skipped as gone" in shown
    assert f"gone (no longer published, never run): {IMAGE}:v0.1.4, {IMAGE}:v0.1.7" in shown
    assert "1 between skipped as gone" in summary(state)
    html = (tmp_path / "site" / "bisect" / f"{state['id']}.html").read_text()
    assert f"{IMAGE}:v0.1.4 skipped as gone (no longer published, never run)" in html
    assert "could not be judged" not in html  # a gone build was never run, not misjudged
    from watcher.core.clock import utcnow
    from watcher.judge.evaluate import evaluate
    from watcher.notify.plan import Bodies

    loaded = load_config(cfg)
    store = Store(loaded.db_path)
    try:
        ev = evaluate(loaded, store.items(), store.evaluation_runs(), store.statuses(), utcnow())
        body = Bodies(loaded, ev, store.items(), [], {}, bisects=store.bisects())
        body = body.status(loaded.page("guide"))
    finally:
        store.close()
    assert f"1 between skipped as gone (`{IMAGE}:v0.1.4`)" in body  # the sticky comment too
    # the dry run lists them before anything runs
    r = run_cli("bisect", "fake", "--good", "v0.1.0", "--bad", "v0.1.15", "--dry-run",
                "--config", str(cfg))  # fmt: skip
    assert r.stdout.startswith("16 builds, 2 gone (skipped, never run); budget 6")
    assert (
        f"    8. {IMAGE}:v0.1.7" in r.stdout
        and "gone: docker.io/lmsysorg/sglang:v0.1.7 answered 404" in r.stdout
    )


def test_a_gone_end_or_an_unanswering_registry_stops_it_before_any_run(
    tmp_path, fake_github, monkeypatch, registry
):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 6)]
    registry.purge(IMAGE, "v0.1.5")
    cfg = write_config(tmp_path, fake_github, tags, ["--bad-from", "v0.1.3"])
    r = run_cli("bisect", "fake", "--good", "v0.1.0", "--bad", "v0.1.5", "--config", str(cfg))
    assert r.exit_code == 1
    assert "not started: an end of the range is gone" in r.stderr
    assert f"{IMAGE}:v0.1.5 (docker.io/lmsysorg/sglang:v0.1.5 answered 404" in r.stderr
    monkeypatch.setenv("WATCHER_REGISTRY_MAP", "docker.io=http://127.0.0.1:9")  # nothing listens
    monkeypatch.setenv("PATH", str(tmp_path / "no-docker"))  # and no docker to fall back on
    r = run_cli("bisect", "fake", "--good", "v0.1.0", "--bad", "v0.1.4", "--config", str(cfg))
    assert r.exit_code == 1 and "exist could not be checked" in r.stderr
    assert "the registry did not answer" in r.stderr
    assert smoke_runs(cfg) == []


def test_dry_run_lists_the_grid_from_tags_and_compare(tmp_path, fake_github, monkeypatch):
    setup(monkeypatch, tmp_path)
    rel = seed_releases(fake_github, 5)
    fake_github.add_tag("sgl-project/sglang", "gateway-v1", rel[2]["sha"])  # not a release line
    cfg = write_config(tmp_path, fake_github, [r["tag"] for r in rel], [])
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.1", "--bad", "v0.1.4", "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert [p["tag"] for p in state["points"]] == ["v0.1.1", "v0.1.2", "v0.1.3", "v0.1.4"]
    assert [p["sha"] for p in state["points"]] == [x["sha"] for x in rel[1:]]
    assert len(state["commits"]) == 6 and smoke_runs(cfg) == []
    r = run_cli(
        "bisect", "fake", "--good", "v0.1.1", "--bad", "v0.1.4", "--dry-run", "--config", str(cfg)
    )
    assert r.exit_code == 0 and r.stdout.startswith("4 builds, all present; budget 4 judged steps")
    assert f"    1. {IMAGE}:v0.1.1  {rel[1]['sha'][:12]}" in r.stdout
    r = run_cli("bisect", "fake", "--good", "v0.1.4", "--bad", "v0.1.1", "--config", str(cfg))
    assert r.exit_code == 1 and "is not after v0.1.4" in r.stderr


def test_nightly_grid_takes_the_last_commit_of_each_day(tmp_path, fake_github, monkeypatch):
    setup(monkeypatch, tmp_path)
    rel = seed_releases(fake_github, 30)  # 60 commits, 24 a day
    source = (
        'repo = "sgl-project/sglang"\nimage = "lmsysorg/sglang"\n'
        'tag = "nightly-dev-{date}-{sha8}"\nevery = "day"'
    )
    cfg = write_config(tmp_path, fake_github, ["x"], [], source=source)
    r, state = bisect_json(
        cfg, "fake", "--good", rel[0]["tag"], "--bad", rel[-1]["tag"], "--dry-run"
    )
    assert r.exit_code == 0, r.stderr
    builds = [p["build"] for p in state["points"]]
    assert builds[0] == f"{IMAGE}:nightly-dev-20260902-{rel[0]['sha'][:8]}"
    assert builds[-1].endswith(rel[-1]["sha"][:8]) and len(builds) == 4


def test_noisy_performance_regression_has_no_verdict_below_the_repeat_threshold(
    tmp_path, fake_github, monkeypatch
):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 4)]
    args = [
        "--bad-from", "v0.1.2", "--bad-mode", "slow", "--tokens-per-s", "300",
        "--bad-tokens-per-s", "60", "--speed-noise", "0.5",
    ]  # fmt: skip
    checks = "min_decode_tokens_per_s = 100.0"
    cfg = write_config(tmp_path, fake_github, tags, args, checks=checks)
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.3")
    assert state["status"] == "insufficient-data", state["message"]
    assert "needs at least 3 runs per build" in state["message"]
    assert "report" in state and "before" not in state["report"]  # no guess
    assert r.exit_code == 1


@pytest.mark.parametrize("n,expected", [(2, 3), (4, 4), (16, 6), (64, 8), (200, 10)])
def test_budget(n, expected):
    assert budget_for(n) == expected


@pytest.mark.slow(seconds=30)  # slow builds decode slowly, three runs each
def test_noisy_performance_regression_is_found_with_enough_repeats(
    tmp_path, fake_github, monkeypatch
):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 4)]
    args = [
        "--bad-from", "v0.1.2", "--bad-mode", "slow", "--tokens-per-s", "400",
        "--bad-tokens-per-s", "40", "--speed-noise", "0.2",
    ]  # fmt: skip
    # 48 timed tokens, not 128: a slow build's run (a warm-up and three timed generations at
    # 40 tok/s) takes 5 s, not 13, and a build still needs a 0.3 s stall to be misjudged either
    # way; the speeds, the noise and the floor stay as they were
    checks = "min_decode_tokens_per_s = 100.0\ndecode_tokens = 48"
    extra = "[bisect]\nthreshold = 0.5"
    cfg = write_config(tmp_path, fake_github, tags, args, checks=checks, extra=extra)
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.3", "--repeat", "3")
    assert r.exit_code == 0, state and state["message"]
    rep = state["report"]
    assert rep["after"]["build"] == f"{IMAGE}:v0.1.2" and rep["failure"] == "check:decode"
    assert all(len(s["samples"]) == 3 for s in state["steps"])
    assert rep["runs"] == 3 * len(state["steps"])


def test_the_report_reaches_the_site_the_feed_and_the_sticky_comment(
    tmp_path, fake_github, monkeypatch
):
    from watcher.core.clock import utcnow
    from watcher.judge.evaluate import evaluate
    from watcher.notify.plan import Bodies

    setup(monkeypatch, tmp_path)
    rel = seed_releases(fake_github, 4)
    page = '[[page]]\nid = "guide"\ntitle = "The guide"\noutput = "GUIDE.md"\nrecipes = ["fake"]\n'
    flag = (
        '[[item]]\nid = "loader-commits"\nrepo = "sgl-project/sglang"\nkind = "commits"\n'
        'pattern = "Change 7 "\n'
    )
    cfg_path = write_config(
        tmp_path, fake_github, [r["tag"] for r in rel], ["--bad-from", "v0.1.3"], extra=page + flag
    )
    r, state = bisect_json(cfg_path, "fake", "--good", "v0.1.0", "--bad", "v0.1.3")
    assert r.exit_code == 0, r.stderr
    rep = state["report"]
    assert [c["subject"] for c in rep["flagged"]] == ["Change 7 of release 3"]
    assert f"site: {tmp_path / 'site' / 'bisect' / state['id']}.html" in r.stderr
    html = (tmp_path / "site" / "bisect" / f"{state['id']}.html").read_text()
    assert "First bad" in html and "lmsysorg/sglang:v0.1.3" in html and rep["compare_url"] in html
    assert "Change 7 of release 3" in html and "found automatically" in html
    assert state["id"] in (tmp_path / "site" / "bisect" / "index.html").read_text()
    feed = (tmp_path / "site" / "feed.xml").read_text()
    assert "<title>Bisect of fake: last good lmsysorg/sglang:v0.1.2, first bad" in feed
    cfg = load_config(cfg_path)
    store = Store(cfg.db_path)
    try:
        ev = evaluate(cfg, store.items(), store.evaluation_runs(), store.statuses(), utcnow())
        bodies = Bodies(cfg, ev, store.items(), [], {}, bisects=store.bisects())
        body = bodies.status(cfg.page("guide"))
    finally:
        store.close()
    assert "**Bisect**" in body and "`lmsysorg/sglang:v0.1.3`" in body
    assert f"({rep['compare_url']})" in body and "Found automatically" in body


@pytest.fixture
def wheel_index(tmp_path):
    """A PEP 503 simple index on loopback listing sglang wheels (tests add the files)."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    root = tmp_path / "index"
    (root / "simple" / "sglang").mkdir(parents=True)

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=root))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def publish(versions):
        links = "".join(
            f'<a href="../../files/sglang-{v}-py3-none-any.whl#sha256=00">sglang-{v}</a>\n'
            for v in versions
        )
        (root / "simple" / "sglang" / "index.html").write_text(f"<html><body>{links}</body></html>")

    yield f"http://127.0.0.1:{server.server_address[1]}/simple", publish
    server.shutdown()
    server.server_close()


def test_wheel_builds_checked_against_the_index(tmp_path, fake_github, monkeypatch, wheel_index):
    setup(monkeypatch, tmp_path)
    url, publish = wheel_index
    rel = seed_releases(fake_github, 6)
    versions = [r["tag"].removeprefix("v") for r in rel]
    source = f'repo = "sgl-project/sglang"\nrequirement = "sglang=={{version}}"\nindex = "{url}"'
    # the recipe installs {build}; here the fake engine is told which build it is
    args = ["--bad-from", "0.1.4"]
    cfg = write_config(tmp_path, fake_github, versions, args, source=source, docker=False)
    assert '"--build", "{build}"' in cfg.read_text() and '"docker"' not in cfg.read_text()
    publish(versions[:2] + versions[3:5])  # 0.1.2 was yanked, 0.1.5 not yet published
    r = run_cli("bisect", "fake", "--good", "v0.1.0", "--bad", "v0.1.5", "--config", str(cfg))
    assert r.exit_code == 1 and "not started: an end of the range is gone" in r.stderr
    assert "sglang==0.1.5 (sglang 0.1.5 is not on" in r.stderr and smoke_runs(cfg) == []
    publish(versions[:2] + versions[3:])
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.5")
    assert r.exit_code == 0, r.stderr
    assert state["report"]["gone"][0]["build"] == "sglang==0.1.2"
    assert "sglang==0.1.2" not in [s["build"] for s in state["steps"]]
    publish(versions)
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.5")
    assert r.exit_code == 0, r.stderr
    rep = state["report"]
    assert rep["before"]["build"] == "sglang==0.1.3" and rep["after"]["build"] == "sglang==0.1.4"
    assert rep["after"]["installed"] == "verified: the engine reports 0.1.4"


def test_a_regressed_page_bisects_itself_one_step_per_cycle(tmp_path, fake_github, monkeypatch):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 4)]
    page = '[[page]]\nid = "guide"\ntitle = "The guide"\noutput = "GUIDE.md"\nrecipes = ["fake"]\n'
    kw = dict(extra=page + "[bisect]\nauto = true\n", blockers="[]")
    args = ["--bad-from", "v0.1.2"]
    cfg = write_config(tmp_path, fake_github, tags, args, image_tag="v0.1.0", **kw)
    assert run_cli("smoke", "fake", "--config", str(cfg)).exit_code == 0
    assert run_cli("check-now", "--config", str(cfg)).exit_code == 0
    write_config(tmp_path, fake_github, tags, args, image_tag="v0.1.3", **kw)  # an upgrade
    assert run_cli("smoke", "fake", "--config", str(cfg)).exit_code == 1
    assert run_cli("check-now", "--config", str(cfg)).exit_code == 0  # regressed: starts it
    store = Store(load_config(cfg).db_path)
    try:
        (state,) = store.bisects()
        assert (state["good"], state["bad"], state["auto"]) == ("v0.1.0", "v0.1.3", True)
        assert state["status"] == "paused" and len(state["steps"]) == 1
        started = [e for e in store.events() if e["kind"] == "bisect" and e["new"] == "started"]
        assert "started automatically: page guide regressed" in started[0]["message"]
    finally:
        store.close()
    for _ in range(4):
        assert run_cli("check-now", "--config", str(cfg)).exit_code == 0
    store = Store(load_config(cfg).db_path)
    try:
        (state,) = store.bisects()
        assert state["status"] == "done"
        assert state["report"]["after"]["build"] == f"{IMAGE}:v0.1.2"
        assert len(state["steps"]) == 4 <= budget_for(4)
        assert store.statuses()["page:guide"]["status"] == "regressed"  # bisect runs: no verdict
    finally:
        store.close()


def test_github_actions_backend_dispatches_one_run_per_step_collected_by_later_cycles(
    tmp_path, fake_github, monkeypatch
):
    setup(monkeypatch, tmp_path)
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    tags = [r["tag"] for r in seed_releases(fake_github, 8)]
    dispatched = []

    def on_dispatch(inputs):  # the GPU runner: `watcher smoke fake --build BUILD`
        dispatched.append(inputs)
        version = inputs["build"].rsplit(":v", 1)[1]
        bad = tags.index("v" + version) >= 5
        doc = {
            "run_id": inputs["run_id"],
            "recipe": inputs["recipe"],
            "outcome": "failed" if bad else "passed",
            "signature": "marlin-tile-n" if bad else None,
            "reason": "marlin" if bad else "passed",
            "hardware": {"gpus": [{"name": "NVIDIA GeForce RTX 3090"}], "matches_target": True},
            "engine_version": version,
            "metrics": {"decode_tokens_per_s": None},
            "bisect": {"build": inputs["build"]},
            "started_at": "2026-12-01T00:00:00Z",
            "finished_at": "2026-12-01T00:01:00Z",
        }
        # what `watcher smoke --build` reports: the digest of the recipe with the build swapped in
        c = load_config(cfg)
        doc["recipe_digest"] = recipe_digest(recipe_for(c.recipe("fake"), inputs["build"]))
        return {"result.json": json.dumps(doc)}

    fake_github.add_workflow(
        "org/guide",
        "smoke.yml",
        on_dispatch=on_dispatch,
        run_name="smoke {recipe} {run_id}",
        artifact_name="smoke-result",
    )
    cfg = write_config(tmp_path, fake_github, tags, [])
    smoke = '[smoke]\nbackend = "github-actions"\nrepo = "org/guide"\npoll_interval = 0\n'
    cfg.write_text(cfg.read_text().replace("[smoke]\n", smoke))
    r = run_cli("bisect", "fake", "--good", "v0.1.0", "--bad", "v0.1.7", "--config", str(cfg))
    assert r.exit_code == 1 and "dispatched step 1 (lmsysorg/sglang:v0.1.0)" in r.stdout
    assert "resume with: watcher bisect --resume" in r.stderr
    for _ in range(60):  # each cycle collects a finished step and dispatches the next
        assert run_cli("check-now", "--config", str(cfg)).exit_code == 0
        store = Store(load_config(cfg).db_path)
        try:
            (state,) = store.bisects()
        finally:
            store.close()
        if state["status"] not in ("running", "paused"):
            break
    assert state["status"] == "done", state["message"]
    rep = state["report"]
    assert rep["after"]["build"] == f"{IMAGE}:v0.1.5" and rep["exact"]
    assert len(dispatched) == len(state["steps"]) == rep["runs"] <= budget_for(8)
    assert [d["build"] for d in dispatched[:2]] == [f"{IMAGE}:v0.1.0", f"{IMAGE}:v0.1.7"]
    runs = smoke_runs(cfg)
    assert {run["backend"] for run in runs} == {"github-actions"} and len(runs) == rep["runs"]
    assert all(run["bisect"]["id"] == state["id"] for run in runs)


def test_a_cancelled_actions_step_is_settled(tmp_path, fake_github, monkeypatch):
    """Issue 32 H3: a step whose job was cancelled (an empty result.json) is settled as an
    `error` run at once, never left pending."""
    from watcher.fakes.github.routes.actions import JobEnded

    setup(monkeypatch, tmp_path)
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    tags = [r["tag"] for r in seed_releases(fake_github, 4)]
    dispatched = []

    def on_dispatch(inputs):
        dispatched.append(inputs)
        if len(dispatched) == 1:
            raise JobEnded("cancelled", {"result.json": ""})
        version = inputs["build"].rsplit(":v", 1)[1]
        doc = {
            "run_id": inputs["run_id"],
            "recipe": inputs["recipe"],
            "outcome": "passed",
            "reason": "passed",
            "hardware": {"gpus": [{"name": "NVIDIA GeForce RTX 3090"}], "matches_target": True},
            "engine_version": version,
            "metrics": {"decode_tokens_per_s": None},
            "started_at": "2026-12-01T00:00:00Z",
            "finished_at": "2026-12-01T00:01:00Z",
        }
        c = load_config(cfg)
        doc["recipe_digest"] = recipe_digest(recipe_for(c.recipe("fake"), inputs["build"]))
        return {"result.json": json.dumps(doc)}

    fake_github.add_workflow(
        "org/guide",
        "smoke.yml",
        on_dispatch=on_dispatch,
        run_name="smoke {recipe} {run_id}",
        artifact_name="smoke-result",
    )
    cfg = write_config(tmp_path, fake_github, tags, [])
    smoke = '[smoke]\nbackend = "github-actions"\nrepo = "org/guide"\npoll_interval = 0\n'
    cfg.write_text(cfg.read_text().replace("[smoke]\n", smoke))
    run_cli("bisect", "fake", "--good", "v0.1.0", "--bad", "v0.1.3", "--config", str(cfg))
    for _ in range(10):
        assert run_cli("check-now", "--config", str(cfg)).exit_code == 0
        store = Store(load_config(cfg).db_path)
        try:
            (state,) = store.bisects()
        finally:
            store.close()
        if state["status"] not in ("running", "paused"):
            break
    # the good endpoint's job was cancelled: the bisect says so instead of waiting for good
    assert state["status"] == "failed" and "concluded cancelled" in state["message"]
    (run,) = smoke_runs(cfg)
    assert run["outcome"] == "error" and run["run_id"] == dispatched[0]["run_id"]


def test_sigterm_midway_keeps_the_state_and_the_printed_command_resumes(
    tmp_path, fake_github, monkeypatch
):
    import os
    import signal
    import subprocess
    import sys
    import time

    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 16)]
    cfg = write_config(tmp_path, fake_github, tags, ["--bad-from", "v0.1.6"])
    proc = subprocess.Popen(
        [sys.executable, "-m", "watcher", "bisect", "fake", "--good", "v0.1.0", "--bad", "v0.1.15"]
        + ["--config", str(cfg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    db = load_config(cfg).db_path
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until two steps are stored and a third is running
        try:
            store = Store(db)
        except WatcherError:  # the bisect is creating it right now
            time.sleep(0.05)
            continue
        try:
            states = store.bisects()
            running = [r for r in store.smoke_runs() if r["outcome"] == "started"]
        finally:
            store.close()
        if states and len(states[0]["steps"]) >= 2 and running:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    line = next((x for x in err.splitlines() if x.startswith("stopped; resume with: ")), err)
    bisect_id = line.split("--resume ")[1].split()[0]
    store = Store(db)
    try:
        state = store.bisect(bisect_id)
        assert state["status"] == "paused" and state["message"] == "paused: interrupted"
        steps_before = len(state["steps"])
        assert steps_before >= 2
    finally:
        store.close()
    r, state = bisect_json(cfg, "--resume", bisect_id)
    assert r.exit_code == 0, r.stderr
    assert state["report"]["after"]["build"] == f"{IMAGE}:v0.1.6"
    assert len(state["steps"]) > steps_before
    outcomes = [run["outcome"] for run in smoke_runs(cfg)]
    assert "interrupted" in outcomes or "started" not in outcomes  # the cut run was cleaned up
    assert "started" not in outcomes


def test_a_blocker_verified_after_an_upgrade_finds_its_fix_by_itself(
    tmp_path, fake_github, monkeypatch
):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 4)]
    kw = dict(extra="[bisect]\nauto = true\n")
    args = ["--fixed-from", "v0.1.2"]
    cfg = write_config(tmp_path, fake_github, tags, args, image_tag="v0.1.0", **kw)
    assert run_cli("smoke", "fake", "--config", str(cfg)).exit_code == 1  # Marlin crash
    assert run_cli("check-now", "--config", str(cfg)).exit_code == 0  # marlin-pad reproduces
    write_config(tmp_path, fake_github, tags, args, image_tag="v0.1.3", **kw)
    assert run_cli("smoke", "fake", "--config", str(cfg)).exit_code == 0
    for _ in range(5):  # verified: a find-fix bisect starts, one step per cycle
        assert run_cli("check-now", "--config", str(cfg)).exit_code == 0
    store = Store(load_config(cfg).db_path)
    try:
        (state,) = store.bisects()
        assert state["mode"] == "find-fix" and (state["bad"], state["good"]) == ("v0.1.0", "v0.1.3")
        assert "blocker marlin-pad went verified" in state["message"] or state["status"] == "done"
        assert state["status"] == "done", state["message"]
        rep = state["report"]
        assert rep["after_word"] == "first fixed" and rep["after"]["build"] == f"{IMAGE}:v0.1.2"
        assert store.statuses()["blocker:marlin-pad"]["status"] == "verified"
    finally:
        store.close()


def test_smoke_build_runs_another_build_and_never_becomes_the_verdict(
    tmp_path, fake_github, monkeypatch
):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 4)]
    cfg = write_config(tmp_path, fake_github, tags, ["--bad-from", "v0.1.3"])  # runs v0.1.3
    r = run_cli("smoke", "fake", "--build", f"{IMAGE}:v0.1.1", "--json", "--config", str(cfg))
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["engine_version"] == "0.1.1" and doc["bisect"] == {"build": f"{IMAGE}:v0.1.1"}
    store = Store(load_config(cfg).db_path)
    try:
        assert store.evaluation_runs() == []
    finally:
        store.close()


def test_an_automatic_bisect_that_cannot_name_its_builds_says_so(
    tmp_path, fake_github, monkeypatch
):
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 4)]
    page = '[[page]]\nid = "guide"\ntitle = "The guide"\noutput = "GUIDE.md"\nrecipes = ["fake"]\n'
    kw = dict(extra=page + "[bisect]\nauto = true\n", blockers="[]")
    args = ["--bad-from", "latest", "--builds", "v0.1.0,latest"]
    cfg = write_config(tmp_path, fake_github, tags, args, image_tag="v0.1.0", **kw)
    assert run_cli("smoke", "fake", "--config", str(cfg)).exit_code == 0
    assert run_cli("check-now", "--config", str(cfg)).exit_code == 0
    write_config(tmp_path, fake_github, tags, args, image_tag="latest", **kw)  # no such tag
    assert run_cli("smoke", "fake", "--config", str(cfg)).exit_code == 1
    assert run_cli("check-now", "--config", str(cfg)).exit_code == 0
    store = Store(load_config(cfg).db_path)
    try:
        assert store.bisects() == []
        (event,) = [e for e in store.events() if e["kind"] == "bisect"]
        assert event["new"] == "not-started" and "page guide regressed" in event["message"]
        assert "name no build watcher can find among sgl-project/sglang's tags" in event["message"]
    finally:
        store.close()


def test_a_registry_that_refuses_an_anonymous_read_is_asked_through_docker(
    tmp_path, fake_github, monkeypatch, registry
):
    """A private image: the registry's token realm is refused, so docker's own login is used."""
    setup(monkeypatch, tmp_path)
    tags = [r["tag"] for r in seed_releases(fake_github, 4)]
    registry.realm = "http://registry.example/token"  # plain http off loopback: refused
    cfg = write_config(tmp_path, fake_github, tags, [])
    r, state = bisect_json(cfg, "fake", "--good", "v0.1.0", "--bad", "v0.1.3", "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert all(p["digest"].startswith("sha256:") and not p["gone"] for p in state["points"])
    inspected = [json.loads(c) for c in docker_calls(tmp_path) if '"manifest"' in c]
    assert sorted(c[-1] for c in inspected) == sorted(f"{IMAGE}:{t}" for t in tags)
