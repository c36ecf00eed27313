"""Issues and pulls: GET one issue, GET one pull."""

from __future__ import annotations

from typing import TYPE_CHECKING

from watcher.fakes.github.http import Ctx, HTTPError, Reply
from watcher.fakes.github.routes.common import issue_for
from watcher.fakes.github.shapes import issue_json, pull_json

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub


def get_issue(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        rec = issue_for(ctx)
        return gh._json(issue_json(gh, rec), last_modified=rec["updated_at"])


def get_pull(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        rec = issue_for(ctx)
        if not rec["is_pull"]:
            raise HTTPError(404, "Not Found")
        return gh._json(pull_json(gh, rec), last_modified=rec["updated_at"])
