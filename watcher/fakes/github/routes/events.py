"""The repository events feed: newest first, paginated, at most 300, with X-Poll-Interval."""

from __future__ import annotations

from typing import TYPE_CHECKING

from watcher.fakes.github import events
from watcher.fakes.github.http import Ctx, Reply

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub


def list_events(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        rendered = events.events_json(gh, ctx.repo)
        page, link = gh._paginate(rendered, ctx.query, ctx.raw_query, ctx.path)
        every = gh.events_poll_interval
        headers = {"X-Poll-Interval": str(every)} if every is not None else {}
        return gh._json(page, headers=headers, **link)
