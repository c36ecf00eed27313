"""Which item a tracker link is, and what side a stored row is on: each a one-line slip that
passed the audit's tests (issue 32's mutation set)."""

from __future__ import annotations

from pathlib import Path

from watcher.config.model import Config, Item
from watcher.config.tracker import Link
from watcher.judge.audit import item_for, link_side

SHA = "0123456789abcdef0123456789abcdef01234567"
CFG = Config(
    path=Path("watch.toml"),
    items=(
        Item("pr-1", "o/r", "pull", number=1),
        Item("short", "o/r", "commit", sha=SHA[:10]),
    ),
)


def test_a_link_is_an_item_of_its_own_repository_only():
    assert item_for(CFG, Link("o/r", "pull", "1", "https://github.com/o/r/pull/1")) == "pr-1"
    assert item_for(CFG, Link("fork/r", "pull", "1", "https://github.com/fork/r/pull/1")) is None


def test_a_commit_link_and_a_commit_item_agree_when_either_sha_is_the_others_prefix():
    full = Link("o/r", "commit", SHA, f"https://github.com/o/r/commit/{SHA}")
    short = Link("o/r", "commit", SHA[:7], f"https://github.com/o/r/commit/{SHA[:7]}")
    assert item_for(CFG, full) == "short"  # the item's sha is the link's prefix
    assert item_for(CFG, short) == "short"  # the link's is the item's
    other = Link("o/r", "commit", "f" * 40, "https://github.com/o/r/commit/" + "f" * 40)
    assert item_for(CFG, other) is None


def test_a_closed_pull_superseded_by_a_merged_one_is_merged():
    row = {
        "state": "closed",
        "superseded_state": "merged",
        "superseded_by": 9,
        "details": {"superseded_ref": "o/r#9", "superseded_merged_at": "2026-07-02T10:00:00Z"},
    }
    assert link_side("pull", row) == (
        "merged",
        "closed, superseded by o/r#9 (merged 2026-07-02)",
    )


def test_an_issue_its_author_closed_with_nothing_merged_is_closed_not_resolved():
    row = {"state": "closed-by-author", "updated_at": "2026-07-02T10:00:00Z"}
    assert link_side("issue", row) == (
        "closed",
        "closed by its author, nothing merged 2026-07-02",
    )
