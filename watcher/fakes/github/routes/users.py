"""The caller (GET /user) and the rate limit (GET /rate_limit, free)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from watcher.fakes.github.http import Ctx, HTTPError, Reply
from watcher.fakes.github.routes.common import need_login
from watcher.fakes.github.shapes import permission_json, public_user_json, rate_json

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub


def rate_limit_route(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        # Rendered with this request already counted (it is free, so nothing changes).
        reply = gh._json(rate_json(gh))
    reply.cacheable = False
    reply.rate_free = True
    return reply


def get_user(gh: FakeGitHub, ctx: Ctx) -> Reply:
    login = need_login(ctx)
    if login.endswith("[bot]"):  # an installation token, such as Actions' GITHUB_TOKEN
        raise HTTPError(403, "Resource not accessible by integration")
    with gh._lock:
        return gh._json(public_user_json(gh, login))


def collaborator_permission(gh: FakeGitHub, ctx: Ctx) -> Reply:
    """A user's role on the repo (set_permission; anyone else reads a public repo: "read")."""
    with gh._lock:
        login = ctx.params["username"]
        role = ctx.repo.permissions.get(login.lower(), "read")
        return gh._json(permission_json(gh, login, role))
