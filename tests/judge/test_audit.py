"""A row's claim against GitHub's side: agreement by the vocabulary, the most advanced link,
and the pins' seam (🟢 needs the merge in our pin, 🔵 needs it out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from watcher.config.model import Config, Item
from watcher.config.tracker import parse_tracker
from watcher.judge.audit import audit_tracker, github_emoji

U = "https://github.com/o/r"


def audit(status: str, rows: dict, pins=None, links=(f"[#1]({U}/pull/1)",)):
    text = f"| Issue / PR | Status |\n|---|---|\n| {' '.join(links)} | {status} |\n"
    cfg = Config(
        path=Path("watch.toml"),
        items=(Item("r-1", "o/r", "pull", number=1), Item("r-2", "o/r", "issue", number=2)),
    )
    return audit_tracker(cfg, parse_tracker(Path("t.md"), text), rows, pins).rows[0]


MERGED = {"state": "merged", "details": {"merged_at": "2026-07-02T10:00:00Z"}, "in_release": "v1"}


@pytest.mark.parametrize(
    ("status", "row", "disagrees"),
    [
        ("🟡 Open", {"state": "open"}, False),
        ("🟡 Open", MERGED, True),
        ("🔵 Merged", MERGED, False),
        ("❌ Closed", {"state": "closed"}, False),
        ("🟢 Landed", {"state": "closed"}, True),
        ("⚫ Local", {"state": "open"}, False),
        ("⚫ Local", MERGED, True),
        ("no emoji here", MERGED, False),  # no claim, nothing to disagree with
        ("🟡 Open", None, False),  # not read yet
    ],
)
def test_claims_against_github(status, row, disagrees):
    ra = audit(status, {"r-1": row} if row else {})
    assert ra.disagrees is disagrees


def test_a_row_is_its_most_advanced_link_and_words_are_dated():
    links = (f"[#2]({U}/issues/2)", f"[#1]({U}/pull/1)")
    ra = audit("🟡 Open", {"r-1": MERGED, "r-2": {"state": "open"}}, links=links)
    assert ra.side == "merged" and ra.disagrees and github_emoji(ra) == "🔵"
    assert ra.links[1].words == "merged 2026-07-02, first in v1"


def test_a_pull_linked_as_an_issue_is_not_held_against_the_row():
    row = {"state": "closed", "details": {"is_pull": True}, "updated_at": "2026-07-02T10:00:00Z"}
    ra = audit("🟢 Landed", {"r-2": row}, links=(f"[#2]({U}/issues/2)",))
    assert ra.side == "unread" and not ra.disagrees
    assert "link /pull/N to learn whether it merged" in ra.links[0].words


def test_the_pins_seam_tells_landed_from_awaiting():
    assert audit("🟢 Landed", {"r-1": MERGED}, pins=lambda link, row: True).disagrees is False
    ra = audit("🟢 Landed", {"r-1": MERGED}, pins=lambda link, row: False)
    assert ra.disagrees and github_emoji(ra) == "🔵"
    ra = audit("🔵 Merged", {"r-1": MERGED}, pins=lambda link, row: True)
    assert ra.disagrees and github_emoji(ra) == "🟢"
