"""How a stored row is shown: the one shape the status document, pages, site, CLI and explain share.

It lives below them all, so a command that only reads the store (explain, `watcher status`) never
imports the renderer or its templates.
"""

from __future__ import annotations

from typing import Any

from watcher.config import Config
from watcher.evaluate import item_phrase


def item_evidence(kind: str, details: dict[str, Any]) -> dict[str, Any]:
    """What an item's state rests on: matching commits, or matching lines of code."""
    if kind == "commits":
        return {
            "matches": list(details.get("commits") or []),
            "match_count": details.get("matched", 0),
        }
    if kind == "code" and details.get("code"):
        code = details["code"]
        return {
            "ref": code.get("ref"),
            "sha": code.get("sha"),
            "lines": list(code.get("lines") or []),
            "line_count": code.get("line_count", 0),
            "files_missing": list(code.get("files_missing") or []),
            "not_found": list(code.get("not_found") or []),
            "still_found": list(code.get("still_found") or []),
        }
    return {}


def item_view(cfg: Config, item_id: str, row: dict[str, Any] | None) -> dict[str, Any]:
    """One item as the status document, the pages and the site show it."""
    item = cfg.item(item_id)
    row = row or {}
    details = row.get("details") or {}
    return {
        "id": item.id,
        "repo": item.repo,
        "kind": item.kind,
        "number": item.number,
        "label": item.label,
        "title": row.get("title"),
        "state": row.get("state") or "unknown",
        "url": row.get("url") or item.html_url,
        "superseded_by": row.get("superseded_by"),
        "superseded_state": row.get("superseded_state"),
        "in_release": row.get("in_release"),
        "stale": bool(row.get("stale")) or not row,
        "error": row.get("error"),
        "moved_to": row.get("moved_to"),
        "checked_at": row.get("checked_at"),
        "changed_at": row.get("changed_at"),
        "updated_at": row.get("updated_at"),
        "details": details,
        "snoozed_until": item.snooze.until.isoformat() if item.snooze else None,
        "summary": item_phrase(item, row),
        "warnings": list(details.get("warnings") or []),
        "evidence": item_evidence(item.kind, details),
    }
