"""The issue timeline (cross-references, labels, closes), paginated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from watcher.fakes.github.http import Ctx, Reply
from watcher.fakes.github.routes.common import issue_for
from watcher.fakes.github.shapes import event_json

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub


def get_timeline(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        rec = issue_for(ctx)
        events = [event_json(gh, ctx.repo, ev) for ev in ctx.repo.timelines[rec["number"]]]
        page, link = gh._paginate(events, ctx.query, ctx.raw_query, ctx.path)
        return gh._json(page, **link)
