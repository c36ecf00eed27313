"""Pending smoke triggers: the store's side of `watcher.smoke.trigger`."""

from __future__ import annotations

import json
from typing import Any

import sqlite_utils


class TriggerStore:
    """Pending smoke triggers (see `watcher.smoke.trigger`); each statement commits on its own."""

    db: sqlite_utils.Database

    def triggers(self) -> dict[str, dict[str, Any]]:
        rows = self.db.execute("SELECT * FROM smoke_triggers ORDER BY since, recipe")
        cols = [d[0] for d in rows.description]
        out = {}
        for values in rows.fetchall():
            row = dict(zip(cols, values, strict=True))
            row["reasons"] = json.loads(row["reasons"] or "[]")
            out[row["recipe"]] = row
        return out

    def put_trigger(self, recipe: str, **fields: Any) -> None:
        """Insert or update one trigger; only the given columns change."""
        if "reasons" in fields:
            fields["reasons"] = json.dumps(list(fields["reasons"]))
        cols = list(fields)
        cur = self.db.execute(
            f"UPDATE smoke_triggers SET {', '.join(f'{c} = ?' for c in cols)} WHERE recipe = ?",
            [*(fields[c] for c in cols), recipe],
        )
        if cur.rowcount == 0:
            self.db.execute(
                f"INSERT INTO smoke_triggers (recipe, {', '.join(cols)})"
                f" VALUES (?, {', '.join('?' for _ in cols)})",
                [recipe, *(fields[c] for c in cols)],
            )

    def drop_trigger(self, recipe: str) -> None:
        self.db.execute("DELETE FROM smoke_triggers WHERE recipe = ?", (recipe,))
