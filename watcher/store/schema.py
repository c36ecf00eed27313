"""The database schema, as the sqlite-utils migrations that build it and upgrade old files.

A database records each migration by its function name once it ran, so names never change and
new ones are only ever added at the end; the registration order below is the order a new
database is built in (m030 was added before m010, and stays there).
"""

from __future__ import annotations

import json
from typing import Any

import sqlite_utils
from sqlite_utils import Migrations

migrations = Migrations("watcher")


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


@migrations()
def m010_serve_heartbeat(db: sqlite_utils.Database) -> None:
    """One row per long-running scheduler (`serve`): alive, when it beat, when it checks next."""
    db.execute(
        """CREATE TABLE heartbeats (
            name TEXT PRIMARY KEY, pid INTEGER, host TEXT, started_at TEXT, beat_at TEXT,
            next_run_at TEXT, interval_s REAL, cycles INTEGER NOT NULL DEFAULT 0,
            stopped_at TEXT, stop_reason TEXT)"""
    )


# ------------------------------------------------------------------ item history, folded


SPAN_DATA = ("superseded_by", "superseded_state", "in_release")  # shown from a span's first row


def span_data(data_json: str | None) -> str:
    """The JSON of the observation fields a span shows, from its stored `data`."""
    data = json.loads(data_json) if data_json else None
    data = data if isinstance(data, dict) else {}
    return json.dumps({k: data.get(k) for k in SPAN_DATA}, sort_keys=True)


@migrations()
def m040_state_spans(db: sqlite_utils.Database) -> None:
    """Item history as spans of equal (state, fingerprint, error), kept as observations arrive.

    An item page shows the newest spans; folding every observation on each build made the build
    slower as the database aged. The backfill folds the existing observations once, in id order.
    """
    db.execute(
        """CREATE TABLE state_spans (
            id INTEGER PRIMARY KEY, item_id TEXT NOT NULL, state TEXT, fingerprint TEXT,
            error TEXT, title TEXT, data TEXT, from_at TEXT, to_at TEXT,
            count INTEGER NOT NULL, last_observation INTEGER NOT NULL)"""
    )
    db.execute("CREATE INDEX state_spans_item ON state_spans(item_id, id)")
    open_spans: dict[str, list[Any]] = {}  # item -> the span being folded, not yet written

    def write(span: list[Any]) -> None:
        db.execute(
            "INSERT INTO state_spans (item_id, state, fingerprint, error, title, data, from_at,"
            " to_at, count, last_observation) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            span,
        )

    rows = db.conn.execute(
        "SELECT id, item_id, observed_at, state, title, fingerprint, data, error"
        " FROM observations ORDER BY id"
    )
    for obs_id, item_id, at, state, title, fingerprint, data, error in rows:
        span = open_spans.get(item_id)
        if span and (span[1], span[2], span[3]) == (state, fingerprint, error):
            span[7], span[8], span[9] = at, span[8] + 1, obs_id
            continue
        if span:
            write(span)
        open_spans[item_id] = [
            item_id,
            state,
            fingerprint,
            error,
            title,
            span_data(data),
            at,
            at,
            1,
            obs_id,
        ]
    for span in sorted(open_spans.values(), key=lambda s: s[9]):
        write(span)


@migrations()
def m041_smoke_runs_newest_first(db: sqlite_utils.Database) -> None:
    """Newest-first reads of smoke runs walk an index instead of sorting every stored run."""
    db.execute("CREATE INDEX smoke_runs_started ON smoke_runs(started_at, run_id)")
    db.execute("CREATE INDEX smoke_runs_recipe_started ON smoke_runs(recipe, started_at, run_id)")


@migrations()
def m042_smoke_triggers(db: sqlite_utils.Database) -> None:
    """Smoke triggers not yet answered: waiting for hardware that can run them, or dispatched to
    GitHub Actions and not yet collected. One per recipe, so a trigger is never run twice."""
    db.execute(
        """CREATE TABLE smoke_triggers (
            recipe TEXT PRIMARY KEY,
            state TEXT NOT NULL,  -- waiting | dispatched
            reasons TEXT NOT NULL DEFAULT '[]', since TEXT, updated_at TEXT,
            run_id TEXT, actions_run_id INTEGER, actions_run_url TEXT, dispatched_at TEXT,
            note TEXT, attempts INTEGER NOT NULL DEFAULT 0)"""
    )


@migrations()
def m055_bisects(db: sqlite_utils.Database) -> None:
    """`watcher bisect` runs: the grid, the steps taken and the report, kept so a bisect that
    stops (a spent daily budget, Ctrl-C) resumes where it was."""
    db.execute(
        """CREATE TABLE bisects (
            id TEXT PRIMARY KEY, recipe TEXT NOT NULL, mode TEXT NOT NULL,
            good TEXT NOT NULL, bad TEXT NOT NULL,
            status TEXT NOT NULL,  -- running | paused | done | failed | insufficient-data
            state TEXT NOT NULL, created_at TEXT, updated_at TEXT)"""
    )
    db.execute("CREATE INDEX bisects_recipe ON bisects(recipe, created_at)")


@migrations()
def m060_pins(db: sqlite_utils.Database) -> None:
    """Each recipe's pin (watcher.poll.pins): kept across cycles so a vanished build still shows
    its last known digest and when it was last seen."""
    db.execute("CREATE TABLE pins (recipe TEXT PRIMARY KEY, doc TEXT NOT NULL, updated_at TEXT)")
