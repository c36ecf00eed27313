"""Is a new data/watcher.db worth a commit? `watcher db-changed [--every 6h] OLD NEW`

Exit 0, saying why, when the state changed or OLD's newest cycle is more than --every older than
NEW's; exit 1 when only per-cycle bookkeeping changed. The GitHub Actions workflow
(.github/workflows/watch.yml) commits the database on every real change, and a quiet one only
every few hours, so months of half-hourly runs stay a small git history. It compares the two
files, not git history, so it works in a shallow checkout.

Bookkeeping, which every cycle rewrites: the cycles table (one row per cycle), etags (the
conditional-request cache; losing an update costs one request), heartbeats, observations (a row
per failed read; a real change also adds an event) and items (checked_at moves every cycle; a
state change also adds an event); in statuses only updated_at moves every cycle. Any other table
or column, including ones added later, counts. It ships in the package, so a guide's workflow
needs nothing but the installed watcher.
"""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import datetime

BOOKKEEPING = {"cycles", "etags", "heartbeats", "observations", "items"}
VOLATILE_COLUMNS = {"statuses": {"updated_at"}}


def table_digests(conn: sqlite3.Connection) -> dict[str, str]:
    names = [
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if r[0] not in BOOKKEEPING and not r[0].startswith("sqlite_")
    ]
    out = {}
    for name in sorted(names):
        skip = VOLATILE_COLUMNS.get(name, set())
        cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{name}")') if r[1] not in skip]
        select = ", ".join(f'"{c}"' for c in cols)
        h = hashlib.sha256()
        for row in conn.execute(f'SELECT {select} FROM "{name}" ORDER BY rowid'):
            h.update(repr(row).encode())
        out[name] = h.hexdigest()
    return out


def last_cycle(conn: sqlite3.Connection) -> datetime | None:
    try:
        row = conn.execute("SELECT MAX(finished_at) FROM cycles").fetchone()
    except sqlite3.OperationalError:
        return None
    return datetime.fromisoformat(row[0].replace("Z", "+00:00")) if row and row[0] else None


def decide(old_path: str, new_path: str, every_s: float | None) -> tuple[bool, str]:
    """(worth a commit, why). Both files are opened read-only; sqlite3.Error propagates."""
    old = sqlite3.connect(f"file:{old_path}?mode=ro", uri=True)
    new = sqlite3.connect(f"file:{new_path}?mode=ro", uri=True)
    try:
        before, after = table_digests(old), table_digests(new)
        changed = sorted(t for t in before.keys() | after.keys() if before.get(t) != after.get(t))
        if changed:
            return True, "changed: " + ", ".join(changed)
        then, now = last_cycle(old), last_cycle(new)
        if every_s is not None and (
            then is None or (now and (now - then).total_seconds() >= every_s)
        ):
            age = "never" if then is None else f"{(now - then).total_seconds() / 3600:.1f} h"
            return True, f"periodic: the stored state's last cycle is {age} old"
        return False, "quiet: only bookkeeping changed (" + ", ".join(sorted(BOOKKEEPING)) + ")"
    finally:
        old.close()
        new.close()
