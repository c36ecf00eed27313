"""State words an item can be in, and what they mean for a blocker.

Poll writes these words (one per item, read from GitHub); the pure evaluator reads them. Exactly:
pull `open`/`draft`/`merged`/`closed` (closed without merge); issue `open`/`completed`/
`not_planned`/`closed`/`closed-by-author` (completed by its own author with nothing merged
linked: not fixed); commit stream `matched`/`no-match`; release stream the latest tag or `none`;
code check `present`/`absent`/`unreadable` (no file could be read: neither fixed nor not fixed;
`file-missing` is its older name); one commit `committed` (it exists upstream; `in_release` says
where it first shipped); discussion `open`/`answered`/`resolved`/`closed` (outdated or
duplicate), counted only when `resolved`. Closed is not fixed: a closed pull counts only when a
superseding pull was merged; a code check counts only when the fix is `present` in the code.

An item event is worth recording only when what an item says changed: its state word or its
evidence (`evidence_key`), never its title, its body or a new cross-reference.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from watcher.config.model import Item

PULL_STATES = ("open", "draft", "merged", "closed")
ISSUE_STATES = ("open", "completed", "not_planned", "closed", "closed-by-author")
COMMIT_STATES = ("matched", "no-match")
CODE_STATES = ("present", "absent", "unreadable")
UNREADABLE = ("unreadable", "file-missing")


def item_unreadable(item: Item, row: dict[str, Any] | None) -> bool:
    """A code check that could not read its files (or was never read for an error): it says
    nothing about the fix."""
    if item.kind != "code" or not row:
        return False
    return row.get("state") in UNREADABLE or (bool(row.get("stale")) and not row.get("state"))


def evidence_key(row: dict[str, Any] | None) -> str | None:
    """A hash of an item's state word and evidence set (an Observation's fields or a stored
    row): the merge, the superseding PR, the release, the matched commits, the code lines.
    Titles, refs and shas read at, warnings and referencing PRs shown as context are left out."""
    if not row or not row.get("state"):
        return None
    details = row.get("details") or {}
    code = details.get("code") or {}
    key = {
        "state": row.get("state"),
        "superseded": [
            details.get("superseded_repo"),
            row.get("superseded_by"),
            row.get("superseded_state"),
        ],
        "in_release": row.get("in_release"),
        "merge": details.get("merge_commit_sha"),
        "commits": sorted(c.get("sha") for c in details.get("commits") or []),
        "code": sorted({ln.get("text") for ln in code.get("lines") or []}),
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


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
    if item.kind == "discussion":
        return state == "resolved"
    if item.kind == "commit":
        return state == "committed" and (
            row.get("in_release") is not None or not item.require_release
        )
    return state != "none"
