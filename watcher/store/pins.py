"""Stored pins: the store's side of `watcher.poll.pins` (one row per recipe: what it pins, the
commit that resolves to, whether the build still exists, when it was last seen, which fixes it
carries), kept so a vanished pin still shows what it was and when it was last seen."""

from __future__ import annotations

import json
from typing import Any

import sqlite_utils


class PinStore:
    """One row per recipe; `doc` is the pin's JSON document (see watcher.poll.pins)."""

    db: sqlite_utils.Database

    def pins(self) -> dict[str, dict[str, Any]]:
        rows = self.db.execute("SELECT recipe, doc FROM pins ORDER BY recipe").fetchall()
        return {recipe: json.loads(doc) for recipe, doc in rows}

    def put_pin(self, recipe: str, doc: dict[str, Any], at: str) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO pins (recipe, doc, updated_at) VALUES (?, ?, ?)",
            (recipe, json.dumps(doc, sort_keys=True), at),
        )

    def drop_pin(self, recipe: str) -> None:
        self.db.execute("DELETE FROM pins WHERE recipe = ?", (recipe,))
