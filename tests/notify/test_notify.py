"""GitHub comments against the fake GitHub: sticky status comment, one comment per transition.

Every request goes to the fake on 127.0.0.1 (a guard below refuses any other address), through the
real write path: PyGithub, pointed at GITHUB_API_URL.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner
from kits.notifykit import BOT, CONFIG, DOCS, ISSUE, T0, FakeClock, RecordingPacer, cycle, ours

from watcher.cli import cli
from watcher.config.load import load_config
from watcher.judge.evaluate import evaluate
from watcher.loop.cycle import run_cycle
from watcher.notify.plan import GITHUB_BODY_LIMIT, event_marker, status_marker
from watcher.notify.send import PAUSE_AFTER_POST_ENV, run_notify
from watcher.store.db import Store

REPO_ROOT = Path(__file__).resolve().parents[2]


def writes(gh):
    return [r for r in gh.requests if r.method in ("POST", "PATCH", "DELETE")]


def add_run(cfg, run_id, outcome, signature=None, excerpt="", minute=0):
    store = Store(cfg.db_path)
    try:
        store.add_smoke_run(
            {
                "run_id": run_id,
                "recipe": "r1",
                "outcome": outcome,
                "signature": signature,
                "stage_reached": "passed" if outcome == "passed" else "launch",
                "reason": "answered Paris" if outcome == "passed" else "crashed at load",
                "hardware": {"matches_target": True, "gpus": [{"name": "NVIDIA GeForce RTX 3090"}]},
                "started_at": f"2026-11-30T11:{minute:02d}:00Z",
                "finished_at": f"2026-11-30T11:{minute:02d}:30Z",
                "excerpt": excerpt,
            }
        )
    finally:
        store.close()


def test_sticky_created_once_then_edited_only_on_change(gh, cfg):
    clock = FakeClock()
    report, _ = cycle(cfg, clock, 0)
    assert report.notify["errors"] == []
    sticky = ours(gh, status_marker("eng"))
    assert len(sticky) == 1
    body = sticky[0]["body"]
    assert body.startswith(status_marker("eng"))
    assert "**blocked**" in body and "Crash on load" in body and "Fix the loader pad" in body
    assert [(w.method) for w in writes(gh)] == ["POST"]  # the first sighting is not a transition

    # Nothing changed: nothing written, and the comments are not even read.
    gh.reset_requests()
    report, _ = cycle(cfg, clock, 30)
    assert writes(gh) == []
    assert not [r for r in gh.requests if "comments" in r.path or r.path == "/user"]
    assert report.notify["writes"] == 0
    assert [a["what"] for a in report.notify["actions"]] == ["unchanged"]

    # The fix merges: page blocked -> ready-to-test. One event comment, one edit of the sticky.
    gh.update("up/engine", 5, merged=True)
    gh.reset_requests()
    report, pacer = cycle(cfg, clock, 59)
    assert report.notify["errors"] == []
    assert sorted(w.method for w in writes(gh)) == ["PATCH", "POST"]
    sticky_after = ours(gh, status_marker("eng"))
    assert len(sticky_after) == 1 and sticky_after[0]["id"] == sticky[0]["id"]
    assert "**ready-to-test**" in sticky_after[0]["body"]
    events = [c for c in gh.comments(DOCS, ISSUE) if "<!-- watcher:event id=" in c["body"]]
    assert len(events) == 1
    assert "blocked → **ready-to-test**" in events[0]["body"]
    # Writes one at a time, at least a second apart.
    assert len(pacer.write_times) == 2
    assert pacer.write_times[1] - pacer.write_times[0] >= 1.0
    assert 1.0 in clock.sleeps

    # A later cycle with no change writes nothing, and the status document shows the state.
    gh.reset_requests()
    report, _ = cycle(cfg, clock, 59)
    assert writes(gh) == []
    doc = json.loads((cfg.site_dir / "status.json").read_text())
    assert doc["notify"]["events"] == {"pending": 0, "posted": 1, "failed": 0}
    assert doc["notify"]["sticky"][0]["comment_id"] == sticky[0]["id"]


def test_transitions_validated_then_regressed_and_reproduces(gh, cfg):
    clock = FakeClock()
    gh.update("up/engine", 5, merged=True)
    cycle(cfg, clock, 0)  # first sighting: ready-to-test, no event comment
    add_run(cfg, "run-1", "passed", minute=1)
    cycle(cfg, clock, 1)
    add_run(cfg, "run-2", "failed", signature="marlin-tile-n", excerpt="size_n = 96", minute=2)
    report, _ = cycle(cfg, clock, 2)
    assert report.notify["errors"] == []
    bodies = [c["body"] for c in gh.comments(DOCS, ISSUE) if "watcher:event" in c["body"]]
    assert len(bodies) == 3
    assert "ready-to-test → **validated**" in bodies[0]
    texts = "\n".join(bodies[1:])
    assert "validated → **regressed**" in texts
    assert "Crash on load reproduces again" in texts and "was **verified**" in texts
    sticky = ours(gh, status_marker("eng"))
    assert len(sticky) == 1 and "**regressed**" in sticky[0]["body"]
    assert "size_n = 96" in sticky[0]["body"]  # evidence, last


def test_finds_our_comment_on_the_last_of_250(gh, cfg):
    clock = FakeClock()
    cycle(cfg, clock, 0)
    first = ours(gh, status_marker("eng"))[0]
    for i in range(250):
        gh.add_comment(DOCS, ISSUE, body=f"me too {i}", user=f"user{i % 7}")
    # Lose the database: the sticky comment must be found again (every page read), not
    # duplicated, and not edited while its content is the same.
    for p in cfg.data_dir.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()  # data/cache: compiled templates
    gh.reset_requests()
    report, _ = cycle(cfg, clock, 10)
    assert report.notify["errors"] == []
    pages = [r for r in gh.requests if r.method == "GET" and r.path.endswith("/comments")]
    assert len(pages) == 3  # 251 comments, 100 a page
    assert writes(gh) == []
    assert [(a["what"], a["comment_id"]) for a in report.notify["actions"]] == [
        ("unchanged", first["id"])
    ]

    gh.update("up/engine", 5, merged=True)
    gh.reset_requests()
    report, _ = cycle(cfg, clock, 30)
    assert report.notify["errors"] == []
    assert [w.method for w in writes(gh)] == ["PATCH", "POST"]  # the sticky, then the event
    assert writes(gh)[0].path.endswith(f"/issues/comments/{first['id']}")
    assert len(ours(gh, status_marker("eng"))) == 1


def test_a_human_quoting_our_marker_is_not_ours(gh, cfg):
    quote = f"> {status_marker('eng')}\n> the bot says blocked, but I think…"
    human = gh.add_comment(DOCS, ISSUE, body=quote, user="maintainer")
    forged = gh.add_comment(DOCS, ISSUE, body=f"{event_marker(1)}\n{event_marker(2)}", user="x")
    clock = FakeClock()
    report, _ = cycle(cfg, clock, 0)
    assert report.notify["errors"] == []
    comments = {c["id"]: c for c in gh.comments(DOCS, ISSUE)}
    assert comments[human["id"]]["body"] == quote  # never edited
    assert comments[forged["id"]]["body"] == forged["body"]
    assert [w.method for w in writes(gh)] == ["POST"]
    assert len(ours(gh, status_marker("eng"))) == 1
    assert not any(w.path.endswith(str(human["id"])) for w in writes(gh))


def test_another_login_with_our_exact_marker_is_not_ours(gh, cfg):
    """Only the author tells ours apart when someone else's first line is our exact marker."""
    sticky_body = f"{status_marker('eng')}\n### Status: validated (trust me)"
    sticky_forgery = gh.add_comment(DOCS, ISSUE, body=sticky_body, user="mallory")
    clock = FakeClock()
    cycle(cfg, clock, 0)
    comments = {c["id"]: c for c in gh.comments(DOCS, ISSUE)}
    assert comments[sticky_forgery["id"]]["body"] == sticky_body  # never edited
    assert not any(w.path.endswith(str(sticky_forgery["id"])) for w in writes(gh))
    assert len(ours(gh, status_marker("eng"))) == 1  # our own sticky was created

    gh.update("up/engine", 5, merged=True)
    run_cycle(cfg, now=T0.replace(minute=30), notify_kw={"api": _Unreachable()}, no_smoke=True)
    store = Store(cfg.db_path)
    try:
        (pending,) = store.outbox(("pending", "failed"))
    finally:
        store.close()
    event_id = pending["event_id"]
    event_body = f"{event_marker(event_id)}\nforged: already posted"
    event_forgery = gh.add_comment(DOCS, ISSUE, body=event_body, user="mallory")
    gh.reset_requests()
    result = CliRunner().invoke(cli, ["comment", "--config", str(cfg.path)])
    assert result.exit_code == 0, result.output
    assert "recorded as already posted" not in result.output
    (posted,) = ours(gh, event_marker(event_id))
    assert posted["id"] != event_forgery["id"]
    assert {c["id"]: c for c in gh.comments(DOCS, ISSUE)}[event_forgery["id"]]["body"] == event_body
    store = Store(cfg.db_path)
    try:
        row = [r for r in store.outbox() if r["event_id"] == event_id][0]
    finally:
        store.close()
    assert row["state"] == "posted" and row["comment_id"] == posted["id"] and not row["found"]


def test_killed_after_post_then_rerun_posts_exactly_once(gh, cfg, tmp_path):
    """SIGKILL between the POST's answer and the database commit; the rerun must not repost."""
    clock = FakeClock()
    cycle(cfg, clock, 0)
    gh.update("up/engine", 5, merged=True)
    run_cycle(cfg, now=T0.replace(minute=30), notify_kw={"api": _Unreachable()}, no_smoke=True)
    store = Store(cfg.db_path)
    pending = store.outbox(("pending", "failed"))
    store.close()
    assert len(pending) == 1  # the intent is on disk, the comment is not on GitHub
    event_id = pending[0]["event_id"]

    flag = tmp_path / "posted"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), **{PAUSE_AFTER_POST_ENV: str(flag)})
    cmd = [sys.executable, "-m", "watcher", "comment", "--config", str(cfg.path)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not flag.exists() or not flag.read_text():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the POST never happened"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert len(ours(gh, event_marker(event_id))) == 1
    store = Store(cfg.db_path)
    row = [r for r in store.outbox() if r["event_id"] == event_id][0]
    store.close()
    assert row["state"] == "pending" and row["attempts"] == 1  # died before recording the post

    gh.reset_requests()
    result = subprocess.run(
        cmd, env=dict(env, **{PAUSE_AFTER_POST_ENV: ""}), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "recorded as already posted" in result.stdout
    assert len(ours(gh, event_marker(event_id))) == 1
    assert [r for r in gh.requests if r.method == "POST"] == []
    store = Store(cfg.db_path)
    row = [r for r in store.outbox() if r["event_id"] == event_id][0]
    store.close()
    assert row["state"] == "posted" and row["found"] == 1
    assert row["comment_id"] == int(flag.read_text())


class _Unreachable:
    """A CommentAPI whose every call fails like a dropped connection."""

    def _fail(self, *a, **k):
        from watcher.github.comments import CommentError

        raise CommentError("ConnectionError: connection refused")

    login = list_comments = create = edit = _fail


def test_failed_comment_never_fails_the_cycle_and_is_retried(gh, cfg):
    clock = FakeClock()
    cycle(cfg, clock, 0)
    gh.update("up/engine", 5, merged=True)
    gh.fail("POST", r"/issues/7/comments$", status=502, times=1)
    report, _ = cycle(cfg, clock, 30)
    assert report.cycle_id and report.pages["eng"]["status"] == "ready-to-test"
    assert len(report.notify["errors"]) == 1 and "502" in report.notify["errors"][0]
    doc = json.loads((cfg.site_dir / "status.json").read_text())
    assert doc["notify"]["events"]["failed"] == 1
    assert "502" in doc["notify"]["failures"][0]["last_error"]
    assert "502" in doc["notify"]["last_error"]

    report, _ = cycle(cfg, clock, 31)
    assert report.notify["errors"] == []
    assert len([c for c in gh.comments(DOCS, ISSUE) if "watcher:event" in c["body"]]) == 1
    doc = json.loads((cfg.site_dir / "status.json").read_text())
    assert doc["notify"]["events"] == {"pending": 0, "posted": 1, "failed": 0}
    assert doc["notify"]["failures"] == [] and doc["notify"]["last_error"] is None


def test_secondary_rate_limit_retry_after_is_honoured(gh, cfg):
    gh.fail(
        "POST",
        r"/issues/7/comments$",
        status=403,
        headers={"retry-after": "3"},
        body={"message": "You have exceeded a secondary rate limit"},
    )
    clock = FakeClock()
    report, pacer = cycle(cfg, clock, 0)
    assert report.notify["errors"] == []
    posts = [r for r in gh.requests if r.method == "POST"]
    assert [p.status for p in posts] == [403, 201]
    assert 3.0 in clock.sleeps  # waited as GitHub asked before the one retry
    assert pacer.write_times[1] - pacer.write_times[0] >= 3.0
    assert len(ours(gh, status_marker("eng"))) == 1


def test_long_retry_after_pauses_writes_until_then(gh, cfg):
    gh.fail(
        "POST",
        r"/comments$",
        status=403,
        headers={"retry-after": "900"},
        body={"message": "You have exceeded a secondary rate limit"},
    )
    clock = FakeClock()
    report, _ = cycle(cfg, clock, 0)
    assert 900.0 not in clock.sleeps  # longer than max_rate_limit_wait: no sleeping in a cycle
    assert report.notify["paused_until"] == "2026-11-30T12:15:00Z"
    assert "rate limited" in report.notify["errors"][0]
    gh.reset_requests()
    report, _ = cycle(cfg, clock, 10)  # still inside the pause: no request at all
    assert [r for r in gh.requests if "comments" in r.path] == []
    assert report.notify["paused_until"] == "2026-11-30T12:15:00Z"
    report, _ = cycle(cfg, clock, 16)
    assert report.notify["errors"] == [] and report.notify["paused_until"] is None
    assert len(ours(gh, status_marker("eng"))) == 1


def test_body_is_capped_evidence_cut_last(gh, cfg):
    add_run(cfg, "run-huge", "failed", signature="marlin-tile-n", excerpt="x" * 300_000)
    clock = FakeClock()
    report, _ = cycle(cfg, clock, 0)
    assert report.notify["errors"] == []
    body = ours(gh, status_marker("eng"))[0]["body"]
    assert len(body) < GITHUB_BODY_LIMIT
    assert body.startswith(status_marker("eng"))
    assert "**reproduces**" in body and "Crash on load" in body  # status and blockers survive
    assert "shortened to fit" in body and "earlier characters cut" in body
    assert body.index("Crash on load") < body.index("Evidence")


def test_dry_run_prints_and_writes_nothing(gh, cfg):
    runner = CliRunner()
    # statuses in the store (a cycle that reads nothing records none: it polls), no comment yet
    run_cycle(cfg, now=T0 - timedelta(hours=1), no_smoke=True, notify_kw={"api": _Unreachable()})
    result = runner.invoke(cli, ["comment", "--config", str(cfg.path), "--dry-run", "--show-body"])
    assert result.exit_code == 0, result.output
    assert "dry run (--dry-run): nothing is written" in result.output
    assert "status:eng: would create — no comment by @watcher-bot carries" in result.output
    assert status_marker("eng") in result.output  # the body, shown
    assert writes(gh) == []
    store = Store(cfg.db_path)
    # nothing posted: at most the sticky's row the unreachable first attempt left, no comment id
    assert [s["comment_id"] for s in store.stickies()] in ([], [None]) and store.outbox() == []
    store.close()

    runner.invoke(cli, ["comment", "--config", str(cfg.path)])
    assert [w.method for w in writes(gh)] == ["POST"]
    gh.update("up/engine", 5, merged=True)
    run_cycle(cfg, now=T0, no_smoke=True, notify_kw={"api": _Unreachable()})
    gh.reset_requests()
    result = runner.invoke(cli, ["comment", "--config", str(cfg.path), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "status:eng: would edit comment" in result.output
    assert "content changed" in result.output and "ready-to-test" in result.output
    assert "would post — page eng: blocked → ready-to-test" in result.output
    assert writes(gh) == []


def test_disabled_notify_is_a_dry_run(gh, cfg, tmp_path):
    text = CONFIG.replace("enabled = true", "enabled = false")
    cfg.path.write_text(text, encoding="utf-8")
    cfg = load_config(cfg.path)
    report = run_cycle(cfg, now=T0, no_smoke=True)
    assert report.notify is None and writes(gh) == []
    result = CliRunner().invoke(cli, ["comment", "--config", str(cfg.path)])
    assert result.exit_code == 0, result.output
    assert "dry run ([notify] enabled = false)" in result.output
    assert "would create" in result.output
    assert writes(gh) == []


def test_first_run_does_not_replay_history(gh, cfg):
    """Enabling notify on an old database announces only the latest cycle's transitions."""
    run_cycle(cfg, offline=True, no_smoke=True, now=T0)
    gh.update("up/engine", 5, merged=True)
    disabled = dataclasses.replace(cfg, notify=dataclasses.replace(cfg.notify, enabled=False))
    run_cycle(disabled, no_smoke=True, now=T0.replace(minute=5))  # blocked -> ready-to-test
    add_run(cfg, "run-1", "passed", minute=6)
    clock = FakeClock()
    cycle(cfg, clock, 10)  # ready-to-test -> validated: the only one announced
    bodies = [c["body"] for c in gh.comments(DOCS, ISSUE) if "watcher:event" in c["body"]]
    assert len(bodies) == 1 and "**validated**" in bodies[0]


def test_pygithub_never_retries_or_sleeps_by_itself(gh, cfg):
    """A 502 on POST is not retried within the run (the next run looks for the marker first)."""
    gh.fail("POST", r"/comments$", status=502, times=1)
    store = Store(cfg.db_path)
    try:
        ev = evaluate(cfg, store.items(), [], store.statuses(), T0)
        clock = FakeClock()
        result = run_notify(cfg, store, ev, now=T0, pacer=RecordingPacer(clock))
    finally:
        store.close()
    assert [r.status for r in gh.requests if r.method == "POST"] == [502]
    assert clock.sleeps == [] and result.errors and "502" in result.errors[0]


def test_markers_count_only_on_the_first_line():
    from watcher.github.comments import Comment
    from watcher.notify.plan import carries, same_content

    marker = event_marker(3)
    assert carries(Comment(1, BOT, f"{marker}\n### body"), marker)
    assert not carries(Comment(1, BOT, f"log excerpt:\n{marker}"), marker)
    assert not carries(Comment(1, BOT, f"{event_marker(33)}\nbody"), marker)
    assert same_content("a\r\nb\r\n", "a\nb")
    assert same_content(
        "a\nchecked 12:00 <!-- volatile -->\n", "a\nchecked 13:00 <!-- volatile -->"
    )
    assert not same_content("a\nb", "a\nc")


def test_rate_limited_listing_pauses_and_writes_nothing(gh, cfg):
    gh.fail(
        "GET",
        r"/issues/7/comments",
        status=403,
        headers={"retry-after": "30"},
        body={"message": "You have exceeded a secondary rate limit"},
    )
    clock = FakeClock()
    report, _ = cycle(cfg, clock, 0)
    assert report.pages["eng"]["status"] == "blocked"
    assert writes(gh) == [] and "403" in report.notify["errors"][0]
    assert report.notify["paused_until"] == "2026-11-30T12:00:30Z"
    report, _ = cycle(cfg, clock, 1)
    assert report.notify["errors"] == [] and len(ours(gh, status_marker("eng"))) == 1


def test_no_token_is_recorded_not_raised(gh, cfg, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN")
    report = run_cycle(cfg, offline=False, now=T0, no_smoke=True)
    assert report.pages["eng"]["status"] == "blocked"
    assert "GITHUB_TOKEN" in report.notify["errors"][0]
    assert [a["what"] for a in report.notify["actions"]] == ["deferred"]
    doc = json.loads((cfg.site_dir / "status.json").read_text())
    assert "GITHUB_TOKEN" in doc["notify"]["last_error"]
    result = CliRunner().invoke(cli, ["comment", "--config", str(cfg.path)])
    assert result.exit_code == 1 and "GITHUB_TOKEN" in result.output
    assert [r for r in gh.requests if "comments" in r.path] == []


def test_comment_json_lists_actions_with_bodies(gh, cfg):
    run_cycle(cfg, offline=True, no_smoke=True, now=T0)
    result = CliRunner().invoke(cli, ["comment", "--config", str(cfg.path), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["dry_run"] is True and data["repo"] == DOCS and data["issue"] == ISSUE
    assert data["read_github"] is True and data["writes"] == 0
    (action,) = data["actions"]
    assert action["what"] == "create" and action["body"].startswith(status_marker("eng"))


def test_broken_template_override_never_fails_the_cycle(gh, cfg):
    (cfg.base_dir / "templates").mkdir()
    (cfg.base_dir / "templates" / "comment_status.md.j2").write_text("{{ nope.nope }}")
    report, _ = cycle(cfg, FakeClock(), 0)
    assert report.pages["eng"]["status"] == "blocked" and report.cycle_id
    assert "nope" in report.notify["errors"][0]
    assert writes(gh) == []
    doc = json.loads((cfg.site_dir / "status.json").read_text())
    assert "nope" in doc["notify"]["last_error"]
