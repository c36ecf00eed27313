"""Free quiet cycles on a moving GitHub: heads by compare, items by the events feed, the sweep.

Against the fake GitHub's moving-repository mode (`churn`: stars, and pushes to a file nobody
watches between cycles), a quiet cycle costs at most one answer of 200 per repository whose head
moved (the compare that learns it) and one per events feed that moved; every other request is a
304 or is not made at all.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from watcher.config.load import parse_config
from watcher.fakes.github import FakeGitHub
from watcher.loop.cycle import run_cycle
from watcher.store.db import Store

CODE = "o/code"
ISSUES = "o/issues"
KERNEL = "csrc/marlin/kernel.cu"


def seed(gh: FakeGitHub, n_issues: int = 3) -> None:
    gh.add_commit(
        CODE,
        message="initial",
        date="2026-01-01T00:00:00Z",
        contents={KERNEL: "int tile_n = 64;\n", "fla/ops/kda/x.py": "x = 1\n", "README.md": "r"},
    )
    gh.add_commit(
        CODE,
        message="kda: fix rollback",
        date="2026-01-02T00:00:00Z",
        contents={"fla/ops/kda/x.py": "x = 2\n"},
    )
    gh.add_release(CODE, "v1.0", published_at="2026-01-03T00:00:00Z")
    gh.add_pull(
        CODE,
        5,
        title="the fix",
        merged=True,
        merged_at="2026-01-02T00:00:00Z",
        merge_commit_sha=gh._repo(CODE).git.head()["sha"],
    )
    for n in range(1, n_issues + 1):
        gh.add_issue(ISSUES, n, title=f"issue {n}")


def config(tmp_path: Path, gh: FakeGitHub, n_issues: int = 3, every: int = 10):
    items = [
        f'[[item]]\nid = "issue-{n}"\nrepo = "{ISSUES}"\nkind = "issue"\nnumber = {n}\n'
        for n in range(1, n_issues + 1)
    ]
    items += [
        f'[[item]]\nid = "fix"\nrepo = "{CODE}"\nkind = "pull"\nnumber = 5\n',
        f'[[item]]\nid = "rel"\nrepo = "{CODE}"\nkind = "releases"\n',
        f'[[item]]\nid = "kda"\nrepo = "{CODE}"\nkind = "commits"\npaths = ["fla/ops/kda/"]\n'
        'pattern = "(?i)\\\\brollback\\\\b"\n',
        f'[[item]]\nid = "guard"\nrepo = "{CODE}"\nkind = "code"\npaths = ["{KERNEL}"]\n'
        'present = ["tile_n = 64"]\n',
    ]
    text = (
        f'[watcher]\ngithub_api_url = "{gh.url}"\ndata_dir = "{tmp_path / "data"}"\n'
        f'site_dir = "{tmp_path / "site"}"\nfull_read_every = {every}\n' + "".join(items)
    )
    path = tmp_path / "watch.toml"
    path.write_text(text)
    return parse_config(text, path)


@pytest.fixture
def gh(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    with FakeGitHub() as fake:
        yield fake


def spent(gh: FakeGitHub) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for r in gh.requests:
        out.setdefault(r.status, []).append(r.path)
    return out


def states(cfg) -> dict[str, str]:
    store = Store(cfg.db_path)
    try:
        return {k: v["state"] for k, v in store.items().items()}
    finally:
        store.close()


def test_a_quiet_cycle_on_a_moving_github_costs_only_the_reads_that_learn_it(gh, tmp_path):
    seed(gh)
    cfg = config(tmp_path, gh)
    run_cycle(cfg)
    run_cycle(cfg)  # the second cycle learns every ETag the first one primed
    before = states(cfg)
    assert before["guard"] == "present" and before["kda"] == "matched"
    gh.churn(CODE, pushes=2, stars=3)
    gh.churn(ISSUES, pushes=1, stars=1)
    gh.reset_requests()
    report = run_cycle(cfg)
    assert report.item_errors == {} and report.changes == 0
    got = spent(gh)
    assert set(got) <= {200, 304}, got
    ok = sorted(got.get(200, []))
    # one compare per repository whose head moved, and each events feed that moved (a push, a
    # star): the reads that learn it. ISSUES's head is not watched, so it is never compared.
    assert [p.split("/compare/")[0] for p in ok if "/compare/" in p] == [f"/repos/{CODE}"]
    assert sorted(p for p in ok if "/compare/" not in p) == sorted(
        [f"/repos/{CODE}/events", f"/repos/{ISSUES}/events"]
    )
    # nothing else was asked for at all: not the repository, tree, file, commit list or items
    asked = {p for ps in got.values() for p in ps}
    assert not any(p in asked for p in (f"/repos/{CODE}", f"/repos/{ISSUES}"))
    assert not any("/git/trees/" in p or "/contents/" in p or p.endswith("/commits") for p in asked)
    assert not any(re.search(r"/(issues|pulls)/\d", p) for p in asked)
    assert states(cfg) == before
    # and with nothing pushed at all, the next cycle is all 304s
    gh.reset_requests()
    run_cycle(cfg)
    assert set(spent(gh)) == {304}


def test_a_change_on_a_watched_path_is_read_in_the_same_cycle(gh, tmp_path):
    seed(gh)
    cfg = config(tmp_path, gh)
    run_cycle(cfg)
    run_cycle(cfg)
    gh.churn(CODE)
    gh.add_commit(
        CODE,
        message="marlin: pad tile",
        date="2026-02-01T00:00:00Z",
        contents={KERNEL: "int tile_n = 128;\n"},
    )
    gh.churn(CODE)
    run_cycle(cfg)
    assert states(cfg)["guard"] == "absent"
    gh.add_commit(
        CODE,
        message="kda: another rollback fix",
        date="2026-02-02T00:00:00Z",
        contents={"fla/ops/kda/y.py": "y = 1\n"},
    )
    report = run_cycle(cfg)
    assert report.item_errors == {}
    store = Store(cfg.db_path)
    try:
        obs = store.items()["kda"]
    finally:
        store.close()
    assert "another rollback fix" in (obs.get("title") or "")


def test_an_event_names_the_item_to_read_the_others_come_from_the_cache(gh, tmp_path):
    seed(gh, n_issues=5)
    cfg = config(tmp_path, gh, n_issues=5, every=1000)  # no item's sweep turn in these cycles
    run_cycle(cfg)
    run_cycle(cfg)
    gh.update(ISSUES, 3, state="closed")
    gh.reset_requests()
    run_cycle(cfg)
    assert states(cfg)["issue-3"] == "completed"
    asked = [r.path for r in gh.requests if r.path.startswith(f"/repos/{ISSUES}/issues/")]
    assert f"/repos/{ISSUES}/issues/3" in asked  # (and its timeline): no other issue asked
    assert all(p.startswith(f"/repos/{ISSUES}/issues/3") for p in asked), asked


def test_every_item_gets_its_own_read_within_full_read_every_cycles(gh, tmp_path):
    seed(gh, n_issues=6)
    cfg = config(tmp_path, gh, n_issues=6, every=3)
    run_cycle(cfg)
    gh.reset_requests()
    for _ in range(3):
        run_cycle(cfg)
    asked = {r.path for r in gh.requests}
    for n in range(1, 7):
        assert f"/repos/{ISSUES}/issues/{n}" in asked, n
    # but not every item every cycle
    per_cycle = [r.path for r in gh.requests if r.path.startswith(f"/repos/{ISSUES}/issues/")]
    assert len(per_cycle) < 3 * 6


def test_a_feed_that_overflowed_reads_every_item(gh, tmp_path):
    seed(gh, n_issues=4)
    cfg = config(tmp_path, gh, n_issues=4)
    run_cycle(cfg)
    run_cycle(cfg)
    gh.churn(ISSUES, pushes=0, stars=320)  # more than the window of 300 events
    gh.reset_requests()
    run_cycle(cfg)
    asked = {r.path for r in gh.requests}
    assert all(f"/repos/{ISSUES}/issues/{n}" in asked for n in range(1, 5))


def test_release_containment_is_remembered_once_found(gh, tmp_path):
    seed(gh)
    cfg = config(tmp_path, gh, every=1)  # every item read every cycle: only the memo saves
    run_cycle(cfg)
    store = Store(cfg.db_path)
    try:
        assert store.items()["fix"]["in_release"] == "v1.0"
    finally:
        store.close()
    gh.reset_requests()
    run_cycle(cfg)
    assert not [r.path for r in gh.requests if "/compare/v" in r.path]


def test_the_repository_object_is_read_once_and_again_when_its_branch_is_gone(gh, tmp_path):
    seed(gh)
    cfg = config(tmp_path, gh)
    for _ in range(3):
        run_cycle(cfg)
        gh.churn(CODE)
    repo_reads = [r for r in gh.requests if r.path == f"/repos/{CODE}"]
    assert len(repo_reads) == 1
    gh.set_default_branch(CODE, "trunk")
    with gh._lock:
        del gh._repo(CODE).git.branches["main"]
    gh.reset_requests()
    report = run_cycle(cfg)
    assert report.item_errors == {}
    assert [r.status for r in gh.requests if r.path == f"/repos/{CODE}"] == [200]
    store = Store(cfg.db_path)
    try:
        assert "trunk" in store.items()["guard"]["title"]
    finally:
        store.close()


def test_the_feed_is_not_asked_again_before_its_poll_interval(gh, tmp_path):
    seed(gh)
    gh.events_poll_interval = 3600
    cfg = config(tmp_path, gh)
    run_cycle(cfg)
    gh.reset_requests()
    report = run_cycle(cfg)
    assert not [r for r in gh.requests if r.path.endswith("/events")]
    assert report.stats["poll_interval"] is None  # nothing asked, nothing told


def test_the_sweep_moves_on_with_the_clock_where_the_database_is_not_saved():
    """On Actions the database is committed only when something changed (or every 6 h): the
    counter read back is the committed one, yet each run still takes the next sweep turn."""
    from watcher.github.client import GitHubClient
    from watcher.poll.events_feed import EventsFeed

    with GitHubClient("http://127.0.0.1:9", token="t") as client:
        EventsFeed(client, 10, interval=300, clock=lambda: 3000.0)
        committed = dict(client.etag_updates)
    turns = []
    for run in (1, 2, 3):  # each run starts from the committed database, 5 min later
        with GitHubClient("http://127.0.0.1:9", token="t", etags=committed) as client:
            now = 3000.0 + 300 * run
            turns.append(EventsFeed(client, 10, interval=300, clock=lambda now=now: now).cycle)
    assert turns == [2, 3, 4]
    with GitHubClient("http://127.0.0.1:9", token="t") as client:  # serve: saved every cycle
        cycles = [EventsFeed(client, 10, interval=300, clock=lambda: 5.0).cycle for _ in "abc"]
    assert cycles == [1, 2, 3]


def test_a_closed_unmerged_pull_is_read_again_only_when_a_pull_changes(gh, tmp_path):
    """Issue 33, item 9: a closed unmerged pull whose superseding PR can only come from its own
    repository is not re-read on a quiet cycle; a new PR there (a cross-reference) reads it."""
    seed(gh, n_issues=1)
    gh.add_pull(CODE, 7, title="pad sub-tile n", state="closed")
    config(tmp_path, gh, n_issues=1, every=1000)  # writes watch.toml: one more item below
    text = (
        (tmp_path / "watch.toml")
        .read_text()
        .replace(
            'id = "fix"',
            'id = "closed"\nrepo = "o/code"\nkind = "pull"\nnumber = 7\n[[item]]\nid = "fix"',
        )
    )
    (tmp_path / "watch.toml").write_text(text)
    cfg = parse_config(text, tmp_path / "watch.toml")
    run_cycle(cfg)
    run_cycle(cfg)
    gh.churn(CODE, pushes=1, stars=1)  # the repository moves, no pull request does
    gh.reset_requests()
    run_cycle(cfg)
    assert not [r.path for r in gh.requests if r.path.startswith(f"/repos/{CODE}/pulls/7")]
    assert not [r.path for r in gh.requests if r.path.startswith(f"/repos/{CODE}/issues/7")]
    gh.add_pull(CODE, 8, title="pad sub-tile n (redo)", merged=True)
    gh.add_cross_reference(CODE, 7, source_repo=CODE, source_number=8)
    gh.reset_requests()
    run_cycle(cfg)
    assert f"/repos/{CODE}/pulls/7" in {r.path for r in gh.requests}
    store = Store(cfg.db_path)
    try:
        assert store.items()["closed"]["superseded_by"] == 8
    finally:
        store.close()


def test_a_busy_branchs_compare_stays_short_and_is_stored_once(gh, tmp_path):
    """Issue 33, item 12 (part): pushes to unwatched files move the base forward once the quiet
    range is long, so the compare watcher re-reads and stores does not grow with every push."""
    import json

    from watcher.poll.heads import MOVE_BASE_AFTER

    seed(gh)
    cfg = config(tmp_path, gh)
    run_cycle(cfg)
    longest = 0
    for _ in range(12):
        gh.churn(CODE, pushes=5, stars=1)
        run_cycle(cfg)
        store = Store(cfg.db_path)
        try:
            kept = {
                url: json.loads(e["body"])
                for url, e in store.etags().items()
                if "/compare/" in url and e.get("body")
            }
        finally:
            store.close()
        heads = [
            b for url, b in kept.items() if re.search(rf"/repos/{CODE}/compare/\w+\.\.\.main$", url)
        ]
        # the old ranges' answers are dropped (none right after the base moved: the new range
        # is first asked on the next cycle)
        assert len(heads) <= 1, sorted(kept)
        longest = max([longest, *(b["total_commits"] for b in heads)])
    assert 10 <= longest < MOVE_BASE_AFTER  # 60 pushes, never a range of 60
    assert states(cfg)["guard"] == "present"
