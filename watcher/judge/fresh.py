"""Have checks stopped? One freshness rule for `watcher status`, status.json and the site.

A check is stale when nothing was read for more than `stale_after` x `interval`. A stamp in the
future (written before the clock stepped back) counts as now, never as a negative age; before
the first check there is no age, and each reader says "never" in its own words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from watcher.config.model import Config
from watcher.core.clock import iso, parse_iso


@dataclass(frozen=True)
class Freshness:
    """How old the last check is, and whether that means checks have stopped."""

    last_checked: str | None  # as stored (a future stamp is shown as it was written)
    age_s: float | None  # None before the first check
    stale_after_s: float
    stale_at: str | None  # when a reader of a static copy should call it stopped
    stale: bool  # a check exists and it is older than stale_after_s


def freshness(cfg: Config, last_checked: str | None, now: datetime) -> Freshness:
    """The one rule: age = now - last check (clamped at 0), stale past stale_after x interval."""
    limit = cfg.settings.stale_after * cfg.settings.interval
    last = parse_iso(last_checked)
    if last is None:
        return Freshness(None, None, limit, None, False)
    seen = min(last, now)
    age = (now - seen).total_seconds()
    return Freshness(last_checked, age, limit, iso(seen + timedelta(seconds=limit)), age > limit)
