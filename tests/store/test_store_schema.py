"""An existing database keeps migrating after the schema moved to `watcher.store.schema`.

tests/db/main-97a3466.sql is a database that watcher's code at main 97a3466 (before the split)
wrote, a row in every table, dumped as SQL text. A migration is known by its function name: a
renamed or dropped one would run again on such a file (and fail on its existing tables) or leave
it behind the schema a new database gets.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlite_utils

from watcher.store.db import Store
from watcher.store.schema import migrations

OLD_DUMP = Path(__file__).parents[1] / "db" / "main-97a3466.sql"
MAIN_ORDER = [
    "m001_initial",
    "m030_comments",
    "m010_serve_heartbeat",
    "m040_state_spans",
    "m041_smoke_runs_newest_first",
    "m042_smoke_triggers",
]


def load_dump(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(OLD_DUMP.read_text(encoding="utf-8"))
    conn.close()
    return path


def applied(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT name, applied_at FROM _sqlite_migrations WHERE migration_set = 'watcher'"
            " ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def schema(path: Path) -> set[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL")
        return set(rows.fetchall())
    finally:
        conn.close()


# Added after the dump was written: they run once on an old database, and only at the end.
NEWER = ["m055_bisects", "m060_pins"]


def test_migration_names_and_order_are_the_ones_existing_databases_recorded():
    assert [m.name for m in migrations._migrations] == MAIN_ORDER + NEWER


def test_a_database_written_before_the_split_opens_without_rerunning_a_migration(tmp_path):
    path = load_dump(tmp_path / "old.db")
    before = applied(path)
    assert [name for name, _ in before] == MAIN_ORDER
    conn = sqlite3.connect(path)
    assert [m.name for m in migrations.pending(sqlite_utils.Database(conn))] == NEWER
    conn.close()

    store = Store(path)
    try:
        assert store.items()["vllm-project/vllm#1"]["details"] == {"a": 1}
        assert [s["count"] for s in store.state_spans("vllm-project/vllm#1", 10)] == [2]
        assert store.smoke_runs()[0]["run_id"] == "r-1"
        assert [r["state"] for r in store.outbox()] == ["pending"]
        assert store.sticky("a", "o/r", 3)["comment_id"] == 9
        assert store.notify_get("k") == "v"
        assert store.triggers()["r"]["reasons"] == ["ready"]
        assert store.heartbeat()["pid"] == 1
    finally:
        store.close()
    after = applied(path)
    assert after[: len(before)] == before  # same names, same applied_at: nothing ran again
    assert [name for name, _ in after[len(before) :]] == NEWER

    fresh = tmp_path / "new.db"
    Store(fresh).close()
    assert schema(path) == schema(fresh)
