"""The clock: one timestamp format everywhere (2026-11-30T15:23:42Z), in UTC, to the second.

Every stage stamps and reads times through these three, so the HTTP client, the lock and the
pages need not import the store for them.
"""

from __future__ import annotations

from datetime import UTC, datetime


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
