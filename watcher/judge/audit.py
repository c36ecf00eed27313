"""The tracker's rows held against GitHub: what each row claims (its status emoji), what GitHub
says now about its links, and whether the two disagree. A pure function of stored item rows.

The maintainers' vocabulary: 🟢 landed (merged and in our pins) · 🔵 merged, awaiting propagation ·
🟡 open / in review · 🟠 open, stalled · 🔴 open, no PR yet · ⚫ local workaround · ✅ resolved ·
❌ closed without fix. A row's GitHub side is its most advanced link (a closed PR superseded by a
merged one counts as merged): merged > resolved > closed > open.

Pins are the seam left open here: 🟢 and 🔵 both agree with "merged" until a pin state is given
(`pins`: repo -> whether the merge is in the pinned build); with one, 🟢 needs it in, 🔵 needs
it out. Nothing here reads a pin itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from watcher.config.model import Config
from watcher.config.tracker import Link, Row, Tracker

# what GitHub says of a link, most advanced last
SIDES = ("unread", "open", "closed", "resolved", "merged")
SIDE_EMOJI = {"open": "🟡", "closed": "❌", "resolved": "✅", "merged": "🔵"}
# the GitHub sides each maintainer claim is true of
AGREES = {
    "🟢": {"merged", "resolved"},
    "🔵": {"merged", "resolved"},
    "🟡": {"open"},
    "🟠": {"open"},
    "🔴": {"open"},
    "⚫": {"open", "closed"},  # worked around locally: upstream has not fixed it
    "✅": {"merged", "resolved", "closed"},
    "❌": {"closed"},
}
PinCheck = Callable[[Link, dict[str, Any]], bool | None]


@dataclass
class LinkState:
    link: Link
    item_id: str | None  # None: not on the watch list (rerun init --adopt), or not readable
    side: str = "unread"
    words: str = ""  # e.g. "merged 2026-07-02, first in v0.24.0"
    url: str = ""
    stale: bool = False


@dataclass
class RowAudit:
    row: Row
    links: list[LinkState] = field(default_factory=list)
    side: str = "unread"
    claim: str | None = None
    disagrees: bool = False
    in_pin: bool | None = None  # the pins' word, when a PinCheck was given

    @property
    def trackable(self) -> bool:
        return bool(self.row.links)


@dataclass
class Audit:
    rows: list[RowAudit]

    def count(self, what: str) -> int:
        return {
            "rows": len(self.rows),
            "trackable": sum(r.trackable for r in self.rows),
            "untrackable": sum(not r.trackable for r in self.rows),
            "disagree": sum(r.disagrees for r in self.rows),
            "unread": sum(r.trackable and r.side == "unread" for r in self.rows),
            "no_claim": sum(r.trackable and r.claim is None for r in self.rows),
        }[what]


def item_for(cfg: Config, link: Link) -> str | None:
    """The watch list's item for a link: an issue or pull item of that repository and number,
    or a commit item whose sha and the link's agree (one may be the other's prefix)."""
    for item in cfg.items:
        if item.repo.lower() != link.repo.lower():
            continue
        if link.kind == "commit":
            if item.kind == "commit" and item.sha and _same_sha(item.sha, link.ref):
                return item.id
        elif link.kind == "discussion":
            if item.kind == "discussion" and item.number == link.number:
                return item.id
        elif item.number == link.number and item.kind in ("issue", "pull"):
            return item.id
    return None


def _same_sha(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return a.startswith(b) or b.startswith(a)


def link_side(kind: str, row: dict[str, Any] | None) -> tuple[str, str]:
    """(side, words) for one stored item row."""
    if not row or not row.get("state"):
        return "unread", "not read yet"
    state, details = row["state"], row.get("details") or {}
    release = f", first in {row['in_release']}" if row.get("in_release") else ""
    if details.get("is_pull") and state not in ("open", "draft"):
        # a pull request linked as /issues/N: the issues API cannot say whether it merged
        return (
            "unread",
            f"closed {_day(row.get('updated_at'))}; a pull request linked as an issue (link /pull/N to learn whether it merged)",
        )
    if kind == "discussion":
        when = _day(row.get("updated_at"))
        return {
            "open": ("open", "open"),
            "answered": ("open", "open, answered"),
            "resolved": ("resolved", f"closed as resolved {when}"),
        }.get(state, ("closed", f"closed ({str(details.get('state_reason')).lower()}) {when}"))
    if state == "committed":
        return "merged", f"committed {_day(row.get('updated_at'))}{release}"
    if state == "merged":
        return (
            "merged",
            f"merged {_day(details.get('merged_at') or row.get('updated_at'))}{release}",
        )
    if state == "closed" and row.get("superseded_state") == "merged":
        ref = details.get("superseded_ref") or f"#{row.get('superseded_by')}"
        when = _day(details.get("superseded_merged_at"))
        return "merged", f"closed, superseded by {ref} (merged {when}){release}"
    if state in ("open", "draft"):
        return "open", "open (draft)" if state == "draft" else "open"
    if state == "completed":
        return "resolved", f"closed as completed {_day(row.get('updated_at'))}"
    if state == "closed" and kind == "pull":
        return "closed", f"closed without merge {_day(row.get('updated_at'))}"
    if state == "closed-by-author":
        return "closed", f"closed by its author, nothing merged {_day(row.get('updated_at'))}"
    if state == "not_planned":
        return "closed", f"closed as not planned {_day(row.get('updated_at'))}"
    return "closed", f"closed {_day(row.get('updated_at'))}"


def _day(stamp: Any) -> str:
    return str(stamp)[:10] if stamp else "(date unknown)"


def audit_tracker(
    cfg: Config, tracker: Tracker, items: dict[str, dict[str, Any]], pins: PinCheck | None = None
) -> Audit:
    """Every row of the tracker, each link's GitHub side, the row's side and its disagreement."""
    out = []
    for row in tracker.rows:
        ra = RowAudit(row=row, claim=row.claim)
        for link in row.links:
            item_id = item_for(cfg, link)
            stored = items.get(item_id) if item_id else None
            ls = LinkState(link, item_id, url=link.url)
            if item_id is None:
                ls.words = "not on the watch list yet (watcher init --adopt)"
            else:
                ls.side, ls.words = link_side(link.kind, stored)
                ls.stale = bool(stored and stored.get("stale"))
                if ls.side == "merged" and pins is not None and stored:
                    ra.in_pin = pins(link, stored)
            ra.links.append(ls)
        ra.side = max((ls.side for ls in ra.links), key=SIDES.index, default="unread")
        if ra.claim and ra.side != "unread":
            ra.disagrees = ra.side not in AGREES[ra.claim]
            if not ra.disagrees and ra.in_pin is not None and ra.claim in ("🟢", "🔵"):
                ra.disagrees = (ra.claim == "🟢") != ra.in_pin
        out.append(ra)
    return Audit(out)


def github_emoji(ra: RowAudit) -> str:
    """The status the row would have from GitHub (and the pins, when known) alone."""
    if ra.side == "merged" and ra.in_pin:
        return "🟢"
    return SIDE_EMOJI.get(ra.side, "")
