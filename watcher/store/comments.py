"""The comment outbox, sticky comments and notify state: the store's side of `watcher.notify.send`."""

from __future__ import annotations

from typing import Any

import sqlite_utils


class CommentStore:
    """Outbox, sticky-comment and notify-state operations; each statement commits on its own.

    Mixed into Store. Every write here is its own transaction on purpose: the intent to post
    must be on disk before the POST, and the POST's result right after it.
    """

    db: sqlite_utils.Database

    def notify_get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM notify_state WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def notify_set(self, key: str, value: str | None) -> None:
        if value is None:
            self.db.execute("DELETE FROM notify_state WHERE key = ?", (key,))
        else:
            self.db.execute(
                "INSERT OR REPLACE INTO notify_state (key, value) VALUES (?, ?)", (key, value)
            )

    def outbox_add(
        self,
        event_id: int,
        page_id: str | None,
        repo: str,
        issue: int,
        marker: str,
        body: str,
        at: str,
    ) -> bool:
        """Record the intent to post; False when the event already has a row (never twice)."""
        cur = self.db.execute(
            "INSERT OR IGNORE INTO comment_outbox (event_id, page_id, repo, issue, marker, body,"
            " state, created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)",
            (event_id, page_id, repo, issue, marker, body, at),
        )
        return cur.rowcount > 0

    def outbox(self, states: tuple[str, ...] | None = None, limit: int | None = None) -> list[dict]:
        """Rows oldest event first; `states` filters (e.g. ('pending', 'failed'))."""
        sql, params = "SELECT * FROM comment_outbox", []
        if states:
            sql += f" WHERE state IN ({', '.join('?' for _ in states)})"
            params.extend(states)
        sql += " ORDER BY event_id"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return self._rows(sql, params)

    def outbox_attempt(self, event_id: int, at: str) -> None:
        self.db.execute(
            "UPDATE comment_outbox SET attempts = attempts + 1, attempted_at = ? WHERE event_id = ?",
            (at, event_id),
        )

    def outbox_posted(
        self, event_id: int, comment_id: int, url: str | None, at: str, found: bool = False
    ) -> None:
        self.db.execute(
            "UPDATE comment_outbox SET state = 'posted', comment_id = ?, comment_url = ?,"
            " found = ?, posted_at = ?, last_error = NULL WHERE event_id = ?",
            (comment_id, url, int(found), at, event_id),
        )

    def outbox_failed(self, event_id: int, error: str, at: str) -> None:
        self.db.execute(
            "UPDATE comment_outbox SET state = 'failed', last_error = ?, attempted_at = ?"
            " WHERE event_id = ?",
            (error[:2000], at, event_id),
        )

    def outbox_counts(self) -> dict[str, int]:
        rows = self.db.execute("SELECT state, COUNT(*) FROM comment_outbox GROUP BY state")
        return {state: n for state, n in rows.fetchall()}

    def sticky(self, page_id: str, repo: str, issue: int) -> dict[str, Any] | None:
        rows = self._rows(
            "SELECT * FROM sticky_comments WHERE page_id = ? AND repo = ? AND issue = ?",
            (page_id, repo, issue),
        )
        return rows[0] if rows else None

    def stickies(self) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM sticky_comments ORDER BY page_id, repo, issue")

    def put_sticky(self, page_id: str, repo: str, issue: int, **fields: Any) -> None:
        """Upsert the named columns of a page's sticky comment row."""
        self.db.execute(
            "INSERT OR IGNORE INTO sticky_comments (page_id, repo, issue) VALUES (?, ?, ?)",
            (page_id, repo, issue),
        )
        if fields:
            cols = list(fields)
            self.db.execute(
                f"UPDATE sticky_comments SET {', '.join(f'{c} = ?' for c in cols)}"
                " WHERE page_id = ? AND repo = ? AND issue = ?",
                [*(fields[c] for c in cols), page_id, repo, issue],
            )
