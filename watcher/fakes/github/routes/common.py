"""What every route needs: the issue named in the path, the caller's login, a JSON body."""

from __future__ import annotations

import json

from watcher.fakes.github.http import Ctx, HTTPError


def issue_for(ctx: Ctx) -> dict:
    rec = ctx.repo.issues.get(int(ctx.params["number"]))
    if rec is None:
        raise HTTPError(404, "Not Found")
    return rec


def need_login(ctx: Ctx) -> str:
    if ctx.login is None:
        raise HTTPError(401, "Requires authentication")
    return ctx.login


def body_json(ctx: Ctx) -> dict:
    try:
        data = json.loads(ctx.body or b"{}")
    except ValueError as e:
        raise HTTPError(400, "Problems parsing JSON") from e
    if not isinstance(data, dict):
        raise HTTPError(400, "Problems parsing JSON")
    return data
