"""The SQLite store: current state in upserted tables, history in append-only ones.

One file (data/watcher.db), WAL mode so a reader (the site, `watcher status`) never blocks a cycle.
Schema changes go through sqlite-utils `Migrations` (watcher.store.schema), so an old database upgrades
in place. The comment outbox and the smoke triggers are mixed in from their own modules.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from watcher.core.errors import WatcherError
from watcher.store.bisects import BisectStore
from watcher.store.comments import CommentStore
from watcher.store.pins import PinStore
from watcher.store.schema import migrations, span_data
from watcher.store.smokerun import SETUP_PREFIX
from watcher.store.triggers import TriggerStore


class LazyEntry(dict):
    """An etag-cache entry whose `body` is read from the database on first use (`has_body` says
    whether there is one without reading it), through a short connection of its own: the poll
    threads may ask, and the store's connection belongs to the thread that opened it."""

    def __init__(self, url: str, row: dict[str, Any], path: str):
        self.url = url
        self.has_body = bool(row.pop("has_body"))
        super().__init__(row)
        self._path = path

    def _body(self) -> str | None:
        if "body" not in self.keys():
            body = None
            if self.has_body:
                uri = Path(self._path).absolute().as_uri() + "?mode=ro"
                with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=30.0)) as conn:
                    row = conn.execute(
                        "SELECT body FROM etags WHERE url = ?", (self.url,)
                    ).fetchone()
                    body = row[0] if row else None
            dict.__setitem__(self, "body", body)
        return dict.__getitem__(self, "body")

    def __getitem__(self, key: str) -> Any:
        return self._body() if key == "body" else dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return self._body() if key == "body" else dict.get(self, key, default)


class Store(CommentStore, TriggerStore, BisectStore, PinStore):
    """Thin, named operations over the database; callers never write SQL."""

    def __init__(self, path: str | Path, busy_s: float = 30.0):
        """`busy_s`: how long a statement waits for another writer's lock."""
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):  # private: SQLite's WAL files copy the mode
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            conn = sqlite3.connect(str(self.path), timeout=busy_s, isolation_level=None)
            self.db = sqlite_utils.Database(conn)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute(f"PRAGMA busy_timeout={int(busy_s * 1000)}")
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
        """Every entry, bodies included (a small table: tests, tools); a cycle uses etag_index."""
        return {r["url"]: r for r in self._rows("SELECT * FROM etags")}

    def etag_index(self) -> dict[str, LazyEntry]:
        """Every entry without its body, which is read from the file when first asked for (a
        304 answered from it, a memo): a cycle no longer holds every cached answer in memory,
        only those it uses. The table is written only after a cycle's reads (under its lock)."""
        rows = self._rows(
            "SELECT url, etag, last_modified, link, fetched_at, body IS NOT NULL AS has_body"
            " FROM etags"
        )
        path = str(self.path)
        return {r["url"]: LazyEntry(r.pop("url"), r, path) for r in rows}

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
        """Append an observation and fold it into the item's newest state span."""
        data_json = json.dumps(data, sort_keys=True)
        cur = self.db.execute(
            "INSERT INTO observations (item_id, cycle_id, observed_at, state, title, fingerprint, data, error)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (item_id, cycle_id, at, state, title, fingerprint, data_json, error),
        )
        obs_id = cur.lastrowid
        # `IS` compares as the reader would: NULL equals NULL, values with the columns' affinity
        extended = self.db.execute(
            "UPDATE state_spans SET to_at = ?, count = count + 1, last_observation = ?"
            " WHERE id = (SELECT MAX(id) FROM state_spans WHERE item_id = ?)"
            " AND state IS ? AND fingerprint IS ? AND error IS ?",
            (at, obs_id, item_id, state, fingerprint, error),
        ).rowcount
        if not extended:
            self.db.execute(
                "INSERT INTO state_spans (item_id, state, fingerprint, error, title, data,"
                " from_at, to_at, count, last_observation) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
                (item_id, state, fingerprint, error, title, span_data(data_json), at, at, obs_id),
            )

    def observations(
        self, item_id: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        where = {"item_id = ?": item_id} if item_id else {}
        return self._select("observations", where, "id DESC", limit, json_cols=("data",))

    def state_spans(self, item_id: str, limit: int) -> list[dict[str, Any]]:
        """The item's newest `limit` state spans, newest first (what `site.state_spans` folds)."""
        rows = self.db.execute(
            "SELECT state, title, error, data, from_at, to_at, count FROM state_spans"
            " WHERE item_id = ? ORDER BY id DESC LIMIT ?",
            (item_id, int(limit)),
        )
        decoded: dict[str, dict[str, Any]] = {}  # the same few `data` texts repeat: decode once
        out = []
        for state, title, error, data, from_at, to_at, count in rows:
            if data not in decoded:
                decoded[data] = json.loads(data) if data else {}
            out.append(
                {
                    "state": state,
                    "title": title,
                    "error": error,
                    **decoded[data],
                    "from": from_at,
                    "to": to_at,
                    "count": count,
                }
            )
        return out

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
        self,
        after: int = 0,
        upto: int | None = None,
        limit: int | None = None,
        subjects: set[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Newest first; `subjects` keeps only events about those items, blockers or pages."""
        where: dict[str, Any] = {"id > ?": after}
        if upto is not None:
            where["id <= ?"] = upto
        if subjects is not None:
            names = sorted(subjects)
            where["subject IN (SELECT value FROM json_each(?))"] = json.dumps(names)
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

    def count_smoke_runs(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM smoke_runs").fetchone()[0]

    def evaluation_runs(self) -> list[dict[str, Any]]:
        """Each recipe's newest target-hardware run with a verdict: all `evaluate` reads.

        The same answer as `evaluate.latest_target_runs(store.smoke_runs())`, without decoding
        every run ever stored.
        """
        recipes = [r[0] for r in self.db.execute("SELECT DISTINCT recipe FROM smoke_runs")]
        out = []
        for recipe in recipes:
            row = self.db.execute(
                "SELECT doc FROM smoke_runs WHERE recipe IS ? AND matches_target = 1"
                " AND outcome NOT IN ('skipped', 'started', 'interrupted')"
                " AND json_extract(doc, '$.bisect') IS NULL"  # a bisect step: an old build
                " AND NOT (outcome = 'error' AND json_extract(doc, '$.reason') LIKE ?)"  # setup
                " ORDER BY started_at DESC, rowid DESC LIMIT 1",
                (recipe, f"{SETUP_PREFIX}%"),
            ).fetchone()
            if row:
                out.append(json.loads(row[0]))
        return out

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
        # within one second (started_at's resolution) the later write comes first: a run's row is
        # replaced as it finishes, so rowid follows the order runs were written, not a random id
        rows = self._select("smoke_runs", where, "started_at DESC, rowid DESC", limit, cols="doc")
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
