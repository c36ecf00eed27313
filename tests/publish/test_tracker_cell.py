"""One row's watcher cell says when GitHub's side is only the last known one (issue 32's
mutation set: the mark could go, or be inverted, and no tracker test noticed)."""

from __future__ import annotations

from pathlib import Path

from watcher.config.model import Config, Item
from watcher.config.tracker import parse_tracker
from watcher.judge.audit import audit_tracker
from watcher.publish.tracker import computed_cell

U = "https://github.com/o/r"
MERGED = {"state": "merged", "details": {"merged_at": "2026-07-02T10:00:00Z"}}


def _cell(row: dict) -> str:
    text = f"| Issue / PR | Status |\n|---|---|\n| [#1]({U}/pull/1) | 🔵 Merged |\n"
    cfg = Config(path=Path("watch.toml"), items=(Item("r-1", "o/r", "pull", number=1),))
    ra = audit_tracker(cfg, parse_tracker(Path("t.md"), text), {"r-1": row}).rows[0]
    return computed_cell(ra, "2026-07-03T00:00:00Z")


def test_a_stale_read_is_marked_and_a_fresh_one_is_not():
    assert "merged 2026-07-02 (last known; the latest read failed)" in _cell(
        {**MERGED, "stale": True}
    )
    fresh = _cell(MERGED)
    assert "merged 2026-07-02" in fresh and "last known" not in fresh
