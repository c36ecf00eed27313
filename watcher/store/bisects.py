"""Stored bisects: the store's side of `watcher.bisect.search` (one row per bisect, its state as JSON)."""

from __future__ import annotations

import json
from typing import Any

import sqlite_utils


class BisectStore:
    """Bisects (see `watcher.bisect.search`); each statement commits on its own."""

    db: sqlite_utils.Database

    def put_bisect(self, state: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT INTO bisects (id, recipe, mode, good, bad, status, state, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
            " status = excluded.status, state = excluded.state, updated_at = excluded.updated_at",
            (
                state["id"],
                state["recipe"],
                state["mode"],
                state["good"],
                state["bad"],
                state["status"],
                json.dumps(state, sort_keys=True),
                state["created_at"],
                state["updated_at"],
            ),
        )

    def bisect(self, bisect_id: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT state FROM bisects WHERE id = ?", (bisect_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def bisects(self, recipe: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """Newest first."""
        sql, args = "SELECT state FROM bisects", []
        if recipe:
            sql, args = sql + " WHERE recipe = ?", [recipe]
        rows = self.db.execute(sql + " ORDER BY created_at DESC, id DESC LIMIT ?", [*args, limit])
        return [json.loads(r[0]) for r in rows.fetchall()]
