"""State words an item can be in, and what they mean for a blocker.

Poll writes these words (one per item, read from GitHub); the pure evaluator reads them. Exactly:
pull `open`/`draft`/`merged`/`closed` (closed without merge); issue `open`/`completed`/
`not_planned`/`closed`; commit stream `matched`/`no-match`; release stream the latest tag or `none`;
code check `present`/`absent`/`file-missing`. Closed is not fixed: a closed pull counts only when a
superseding pull was merged; a code check counts only when the fix is `present` in the code.
"""

from __future__ import annotations

from typing import Any

from watcher.config import Item

PULL_STATES = ("open", "draft", "merged", "closed")
ISSUE_STATES = ("open", "completed", "not_planned", "closed")
COMMIT_STATES = ("matched", "no-match")
CODE_STATES = ("present", "absent", "file-missing")


def item_satisfied(item: Item, row: dict[str, Any] | None) -> bool:
    """Does this item's last known state count towards clearing a blocker?"""
    if not row or not row.get("state"):
        return False
    state = row["state"]
    if item.kind == "pull":
        fixed = state == "merged" or (state == "closed" and row.get("superseded_state") == "merged")
        return fixed and (row.get("in_release") is not None or not item.require_release)
    if item.kind == "issue":
        return state == "completed"
    if item.kind == "commits":
        return state == "matched"
    if item.kind == "code":
        return state == "present"
    return state != "none"
