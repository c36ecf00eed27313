"""The SQLite store: current state in upserted tables, history in append-only ones.

One file (data/watcher.db), WAL mode so a reader (the site, `watcher status`) never blocks a cycle.
Schema changes go through sqlite-utils `Migrations`, so an old database upgrades in place.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlite_utils
from sqlite_utils import Migrations

from watcher.errors import WatcherError

migrations = Migrations("watcher")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def iso(dt: datetime | None) -> str | None:
    """One timestamp format everywhere: 2026-11-30T15:23:42Z."""
    if dt is None:
        return None
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@migrations()
def m001_initial(db: sqlite_utils.Database) -> None:
    db.execute(
        """CREATE TABLE items (
            id TEXT PRIMARY KEY, repo TEXT, kind TEXT, number INTEGER, label TEXT,
            title TEXT, state TEXT, url TEXT, superseded_by INTEGER, superseded_state TEXT,
            in_release TEXT, details TEXT, fingerprint TEXT,
            stale INTEGER NOT NULL DEFAULT 0, error TEXT, moved_to TEXT,
            checked_at TEXT, changed_at TEXT, updated_at TEXT)"""
    )
    db.execute(
        """CREATE TABLE observations (
            id INTEGER PRIMARY KEY, item_id TEXT NOT NULL, cycle_id INTEGER, observed_at TEXT,
            state TEXT, title TEXT, fingerprint TEXT, data TEXT, error TEXT)"""
    )
    db.execute("CREATE INDEX observations_item ON observations(item_id, id)")
    db.execute(
        """CREATE TABLE etags (
            url TEXT PRIMARY KEY, etag TEXT, last_modified TEXT, body TEXT, link TEXT,
            fetched_at TEXT)"""
    )
    db.execute(
        """CREATE TABLE events (
            id INTEGER PRIMARY KEY, at TEXT NOT NULL, cycle_id INTEGER, kind TEXT NOT NULL,
            subject TEXT NOT NULL, old TEXT, new TEXT, message TEXT, data TEXT)"""
    )
    db.execute(
        """CREATE TABLE cycles (
            id INTEGER PRIMARY KEY, started_at TEXT, finished_at TEXT, mode TEXT,
            items INTEGER, changes INTEGER, requests INTEGER, not_modified INTEGER,
            errors INTEGER, duration_s REAL, rate_limit INTEGER, rate_remaining INTEGER,
            rate_reset INTEGER, error TEXT)"""
    )
    db.execute(
        """CREATE TABLE statuses (
            key TEXT PRIMARY KEY, status TEXT, since TEXT, reason TEXT, updated_at TEXT)"""
    )
    db.execute(
        """CREATE TABLE page_versions (
            id INTEGER PRIMARY KEY, page_id TEXT NOT NULL, at TEXT, from_event INTEGER,
            to_event INTEGER, digest TEXT)"""
    )
    db.execute(
        """CREATE TABLE smoke_runs (
            run_id TEXT PRIMARY KEY, recipe TEXT, outcome TEXT, signature TEXT,
            matches_target INTEGER, started_at TEXT, finished_at TEXT, doc TEXT)"""
    )
    db.execute("CREATE INDEX smoke_runs_recipe ON smoke_runs(recipe, started_at)")


# ------------------------------------------------------------------ GitHub comments (notify)


@migrations()
def m030_comments(db: sqlite_utils.Database) -> None:
    """The comment outbox (intent recorded before posting), sticky comments, notify state."""
    db.execute(
        """CREATE TABLE comment_outbox (
            event_id INTEGER PRIMARY KEY, page_id TEXT, repo TEXT, issue INTEGER,
            marker TEXT NOT NULL, body TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending',  -- pending | posted | failed
            comment_id INTEGER, comment_url TEXT, found INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,
            created_at TEXT, attempted_at TEXT, posted_at TEXT)"""
    )
    db.execute("CREATE INDEX comment_outbox_state ON comment_outbox(state, event_id)")
    db.execute(
        """CREATE TABLE sticky_comments (
            page_id TEXT NOT NULL, repo TEXT NOT NULL, issue INTEGER NOT NULL,
            comment_id INTEGER, comment_url TEXT, digest TEXT, updated_at TEXT,
            checked_at TEXT, last_error TEXT, error_at TEXT,
            PRIMARY KEY (page_id, repo, issue))"""
    )
    db.execute("CREATE TABLE notify_state (key TEXT PRIMARY KEY, value TEXT)")


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


@migrations()
def m010_serve_heartbeat(db: sqlite_utils.Database) -> None:
    """One row per long-running scheduler (`serve`): alive, when it beat, when it checks next."""
    db.execute(
        """CREATE TABLE heartbeats (
            name TEXT PRIMARY KEY, pid INTEGER, host TEXT, started_at TEXT, beat_at TEXT,
            next_run_at TEXT, interval_s REAL, cycles INTEGER NOT NULL DEFAULT 0,
            stopped_at TEXT, stop_reason TEXT)"""
    )


class Store(CommentStore):
    """Thin, named operations over the database; callers never write SQL."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):  # private: SQLite's WAL files copy the mode
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            conn = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
            self.db = sqlite_utils.Database(conn)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA busy_timeout=30000")
            migrations.apply(self.db)
        except sqlite3.DatabaseError as e:
            raise WatcherError(f"{self.path}: cannot open the database: {e}") from None

    def close(self) -> None:
        self.db.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing: a crash mid-cycle leaves the previous state whole."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _select(
        self,
        table: str,
        where: dict[str, Any],
        order: str,
        limit: int | None,
        cols: str = "*",
        json_cols: tuple[str, ...] = (),
    ) -> list[dict[str, Any]]:
        """SELECT with AND-ed `clause -> value` filters (clauses are ours, values are bound)."""
        sql = f"SELECT {cols} FROM {table}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {order}"
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = self._rows(sql, list(where.values()))
        for r in rows:
            for c in json_cols:
                r[c] = json.loads(r[c]) if r[c] else None
        return rows

    def _rows(self, sql: str, params: tuple | list = ()) -> list[dict[str, Any]]:
        cur = self.db.execute(sql, params)
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    # -- etags: the conditional-request cache
    def etags(self) -> dict[str, dict[str, Any]]:
        return {r["url"]: r for r in self._rows("SELECT * FROM etags")}

    def put_etags(self, entries: dict[str, dict[str, Any]]) -> None:
        for url, e in entries.items():
            self.db.execute(
                "INSERT OR REPLACE INTO etags (url, etag, last_modified, body, link, fetched_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    url,
                    e.get("etag"),
                    e.get("last_modified"),
                    e.get("body"),
                    e.get("link"),
                    e.get("fetched_at"),
                ),
            )

    # -- items
    def items(self) -> dict[str, dict[str, Any]]:
        rows = self._rows("SELECT * FROM items")
        for r in rows:
            r["details"] = json.loads(r["details"]) if r["details"] else {}
            r["stale"] = bool(r["stale"])
        return {r["id"]: r for r in rows}

    def upsert_item(self, row: dict[str, Any]) -> None:
        row = dict(row)
        row["details"] = json.dumps(row.get("details") or {}, sort_keys=True)
        row["stale"] = int(bool(row.get("stale")))
        cols = list(row)
        self.db.execute(
            f"INSERT OR REPLACE INTO items ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
            [row[c] for c in cols],
        )

    def add_observation(
        self,
        item_id: str,
        cycle_id: int | None,
        at: str,
        state: str | None,
        title: str | None,
        fingerprint: str | None,
        data: Any,
        error: str | None,
    ) -> None:
        self.db.execute(
            "INSERT INTO observations (item_id, cycle_id, observed_at, state, title, fingerprint, data, error)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item_id,
                cycle_id,
                at,
                state,
                title,
                fingerprint,
                json.dumps(data, sort_keys=True),
                error,
            ),
        )

    def observations(
        self, item_id: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        where = {"item_id = ?": item_id} if item_id else {}
        return self._select("observations", where, "id DESC", limit, json_cols=("data",))

    # -- events
    def add_event(
        self,
        at: str,
        cycle_id: int | None,
        kind: str,
        subject: str,
        old: str | None,
        new: str | None,
        message: str,
        data: Any = None,
    ) -> int:
        cur = self.db.execute(
            "INSERT INTO events (at, cycle_id, kind, subject, old, new, message, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                at,
                cycle_id,
                kind,
                subject,
                old,
                new,
                message,
                json.dumps(data, sort_keys=True) if data is not None else None,
            ),
        )
        return cur.lastrowid

    def events(
        self, after: int = 0, upto: int | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        where: dict[str, Any] = {"id > ?": after}
        if upto is not None:
            where["id <= ?"] = upto
        return self._select("events", where, "id DESC", limit, json_cols=("data",))

    def last_event_id(self) -> int:
        return self.db.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]

    # -- cycles (one row per check-now / serve cycle)
    def start_cycle(self, at: str, mode: str) -> int:
        cur = self.db.execute("INSERT INTO cycles (started_at, mode) VALUES (?, ?)", (at, mode))
        return cur.lastrowid

    def finish_cycle(self, cycle_id: int, **fields: Any) -> None:
        cols = list(fields)
        self.db.execute(
            f"UPDATE cycles SET {', '.join(f'{c} = ?' for c in cols)} WHERE id = ?",
            [*(fields[c] for c in cols), cycle_id],
        )

    def cycles(self, limit: int = 50) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM cycles ORDER BY id DESC LIMIT ?", (limit,))

    def last_finished_cycle(self, polled_only: bool = False) -> dict[str, Any] | None:
        sql = "SELECT * FROM cycles WHERE finished_at IS NOT NULL"
        if polled_only:
            sql += " AND mode != 'offline'"
        rows = self._rows(sql + " ORDER BY id DESC LIMIT 1")
        return rows[0] if rows else None

    # -- statuses (current blocker and page statuses, to detect transitions)
    def statuses(self) -> dict[str, dict[str, Any]]:
        return {r["key"]: r for r in self._rows("SELECT * FROM statuses")}

    def set_status(self, key: str, status: str, since: str, reason: str, at: str) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO statuses (key, status, since, reason, updated_at) VALUES (?, ?, ?, ?, ?)",
            (key, status, since, reason, at),
        )

    # -- page versions (what changed since the previous version of a page)
    def current_page_version(self, page_id: str) -> dict[str, Any] | None:
        rows = self._rows(
            "SELECT * FROM page_versions WHERE page_id = ? ORDER BY id DESC LIMIT 1", (page_id,)
        )
        return rows[0] if rows else None

    def add_page_version(
        self, page_id: str, at: str, from_event: int, to_event: int, digest: str
    ) -> None:
        self.db.execute(
            "INSERT INTO page_versions (page_id, at, from_event, to_event, digest) VALUES (?, ?, ?, ?, ?)",
            (page_id, at, from_event, to_event, digest),
        )

    # -- smoke runs (the verdicts)
    def add_smoke_run(self, doc: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO smoke_runs (run_id, recipe, outcome, signature, matches_target,"
            " started_at, finished_at, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                doc["run_id"],
                doc["recipe"],
                doc["outcome"],
                doc.get("signature"),
                int(bool((doc.get("hardware") or {}).get("matches_target"))),
                doc.get("started_at"),
                doc.get("finished_at"),
                json.dumps(doc, sort_keys=True),
            ),
        )

    def count_smoke_runs_since(self, at: str, until: str | None = None) -> int:
        """Runs started at or after `at` (and, given `until`, no later): the daily budget."""
        sql, args = "SELECT COUNT(*) FROM smoke_runs WHERE started_at >= ?", [at]
        if until is not None:
            sql += " AND started_at <= ?"
            args.append(until)
        return self.db.execute(sql, args).fetchone()[0]

    def smoke_runs(
        self, recipe: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Newest first."""
        where = {"recipe = ?": recipe} if recipe else {}
        rows = self._select("smoke_runs", where, "started_at DESC, run_id DESC", limit, cols="doc")
        return [json.loads(r["doc"]) for r in rows]

    # -- heartbeats (serve: is the scheduler alive, and when does it check next?)
    def beat(self, name: str, **fields: Any) -> None:
        """Upsert the named heartbeat; only the given columns change."""
        row = {"name": name, **fields}
        cols = list(row)
        updates = ", ".join(f"{c} = excluded.{c}" for c in cols if c != "name")
        self.db.execute(
            f"INSERT INTO heartbeats ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
            f" ON CONFLICT(name) DO UPDATE SET {updates}",
            [row[c] for c in cols],
        )

    def heartbeat(self, name: str = "serve") -> dict[str, Any] | None:
        rows = self._rows("SELECT * FROM heartbeats WHERE name = ?", (name,))
        return rows[0] if rows else None
