"""The sticky comment as a dashboard: ticks and `/watcher` comments, judged, acted on, cleared.

Against the fake GitHub through PyGithub, as notify runs for real. A tick is made with a PATCH of
the comment, the only way GitHub offers; its REST API does not say who made it.
"""

from __future__ import annotations

import json

import pytest
from kits.notifykit import BOT, CONFIG, DOCS, ISSUE, T0, FakeClock, RecordingPacer, ours, tick
from kits.watchtoml import load_watch

from watcher.github.comments import Comment
from watcher.loop.cycle import run_cycle
from watcher.notify.plan import Ask, command_ask, judge_ask, status_marker, ticked_asks
from watcher.store.db import Store


@pytest.fixture
def cfg(tmp_path):
    return load_watch(tmp_path, CONFIG + "dashboard = true\n")


def cycle(cfg, minutes):
    pacer = RecordingPacer(FakeClock())
    return run_cycle(cfg, now=T0.replace(minute=minutes), notify_kw={"pacer": pacer}, no_smoke=True)


def store_of(cfg):
    return Store(cfg.db_path)


def test_a_tick_is_acted_on_next_cycle_then_cleared_with_a_line(gh, cfg):
    cycle(cfg, 0)
    (sticky,) = ours(gh, status_marker("eng"))
    assert (
        "- [ ] Run the smoke test of r1 now (`r1`) <!-- watcher:ask run-smoke=r1 -->"
        in (sticky["body"])
    )
    assert "<!-- watcher:ask snooze=fix-pr -->" in sticky["body"]
    tick(gh, "watcher:ask run-smoke=r1")
    tick(gh, "watcher:ask snooze=fix-pr")

    report = cycle(cfg, 10)
    assert report.notify["errors"] == []
    assert sorted(report.notify["asks"]) == ["run-smoke r1 by a tick", "snooze fix-pr by a tick"]
    (after,) = ours(gh, status_marker("eng"))
    assert "[x]" not in after["body"]  # cleared
    assert (
        "a maintainer (a tick in this comment) asked to run the smoke test of r1: queued"
        in (after["body"])
    )
    assert (
        "asked to snooze the loader fix for 14 days: done; quiet until 2026-12-14"
        in (after["body"])
    )
    s = store_of(cfg)
    try:
        trigger = s.triggers()["r1"]
        assert trigger["state"] == "waiting"
        assert trigger["reasons"] == ["asked by a maintainer on the tracking issue"]
        assert json.loads(s.notify_get("snoozes")) == {"fix-pr": "2026-12-14"}
    finally:
        s.close()
    # The next cycle sees the snooze in effect, and nothing is acted on twice.
    report = cycle(cfg, 20)
    assert report.notify["asks"] == []
    fix = next(i for i in report.status["items"] if i["id"] == "fix-pr")
    assert fix["snoozed_until"] == "2026-12-14"


def test_a_command_by_a_writer_is_acted_on_anyone_elses_is_ignored(gh, cfg):
    gh.add_comment(DOCS, ISSUE, body="/watcher run-smoke r1", user="old-timer")
    cycle(cfg, 0)  # the first read sets the mark: that older command is history
    gh.set_permission(DOCS, "alice", "write")
    gh.set_permission(DOCS, "mallory", "read")
    gh.add_comment(DOCS, ISSUE, body="please\n/watcher run-smoke r1", user="mallory")
    gh.add_comment(DOCS, ISSUE, body="/watcher recheck", user="alice")
    gh.reset_requests()
    report = cycle(cfg, 10)
    assert report.notify["errors"] == []
    asked = [r.path for r in gh.requests if r.path.endswith("/permission")]
    assert sorted(asked) == [
        f"/repos/{DOCS}/collaborators/alice/permission",
        f"/repos/{DOCS}/collaborators/mallory/permission",
    ]
    (sticky,) = ours(gh, status_marker("eng"))
    body = sticky["body"]
    # mentions watcher posts are inert (inline code, no invisible character): nobody gets pinged
    assert (
        "`@mallory` asked to run the smoke test of r1: ignored — `@mallory` has read access" in body
    )
    assert "`@alice` asked to re-check every item: the next check reads every item afresh" in body
    assert "old-timer" not in body
    s = store_of(cfg)
    try:
        assert s.triggers() == {}  # mallory's ask did nothing
        assert s.notify_get("recheck")
    finally:
        s.close()
    # The asked re-check: every read goes out without If-None-Match, once.
    gh.reset_requests()
    cycle(cfg, 20)
    reads = [r for r in gh.requests if r.method == "GET" and r.path.startswith("/repos/up/")]
    assert reads and not any("if-none-match" in r.headers for r in reads)
    gh.reset_requests()
    cycle(cfg, 30)
    reads = [r for r in gh.requests if r.method == "GET" and r.path.startswith("/repos/up/")]
    assert reads and all("if-none-match" in r.headers for r in reads)


def test_asks_are_parsed_and_judged_purely():
    body = (
        "- [x] Run the smoke test of r1 now <!-- watcher:ask run-smoke=r1 -->\n"
        "- [ ] Snooze x <!-- watcher:ask snooze=fix-pr -->\n"
        "- [X] Re-check <!-- watcher:ask recheck= -->\n"
        "quoted: - [x] <!-- watcher:ask run-smoke=r9 -->\n"
    )
    assert ticked_asks(body) == [Ask("run-smoke", "r1", None), Ask("recheck", "", None)]
    assert command_ask(Comment(9, "bob", "/watcher snooze fix-pr")) == Ask(
        "snooze", "fix-pr", "bob", 9
    )
    assert command_ask(Comment(9, "bob", "I said /watcher recheck")) is None
    from pathlib import Path

    from watcher.config.load import parse_config

    cfg = parse_config(CONFIG, Path("watch.toml"))
    assert judge_ask(cfg, Ask("run-smoke", "r1", None), None) is None
    assert judge_ask(cfg, Ask("run-smoke", "nope", None), None) == "no recipe 'nope'"
    assert judge_ask(cfg, Ask("snooze", "fix-pr", "bob"), "triage").startswith("@bob has triage")
    assert judge_ask(cfg, Ask("snooze", "fix-pr", "bob"), "maintain") is None
    assert BOT == "watcher-bot"
