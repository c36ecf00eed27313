"""notify's deciding side without HTTP: which events, which bodies, create/edit/leave, found/post.

Plain data in, Actions and bodies out: no server, no database (the HTTP side is test_notify.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from watcher.config.load import load_config
from watcher.github.comments import Comment
from watcher.judge.evaluate import evaluate
from watcher.notify.plan import (
    MAX_BODY_CHARS,
    Bodies,
    cap_body,
    deferred_actions,
    event_action,
    event_marker,
    needs_reading,
    notified_pages,
    our_comments,
    pick_events,
    status_marker,
    sticky_action,
    unread_actions,
    worth_a_comment,
)
from watcher.publish.page import digest

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
BOT, HUMAN = "watcher-bot", "maintainer"


@pytest.fixture(scope="module")
def cfg(shipped_cfg):
    """The shipped watch.toml (tests/notify/conftest.py's `cfg` is the notify tests' own)."""
    return shipped_cfg


def event(id, kind="page", subject="sglang", old="blocked", new="ready-to-test", at=NOW, **kw):
    return dict(
        id=id, kind=kind, subject=subject, old=old, new=new, message=f"{subject}: {new}", **kw
    ) | {"at": at.strftime("%Y-%m-%dT%H:%M:%SZ")}


def test_only_news_for_a_notified_page_within_a_week_is_picked(cfg):
    events = [
        event(5, new="validated"),
        event(3),  # picked: blocked -> ready-to-test
        event(4, old=None),  # a first sighting is not news
        event(6, at=NOW - timedelta(days=8)),  # history, not news
        event(7, kind="blocker", subject="marlin-pad", old="fix-merged", new="reproduces"),
        event(8, kind="blocker", subject="marlin-pad", old="blocked", new="reproduces"),
        event(9, data={"snoozed": True}),  # only snoozed items moved
        event(10, kind="page", subject="no-such-page"),
    ]
    picked, watermark = pick_events(cfg, events, after=2, now=NOW)
    assert [e["id"] for e in picked] == [3, 5, 7]
    assert watermark == 10  # every event read moves the watermark, picked or not
    assert not worth_a_comment(event(11, new="blocked"))


def test_the_watermark_stays_when_nothing_new_was_read(cfg):
    assert pick_events(cfg, [], after=41, now=NOW) == ([], 41)


def test_only_our_own_login_counts_and_marker_quotes_by_others_are_noted():
    marker = status_marker("sglang")
    comments = [
        Comment(1, HUMAN, f"{marker}\nquoted by a human"),
        Comment(2, BOT, "an unrelated comment of ours"),
        Comment(3, HUMAN, "no marker here"),
    ]
    mine, searched = our_comments(comments, BOT)
    assert [c.id for c in mine] == [2]
    assert searched == "3 comments searched; 1 by others carrying a watcher marker ignored"
    action, found = sticky_action("sglang", f"{marker}\nnew body", mine, BOT, searched)
    assert (action.what, found) == ("create", None)
    assert f"no comment by @{BOT} carries {marker}" in action.why and "1 by others" in action.why


def test_sticky_is_left_alone_when_only_whitespace_differs_and_edited_otherwise():
    marker = status_marker("sglang")
    mine = [Comment(7, BOT, f"{marker}\r\n## SGLang\r\nblocked\r\n\n", url="u7")]
    action, found = sticky_action("sglang", f"{marker}\n## SGLang\nblocked", mine, BOT, "")
    assert (action.what, action.comment_id, found.id) == ("unchanged", 7, 7)
    action, found = sticky_action("sglang", f"{marker}\n## SGLang\nvalidated", mine, BOT, "")
    assert (action.what, action.comment_id) == ("edit", 7)
    assert action.why == "content changed (2 line(s) differ, first: 'blocked')"


def test_a_marker_further_down_a_body_is_not_ours():
    marker = status_marker("sglang")
    mine = [Comment(7, BOT, f"log excerpt:\n{marker}")]
    assert sticky_action("sglang", f"{marker}\nbody", mine, BOT, "")[0].what == "create"


def test_an_event_already_in_the_thread_is_found_never_posted_again():
    row = {"event_id": 12, "marker": event_marker(12), "body": f"{event_marker(12)}\nnews"}
    action, found = event_action(row, [Comment(40, BOT, row["body"])], BOT, "why")
    assert (action.what, action.comment_id, found.id) == ("found", 40, 40)
    assert "not posting again" in action.why
    action, found = event_action(row, [Comment(41, BOT, event_marker(13))], BOT, "why")
    assert (action.what, action.why, action.body, found) == ("post", "why", row["body"], None)


def test_no_request_when_every_status_matches_our_last_write():
    bodies = {"a": "body a", "b": "body b"}
    stored = {
        "a": {"comment_id": 1, "digest": digest("body a")},
        "b": {"comment_id": 2, "digest": digest("body b")},
    }
    assert not needs_reading([], bodies, stored)
    assert needs_reading([{"event_id": 1}], bodies, stored)  # an event to post
    assert needs_reading([], dict(bodies, b="changed"), stored)
    assert needs_reading([], bodies, dict(stored, b={"digest": digest("body b")}))  # no comment yet
    assert needs_reading([], bodies, dict(stored, b=None))


def test_deferred_and_unread_actions_say_what_waits(cfg):
    pages = notified_pages(cfg)
    rows = [{"event_id": 3, "body": "e3", "attempts": 2}]
    bodies = {"sglang": "s"}
    acts = deferred_actions(pages, rows, bodies, "rate limited", done={"status:sglang"})
    assert [(a.what, a.target, a.body) for a in acts] == [("deferred", "event:3", None)]
    events = {3: {"message": "sglang: blocked -> ready-to-test"}}
    dry = unread_actions(
        pages, {"sglang": {"comment_id": 9}}, bodies, rows, events, "no token", True
    )
    assert [(a.what, a.target) for a in dry] == [("edit", "status:sglang"), ("post", "event:3")]
    assert dry[1].why == "sglang: blocked -> ready-to-test (attempt 3)"
    real = unread_actions(pages, {"sglang": None}, bodies, rows, {}, "no token", False)
    assert [a.what for a in real] == ["deferred", "deferred"] and real[
        1
    ].why == "transition (attempt 3)"


def test_cap_body_keeps_the_marker_and_says_it_cut():
    marker = event_marker(1)
    body = marker + "\n" + "line of text\n" * 10_000
    capped = cap_body(body)
    assert len(capped) <= MAX_BODY_CHARS and capped.startswith(marker)
    assert capped.endswith("(truncated to fit GitHub's 65,536-character comment limit)\n")
    assert cap_body("short") == "short"


def _run(excerpt: str) -> dict:
    return {
        "run_id": "run-1",
        "recipe": "sglang-nospec-tp1",
        "outcome": "failed",
        "signature": "marlin-tile-n",
        "stage_reached": "launch",
        "reason": "crashed at load",
        "hardware": {"matches_target": True, "gpus": [{"name": "NVIDIA GeForce RTX 3090"}]},
        "started_at": "2026-11-30T11:00:00Z",
        "excerpt": excerpt,
    }


def test_status_body_cuts_evidence_first_to_fit_and_hides_secrets(cfg, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "s3cret-value-of-the-token")
    runs = [_run("size_n = 96 is not divisible\n" + "y" * 300_000 + "\ns3cret-value-of-the-token")]
    ev = evaluate(cfg, {}, runs, {}, NOW)
    since = {"page:sglang": {"since": "2026-11-29T00:00:00Z"}}
    body = Bodies(cfg, ev, {}, runs, since).status(cfg.page("sglang"))
    assert body.startswith(status_marker("sglang")) and len(body) <= MAX_BODY_CHARS
    assert "log excerpts shortened to fit" in body and "earlier characters cut" in body
    assert "s3cret-value-of-the-token" not in body and "[redacted]" in body
    assert "since 2026-11-29" in body


def test_event_body_opens_with_its_marker_and_names_the_blockers(cfg):
    ev = evaluate(cfg, {}, [], {}, NOW)
    e = event(21, new="ready-to-test")
    body = Bodies(cfg, ev, {}, [], {}).event(e, cfg.page("sglang"))
    assert body.startswith(event_marker(21) + "\n")
    assert "blocked → **ready-to-test**" in body
    assert cfg.blocker("marlin-pad").title.replace("_", "\\_") in body  # Markdown-escaped


def test_a_template_override_cannot_leak_a_token_into_a_comment(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "s3cret-value-of-the-token")
    (tmp_path / "watch.toml").write_text((REPO / "watch.toml").read_text(), encoding="utf-8")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "comment_event.md.j2").write_text(
        "raw: {{ event.message }}\n", encoding="utf-8"
    )
    cfg = load_config(tmp_path / "watch.toml")
    e = event(22) | {"message": "leak s3cret-value-of-the-token hf_" + "a" * 24}
    body = Bodies(cfg, evaluate(cfg, {}, [], {}, NOW), {}, [], {}).event(e, None)
    assert body == f"{event_marker(22)}\nraw: leak [redacted] [redacted]\n"


def test_an_item_without_a_label_is_still_a_visible_link_in_the_status_comment(tmp_path):
    """A link whose text is empty (`[](url)`) renders as nothing: the item vanishes from the
    comment. Without a label the link says the item's title, or its id."""
    text = (REPO / "watch.toml").read_text(encoding="utf-8")
    text = "\n".join(line for line in text.splitlines() if not line.startswith("label = "))
    (tmp_path / "watch.toml").write_text(text + "\n", encoding="utf-8")
    cfg = load_config(tmp_path / "watch.toml")
    assert not any(i.label for i in cfg.items)
    shown = cfg.item(cfg.blocker("marlin-pad").items[0])
    body = Bodies(cfg, evaluate(cfg, {}, [], {}, NOW), {}, [], {}).status(cfg.page("sglang"))
    assert "[](" not in body
    assert f"[{shown.id}](" in body.replace("\\", "")
