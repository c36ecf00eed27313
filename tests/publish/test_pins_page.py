"""The page says "fixed upstream, not in our pin" until the pin moves past the fix, and "in our
pin" after; a cycle reads GitHub (tags, compare) and the registry (WATCHER_REGISTRY_MAP) for it."""

from __future__ import annotations

import json
from datetime import timedelta

from kits.pinkit import VLLM, marlin_watch
from kits.triggerkit import NOW
from kits.watchtoml import write_watch

from watcher.config.load import load_config
from watcher.fakes.registry import FakeRegistry
from watcher.github.client import GitHubClient
from watcher.loop.cycle import run_cycle


def _watch(tmp_path, gh, image: str, extra: str = ""):
    command = ["docker", "run", "--rm", image, "--model", "m"]
    head = f'[watcher]\ngithub_api_url = "{gh.url}"\ndata_dir = "data"\nsite_dir = "site"\n'
    write_watch(tmp_path, marlin_watch(command, head) + extra)
    return load_config(tmp_path / "watch.toml")


def _page(tmp_path) -> str:
    """The page's text (references are code spans, so GitHub does not link them elsewhere)."""
    return (tmp_path / "out" / "VLLM.md").read_text(encoding="utf-8")


def _sticky(cfg) -> str:
    """The sticky status comment's body, as notify would post it."""
    from watcher.judge.evaluate import evaluate
    from watcher.notify.plan import Bodies
    from watcher.store.db import Store

    store = Store(cfg.db_path)
    try:
        ev = evaluate(
            cfg, store.items(), store.evaluation_runs(), store.statuses(), NOW, store.pins()
        )
        bodies = Bodies(cfg, ev, store.items(), [], store.statuses(), pins=store.pins())
        return bodies.status(cfg.pages[0])
    finally:
        store.close()


def _page_status(tmp_path) -> tuple[str, str]:
    """The page's status and reason as status.json publishes them."""
    doc = json.loads((tmp_path / "site" / "status.json").read_text(encoding="utf-8"))
    page = doc["pages"][0]
    return page["status"], page["reason"]


def _started(cfg) -> list[str]:
    """The recipes a waiting trigger starts now (a runner that records and runs nothing)."""
    from watcher.core.clock import iso
    from watcher.judge.evaluate import evaluate
    from watcher.smoke.trigger import run_triggers
    from watcher.store.db import Store

    started = []

    def runner(cfg, recipe, run_id):
        started.append(recipe.id)
        return {"run_id": run_id, "recipe": recipe.id, "outcome": "skipped", "reason": "no GPU"}

    store = Store(cfg.db_path)
    try:
        store.put_trigger("vllm-tp2", state="waiting", reasons=["asked"], since=iso(NOW))
        ev = evaluate(cfg, store.items(), store.evaluation_runs(), store.statuses(), NOW)
        run_triggers(cfg, store, ev, [], NOW, cycle_id=None, at=iso(NOW), runner=runner)
        note = store.triggers()["vllm-tp2"]["note"] or ""
        if not started:
            assert note == (
                "not ready to test on its pin vllm/vllm-openai:v0.23.1: the fix for marlin-pad is"
                " upstream but not in it; v0.24.0 would carry it"
            )
    finally:
        store.close()
    return started


def _seed(gh, merged: bool = True) -> str:
    """v0.23.1 before the Marlin fix (vllm#45295, merged 2026-06-30), v0.24.0 after it; the
    fix's sha (`merged=False`: the pull is still open)."""
    base = gh.add_commit(VLLM, message="base", date="2026-06-01T00:00:00Z")
    gh.add_tag(VLLM, "v0.23.1", base["sha"])
    fix = gh.add_commit(VLLM, message="Fix Marlin pad (#45295)", date="2026-06-30T00:00:00Z")
    gh.add_pull(
        VLLM,
        45295,
        title="[Kernel] Marlin pad",
        merged=merged,
        merge_commit_sha=fix["sha"] if merged else None,
        merged_at="2026-06-30T10:00:00Z" if merged else None,
    )
    rel = gh.add_commit(VLLM, message="v0.24.0", date="2026-07-02T00:00:00Z")
    gh.add_tag(VLLM, "v0.24.0", rel["sha"])
    gh.add_release(VLLM, "v0.23.1", published_at="2026-06-01T00:00:00Z")
    gh.add_release(VLLM, "v0.24.0", published_at="2026-07-02T00:00:00Z")
    return fix["sha"]


def test_page_says_not_in_our_pin_until_the_pin_moves_past_the_fix(
    tmp_path, fake_github, monkeypatch
):
    gh = fake_github
    _seed(gh)
    with FakeRegistry() as reg:
        reg.add_image("vllm/vllm-openai", "v0.23.1")
        reg.add_image("vllm/vllm-openai", "v0.24.0")
        monkeypatch.setenv("WATCHER_REGISTRY_MAP", f"docker.io={reg.url}")
        cfg = _watch(tmp_path, gh, "vllm/vllm-openai:v0.23.1")
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(cfg, now=NOW, client=client, no_smoke=True)
        page = _page(tmp_path)
        assert (
            "Fixed upstream in `vllm#45295` (2026-06-30); not in our pin v0.23.1; first in v0.24.0."
            in page
        )
        proposed = (
            "Not ready to test on its pin v0.23.1; bump proposed: v0.23.1 → v0.24.0 (brings"
            " `vllm#45295`); run: watcher bump vllm-tp2."
        )
        assert proposed in page and page.count("bump proposed") == 1  # said once, not twice
        assert "would carry" not in page
        assert proposed.split("; ", 1)[1] in _sticky(cfg).replace("\\", "")
        doc = json.loads((tmp_path / "site" / "status.json").read_text(encoding="utf-8"))
        assert doc["pins"]["vllm-tp2"]["proposal"] == {
            "old": "v0.23.1", "new": "v0.24.0", "brings": ["vllm#45295"], "gone": False,
            "gated": False,
            "text": "bump proposed: v0.23.1 → v0.24.0 (brings vllm#45295); run: watcher bump"
            " vllm-tp2",
        }  # fmt: skip
        # every blocker is cleared upstream, but not in the build the recipe runs
        assert _page_status(tmp_path) == (
            "blocked",
            "blocked: vllm-tp2 is not ready to test on its pin (marlin-pad: fixed upstream in"
            " vllm#45295 (2026-06-30); not in our pin v0.23.1; first in v0.24.0)",
        )
        assert "its upstream fixes have landed, not yet in the build it runs" in page
        assert "not in our pin v0.23.1; first in v0.24.0." in _sticky(cfg)
        assert _started(cfg) == []  # a run on v0.23.1 would test a build without the fix

        cfg = _watch(tmp_path, gh, "vllm/vllm-openai:v0.24.0")  # a maintainer bumps the pin
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(cfg, now=NOW + timedelta(minutes=5), client=client, no_smoke=True)
    page = _page(tmp_path)
    assert "Fixed upstream in `vllm#45295` (2026-06-30); in our pin v0.24.0." in page
    assert "not in our pin" not in page and "Not ready to test on its pin" not in page
    assert _page_status(tmp_path)[0] == "ready-to-test"
    assert _started(cfg) == ["vllm-tp2"]


def test_a_fix_merging_this_cycle_never_flips_the_page_to_ready_and_back(
    tmp_path, fake_github, monkeypatch
):
    """The pins are compared after the judge, so the pages' transitions wait for them: no
    `ready-to-test` event (and no comment) for a page its pin holds."""
    from watcher.store.db import Store

    gh = fake_github
    sha = _seed(gh, merged=False)
    with FakeRegistry() as reg:
        reg.add_image("vllm/vllm-openai", "v0.23.1")
        monkeypatch.setenv("WATCHER_REGISTRY_MAP", f"docker.io={reg.url}")
        cfg = _watch(tmp_path, gh, "vllm/vllm-openai:v0.23.1")
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(cfg, now=NOW, client=client, no_smoke=True)
        assert _page_status(tmp_path)[0] == "blocked"
        gh.update(VLLM, 45295, merged=True, merge_commit_sha=sha, merged_at="2026-06-30T10:00:00Z")
        with GitHubClient(gh.url, token="test-token") as client:
            report = run_cycle(cfg, now=NOW + timedelta(minutes=5), client=client, no_smoke=True)
    assert _page_status(tmp_path)[0] == "blocked"
    assert "not in our pin v0.23.1" in _page_status(tmp_path)[1]
    store = Store(cfg.db_path)
    try:
        pages = [(e["old"], e["new"]) for e in store.events() if e["kind"] == "page"]
    finally:
        store.close()
    assert pages == [(None, "blocked")]  # the first sighting only
    assert [e for e in report.events if e["kind"] == "blocker"]  # the blocker did move


TRACKER = """# Upstream tracker

## vLLM

| Issue / PR | Status | Why it matters | Workaround |
|---|---|---|---|
| [vllm#45295](https://github.com/vllm-project/vllm/pull/45295) | 🟢 Landed | Marlin pads int4 weights. | `patches/marlin/` |
"""


def _tracker_row(tmp_path) -> str:
    text = (tmp_path / "docs" / "UPSTREAM.audit.md").read_text(encoding="utf-8")
    return next(line for line in text.splitlines() if line.startswith("| [vllm#45295]"))


def test_the_tracker_says_landed_only_once_the_fix_is_in_our_pin(
    tmp_path, fake_github, monkeypatch
):
    """The audited tracker's 🟢 needs the fix in the pin of every recipe of that engine."""
    gh = fake_github
    _seed(gh)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "UPSTREAM.md").write_text(TRACKER, encoding="utf-8")
    tracker = '\n[tracker]\nsource = "docs/UPSTREAM.md"\n'
    with FakeRegistry() as reg:
        reg.add_image("vllm/vllm-openai", "v0.23.1")
        reg.add_image("vllm/vllm-openai", "v0.24.0")
        monkeypatch.setenv("WATCHER_REGISTRY_MAP", f"docker.io={reg.url}")
        cfg = _watch(tmp_path, gh, "vllm/vllm-openai:v0.23.1", tracker)
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(cfg, now=NOW, client=client, no_smoke=True)
        row = _tracker_row(tmp_path)
        assert "⚠️ **disagrees**: tracker 🟢, GitHub 🔵" in row  # merged, not in v0.23.1
        assert "· not in our pin ·" in row

        cfg = _watch(tmp_path, gh, "vllm/vllm-openai:v0.24.0", tracker)
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(cfg, now=NOW + timedelta(minutes=5), client=client, no_smoke=True)
    row = _tracker_row(tmp_path)
    assert "⚠️" not in row and "disagrees" not in row
    assert "· in our pin ·" in row and row.split("|")[5].strip().startswith("🟢")


def test_a_tracker_row_that_is_no_blockers_item_is_placed_against_the_pin_too(
    tmp_path, fake_github, monkeypatch
):
    """The Marlin fix is a tracker row only (no recipe names its blocker): its compare with the
    pin is still read, once for the recipes that share the pin, so 🟢 is held against it."""
    gh = fake_github
    fix = _seed(gh)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "UPSTREAM.md").write_text(TRACKER, encoding="utf-8")
    second = '\n[[recipe]]\nid = "vllm-tp1"\nengine = "vllm"\ncommand = {}\n'
    tracker = '\n[tracker]\nsource = "docs/UPSTREAM.md"\n'

    def watch(image: str):
        command = json.dumps(["docker", "run", "--rm", image, "--model", "m"])
        head = f'[watcher]\ngithub_api_url = "{gh.url}"\ndata_dir = "data"\nsite_dir = "site"\n'
        text = marlin_watch(json.loads(command), head).replace('blockers = ["marlin-pad"]\n', "", 1)
        write_watch(tmp_path, text + second.format(command) + tracker)
        cfg = load_config(tmp_path / "watch.toml")
        assert not any(r.blockers for r in cfg.recipes)
        return cfg

    with FakeRegistry() as reg:
        reg.add_image("vllm/vllm-openai", "v0.23.1")
        reg.add_image("vllm/vllm-openai", "v0.24.0")
        monkeypatch.setenv("WATCHER_REGISTRY_MAP", f"docker.io={reg.url}")
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(watch("vllm/vllm-openai:v0.23.1"), now=NOW, client=client, no_smoke=True)
        row = _tracker_row(tmp_path)
        assert "⚠️ **disagrees**: tracker 🟢, GitHub 🔵" in row and "· not in our pin ·" in row
        compares = [r for r in gh.requests if f"/compare/{fix}..." in r.path]
        assert len(compares) == 1  # two recipes, one pin: one compare of the fix with it
        page = (tmp_path / "out" / "VLLM.md").read_text(encoding="utf-8")
        assert "not in our pin" not in page  # the page's own words stay about its blockers
        with GitHubClient(gh.url, token="test-token") as client:
            cfg = watch("vllm/vllm-openai:v0.24.0")
            run_cycle(cfg, now=NOW + timedelta(minutes=5), client=client, no_smoke=True)
            gh.requests.clear()
            run_cycle(cfg, now=NOW + timedelta(minutes=10), client=client, no_smoke=True)
        assert not [r for r in gh.requests if f"/compare/{fix}..." in r.path]  # asked once, kept
    row = _tracker_row(tmp_path)
    assert "⚠️" not in row and "· in our pin ·" in row
    doc = json.loads((tmp_path / "site" / "status.json").read_text(encoding="utf-8"))
    assert all("tracked" not in v for v in doc["pins"].values())  # status.json's shape is kept


def test_a_gone_pin_names_its_successor_and_the_bump_verdict_reaches_page_comment_and_json(
    tmp_path, fake_github, monkeypatch
):
    """The pin vanishes: the page names the newest live build with the same fixes; `watcher
    bump --dry-run` proposes it; the gate's verdict (set speeds) is on the page, the sticky
    comment, status.json and the matrix's build line after the next cycle."""
    from click.testing import CliRunner

    from watcher.bisect import bump as gate
    from watcher.cli import cli
    from watcher.poll.registry import Registry
    from watcher.smoke.run import base_doc
    from watcher.store.db import Store

    gh = fake_github
    _seed(gh)
    with FakeRegistry() as reg:
        reg.add_image("vllm/vllm-openai", "v0.23.1")
        reg.add_image("vllm/vllm-openai", "v0.24.0")
        monkeypatch.setenv("WATCHER_REGISTRY_MAP", f"docker.io={reg.url}")
        monkeypatch.setenv("GITHUB_TOKEN", "test-token")
        cfg = _watch(tmp_path, gh, "vllm/vllm-openai:v0.23.1")
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(cfg, now=NOW, client=client, no_smoke=True)
        reg.purge("vllm/vllm-openai", "v0.23.1")
        later = NOW + timedelta(hours=25)
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(cfg, now=later, client=client, no_smoke=True)
        gone_page = _page(tmp_path)
        assert (
            "Bump proposed: v0.23.1 → v0.24.0 (its pinned build is gone; v0.24.0 still exists"
            " with the same fixes); run: watcher bump vllm-tp2." in gone_page
        )
        assert gone_page.count("ump proposed") == 1 and "The newest build" not in gone_page
        res = CliRunner().invoke(cli, ["bump", "vllm-tp2", "--config", str(cfg.path), "--dry-run"])
        assert res.exit_code == 0, res.output
        assert "bump v0.23.1 → v0.24.0 (the pinned build is gone)" in res.output

        def launch(cfg, recipe, run_id):  # a quiet rig: both builds at 85 tokens/s
            r = base_doc(recipe, run_id)
            r.outcome, r.reason, r.matches_target = "passed", "passed", True
            r.metrics.decode_samples = [85.0 + 0.1 * (i % 3) for i in range(10)]
            r.metrics.decode_tokens_per_s = 85.0
            return r

        store = Store(cfg.db_path)
        try:
            with GitHubClient(gh.url, token="test-token") as c, Registry() as r:
                prop = gate.propose(cfg, store, cfg.recipe("vllm-tp2"), c, r)
            out = gate.run_gate(cfg, store, cfg.recipe("vllm-tp2"), prop, left=4, launch=launch)
        finally:
            store.close()
        assert out["text"] == (
            "bump ready: v0.23.1 → v0.24.0 decodes at 1.00× (85 vs 85 tokens/s), all checks pass"
        )
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(cfg, now=later + timedelta(minutes=5), client=client, no_smoke=True)
    line = f"Pin-bump gate ({out['at'][:10]}): {out['text']}."
    page = _page(tmp_path)
    assert line in page
    first = page.index("Runs vllm/vllm-openai:v0.23.1 (commit ")  # the build first, readers first
    assert first < page.index("no longer published") < page.index(line)
    assert out["text"] in _sticky(cfg)
    doc = json.loads((tmp_path / "site" / "status.json").read_text(encoding="utf-8"))
    assert doc["pins"]["vllm-tp2"]["bump"]["state"] == "ready"
    assert doc["pins"]["vllm-tp2"]["successor"]["release"] == "v0.24.0"
    explained = CliRunner().invoke(cli, ["explain", "vllm", "--config", str(cfg.path)]).output
    # the gate has judged this very bump: its verdict speaks for it, no second proposal
    assert "bump proposed" not in explained and "ump proposed" not in page
    assert f"pin-bump gate ({out['at'][:10]}): {out['text']}" in explained
    mx = json.loads((tmp_path / "site" / "matrix.json").read_text(encoding="utf-8"))
    assert mx["rows"][0]["pin_line"] == (
        "v0.23.1 · 1 fix not in pin · GONE, next v0.24.0 · bump ready → v0.24.0"
    )
