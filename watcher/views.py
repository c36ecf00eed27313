"""How a stored row is shown: the one shape the status document, pages, site, CLI and explain share.

It lives below them all, so a command that only reads the store (explain, `watcher status`) never
imports the renderer or its templates.
"""

from __future__ import annotations

from typing import Any

from watcher.config import Config


def item_view(cfg: Config, item_id: str, row: dict[str, Any] | None) -> dict[str, Any]:
    """One item as the status document, the pages and the site show it."""
    item = cfg.item(item_id)
    row = row or {}
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
        "details": row.get("details") or {},
        "snoozed_until": item.snooze.until.isoformat() if item.snooze else None,
    }
