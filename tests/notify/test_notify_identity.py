"""Who watcher is on the tracking issue, without GET /user (issue 21 item 5), and the token
owner's own `/watcher` commands (item 7).

GitHub answers GET /user with 403 "Resource not accessible by integration" to an installation
token, which is what Actions' GITHUB_TOKEN (the one `init --github` wires up) is; its comments
carry the login `github-actions[bot]`. The fake GitHub refuses /user the same way for a token
whose login ends in [bot].
"""

from __future__ import annotations

import pytest
from kits.notifykit import CONFIG, DOCS, ISSUE, T0, FakeClock, RecordingPacer, tick
from kits.watchtoml import load_watch

from watcher.loop.cycle import run_cycle
from watcher.notify.plan import status_marker

ACTIONS = "github-actions[bot]"


@pytest.fixture
def cfg(tmp_path):
    return load_watch(tmp_path, CONFIG + "dashboard = true\n")


def cycle(cfg, minutes):
    pacer = RecordingPacer(FakeClock())
    return run_cycle(cfg, now=T0.replace(minute=minutes), notify_kw={"pacer": pacer}, no_smoke=True)


def world(gh, monkeypatch, token: str):
    monkeypatch.setenv("GITHUB_API_URL", gh.url)
    monkeypatch.setenv("GITHUB_TOKEN", token)
    gh.add_issue(DOCS, ISSUE, title="SGLang on 3090s: tracking")
    gh.add_pull("up/engine", 5, title="Fix the loader pad")


def stickies(gh, login):
    return [
        c
        for c in gh.comments(DOCS, ISSUE)
        if c["body"].startswith(status_marker("eng")) and c["user"]["login"] == login
    ]


def test_the_actions_token_posts_and_then_edits_its_own_comment(monkeypatch, cfg):
    from watcher.fakes.github import FakeGitHub

    with FakeGitHub(tokens={"gha-token": ACTIONS}) as gh:
        world(gh, monkeypatch, "gha-token")
        report = cycle(cfg, 0)
        assert report.notify["errors"] == [], report.notify
        assert len(stickies(gh, ACTIONS)) == 1
        assert [r.status for r in gh.requests if r.path == "/user"] == [403]
        gh.update("up/engine", 5, merged=True)
        report = cycle(cfg, 30)
        assert report.notify["errors"] == [], report.notify
        (sticky,) = stickies(gh, ACTIONS)  # edited, not posted again
        assert "**ready-to-test**" in sticky["body"]


def test_a_human_quoting_the_marker_is_still_not_ours_under_the_actions_token(monkeypatch, cfg):
    from watcher.fakes.github import FakeGitHub

    with FakeGitHub(tokens={"gha-token": ACTIONS}) as gh:
        world(gh, monkeypatch, "gha-token")
        gh.add_comment(DOCS, ISSUE, body=status_marker("eng") + "\nfake", user="mallory")
        report = cycle(cfg, 0)
        assert report.notify["errors"] == []
        assert len(stickies(gh, ACTIONS)) == 1 and len(stickies(gh, "mallory")) == 1


def test_the_token_owners_own_command_is_acted_on(fake_github, monkeypatch, cfg):
    gh = fake_github
    world(gh, monkeypatch, "test-token")
    cycle(cfg, 0)  # sets the mark
    gh.set_permission(DOCS, "watcher-bot", "admin")
    gh.add_comment(DOCS, ISSUE, body="/watcher recheck", user="watcher-bot")
    report = cycle(cfg, 10)
    assert report.notify["asks"] == ["recheck  by watcher-bot"], report.notify["asks"]


def test_outsiders_cannot_push_a_maintainers_ask_out_of_recent_requests(
    fake_github, monkeypatch, cfg
):
    import json

    from watcher.store.db import Store

    gh = fake_github
    world(gh, monkeypatch, "test-token")
    cycle(cfg, 0)  # sets the mark
    gh.set_permission(DOCS, "alice", "write")
    gh.add_comment(DOCS, ISSUE, body="/watcher recheck", user="alice")
    for n in range(12):
        gh.add_comment(DOCS, ISSUE, body="/watcher run-smoke r1", user=f"drive-by-{n}")
    cycle(cfg, 10)
    store = Store(cfg.db_path)
    try:
        log = json.loads(store.notify_get("ask_log"))
    finally:
        store.close()
    assert any("alice" in line for line in log), log
    assert sum("needs write access" in line for line in log) <= 2, log


def test_a_failed_edit_does_not_turn_one_tick_into_two_runs(fake_github, monkeypatch, cfg):
    from watcher.store.db import Store

    gh = fake_github
    world(gh, monkeypatch, "test-token")
    cycle(cfg, 0)
    tick(gh, "watcher:ask run-smoke=r1")
    gh.fail("PATCH", r"/issues/comments/", status=502, times=-1)  # the tick is never cleared
    first = cycle(cfg, 10)
    second = cycle(cfg, 20)
    assert first.notify["asks"] == ["run-smoke r1 by a tick"]
    assert second.notify["asks"] == []
    store = Store(cfg.db_path)
    try:
        assert store.triggers()["r1"]["reasons"] == ["asked by a maintainer on the tracking issue"]
    finally:
        store.close()
