"""Issue comments: list (since, pages), create, get, edit and delete (author only)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from watcher.fakes.github.http import Ctx, HTTPError, Reply
from watcher.fakes.github.routes.common import body_json, issue_for, need_login
from watcher.fakes.github.shapes import comment_json
from watcher.fakes.github.util import iso, later, now

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub


def list_comments(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        rec = issue_for(ctx)
        items = gh._issue_comments(rec)
        since = ctx.query.get("since")
        if since:
            try:
                cutoff = iso(since)
            except ValueError as e:
                raise HTTPError(422, f"Invalid since: {since}") from e
            items = [c for c in items if c["updated_at"] >= cutoff]
        rendered = [comment_json(gh, c) for c in items]
        page, link = gh._paginate(rendered, ctx.query, ctx.raw_query, ctx.path)
        return gh._json(page, **link)


def create_comment(gh: FakeGitHub, ctx: Ctx) -> Reply:
    login = need_login(ctx)
    data = body_json(ctx)
    if not isinstance(data.get("body"), str):
        raise HTTPError(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
    with gh._lock:
        rec = issue_for(ctx)
        c = gh._new_comment(rec, data["body"], login, now())
        out = comment_json(gh, c)
        rec["updated_at"] = max(rec["updated_at"], c["created_at"])
    reply = gh._json(out, 201, headers={"Location": out["url"]})
    reply.cacheable = False
    reply.headers["ETag"] = '"' + hashlib.sha256(reply.body).hexdigest() + '"'
    return reply


def comment_for(gh: FakeGitHub, ctx: Ctx) -> dict:
    c = gh._comments.get(int(ctx.params["comment_id"]))
    if c is None or c["issue"]["repo"] is not ctx.repo:
        raise HTTPError(404, "Not Found")
    return c


def get_comment(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        c = comment_for(gh, ctx)
        return gh._json(comment_json(gh, c), last_modified=c["updated_at"])


def update_comment(gh: FakeGitHub, ctx: Ctx) -> Reply:
    login = need_login(ctx)
    data = body_json(ctx)
    if not isinstance(data.get("body"), str):
        raise HTTPError(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
    with gh._lock:
        c = comment_for(gh, ctx)
        if c["user"].lower() != login.lower():
            raise HTTPError(403, "You must be the author of this comment to edit it.")
        c["body"] = data["body"]
        c["updated_at"] = max(now(), later(c["updated_at"], 1))
        reply = gh._json(comment_json(gh, c))
    reply.cacheable = False
    return reply


def delete_comment(gh: FakeGitHub, ctx: Ctx) -> Reply:
    login = need_login(ctx)
    with gh._lock:
        c = comment_for(gh, ctx)
        if c["user"].lower() != login.lower():
            raise HTTPError(403, "You must be the author of this comment to delete it.")
        del gh._comments[c["id"]]
    return Reply(204)
