"""Cost by repository, not by item: the repository events feed says which issues and pulls to read.

One conditional read of `GET /repos/{o}/{r}/events` per repository per cycle (it honours ETag
and `X-Poll-Interval`). An issue, pull or release item is read only when an event names it (or,
for what an event cannot name, when the kind of event that could change it appears), when the
feed's window (300 events, 90 days) overflowed since the last read, or on its turn of the slower
sweep: every item still gets its own conditional read at least every `sweep_every` cycles.
Otherwise the item's reads are answered from the cache, at no request.

GitHub documents the feed as not real-time (an event may appear 30 s to 6 h late): it saves
requests, it is no source of latency. Code and commit items use the per-repository head read
(watcher.poll.heads), which is not delayed.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from watcher.core.errors import GitHubError

if TYPE_CHECKING:
    from watcher.config.model import Item
    from watcher.github.client import GitHubClient

PER_PAGE = 100
MAX_PAGES = 3  # GitHub keeps 300 events per repository
KINDS = ("issue", "pull", "releases")
_RELEASE_TYPES = {"ReleaseEvent"}


@dataclass
class News:
    """What one repository's feed said this cycle."""

    everything: bool = False  # unread, overflowed or first read: read every item
    numbers: set[int] = field(default_factory=set)  # issues and pulls that events name
    releases: bool = False  # a release was published (or a tag made)
    pulls: bool = False  # a pull request changed or got a comment (a superseding PR may be one)


def _numbers(event: dict[str, Any]) -> set[int]:
    payload = event.get("payload") or {}
    out = set()
    for key in ("issue", "pull_request"):
        number = (payload.get(key) or {}).get("number")
        if isinstance(number, int):
            out.add(number)
    if isinstance(payload.get("number"), int):
        out.add(payload["number"])
    return out


class EventsFeed:
    """The feed reads of one cycle, and the sweep that bounds how long an item goes unread."""

    def __init__(
        self,
        client: GitHubClient,
        sweep_every: int = 10,
        interval: float | None = None,
        clock=time.time,
    ):
        self.client = client
        self.sweep_every = max(1, sweep_every)
        self._clock = clock
        self._lock = threading.Lock()
        self.news: dict[str, News] = {}
        # The sweep's turn: one more than the last saved cycle's, or as many more as intervals
        # passed since it was saved, so it still moves on where the database is not saved after
        # every cycle (the Actions workflow commits it only when something changed, or every 6 h).
        last = client.memo_get("events cycle") or {}
        now = clock()
        step = 1
        if interval and last.get("at") is not None:
            step = max(1, round((now - last["at"]) / interval))
        self.cycle = int(last.get("n", 0)) + step
        client.memo_put("events cycle", {"n": self.cycle, "at": now})

    def read(self, repo: str) -> News:
        """Read the repository's feed once this cycle (never raises: unread means read all)."""
        with self._lock:
            if repo in self.news:
                return self.news[repo]
        try:
            news = self._read(repo)
        except GitHubError:
            news = News(everything=True)
        with self._lock:
            self.news[repo] = news
        return news

    def _read(self, repo: str) -> News:
        key = f"events {repo}"
        memo = self.client.memo_get(key) or {}
        if memo.get("poll_after") and self._clock() < memo["poll_after"] and memo.get("newest"):
            return News()  # GitHub asked not to be polled again yet (X-Poll-Interval)
        page = self.client.get(f"/repos/{repo}/events", {"per_page": PER_PAGE})
        newest_seen = memo.get("newest")
        events = list(page.data)
        top = events[0]["id"] if events else newest_seen
        news = News()
        found = False
        pages = 1
        while True:
            for ev in events:
                if newest_seen is not None and ev["id"] == newest_seen:
                    found = True
                    break
                news.numbers |= _numbers(ev)
                news.releases |= ev.get("type") in _RELEASE_TYPES or (
                    ev.get("type") == "CreateEvent"
                    and (ev.get("payload") or {}).get("ref_type") == "tag"
                )
                news.pulls |= (ev.get("type") or "").startswith("PullRequest") or (
                    ev.get("type") == "IssueCommentEvent"
                    and "pull_request" in ((ev.get("payload") or {}).get("issue") or {})
                )
            if found or "next" not in page.links or pages >= MAX_PAGES or newest_seen is None:
                break
            page = self.client.get(page.links["next"])
            events, pages = list(page.data), pages + 1
        if not found and (newest_seen is None or top != newest_seen):
            news.everything = True  # the first read, or more happened than the window holds
        entry: dict[str, Any] = {"newest": top}
        if page.poll_interval:
            entry["poll_after"] = self._clock() + page.poll_interval
        self.client.memo_put(key, entry)
        return news

    # ------------------------------------------------------------------ which items to read

    def due(self, item: Item) -> bool:
        """The item's turn on the sweep: a full conditional read at least every N cycles."""
        slot = zlib.crc32(item.id.encode()) % self.sweep_every
        return self.cycle % self.sweep_every == slot

    def must_read(self, item: Item) -> bool:
        """Does this issue, pull or release item need its own reads this cycle?"""
        if item.kind not in KINDS or self.due(item):
            return True
        news = self.read(item.repo)
        if news.everything:
            return True
        if item.kind == "releases":
            return news.releases
        if item.number in news.numbers:
            return True
        kind = "pulls" if item.kind == "pull" else "issues"
        own = self.client.cached(f"/repos/{item.repo}/{kind}/{item.number}")
        if own is None:
            return True  # never read: nothing to answer from
        data = json.loads(own["body"])
        if item.kind == "pull" and data.get("state") == "closed":
            if data.get("merged") or data.get("merged_at"):
                # merged: the first release containing it may have been published since
                sha = data.get("merge_commit_sha")
                known = sha and self.client.memo_get(f"contains {item.repo} {sha}")
                return news.releases and not known
            # closed unmerged: only a merged PR from its own repository or a `supersede_from` one
            # counts, so their feeds say when to look again: a pull request or a comment on one
            # (a new cross-reference, a merge), or a release (the fix's first release)
            feeds = [news, *(self.read(other) for other in item.supersede_from)]
            return any(f.everything or f.pulls or f.releases for f in feeds)
        return False
