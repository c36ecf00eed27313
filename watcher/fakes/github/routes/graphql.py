"""POST /graphql: the one GraphQL read watcher makes, a repository's discussion by number.

GitHub serves discussions through its GraphQL API only (docs: "Using the GraphQL API for
Discussions"). The answer has GitHub's GraphQL shape: 200 with `data`, and `errors` entries of
type NOT_FOUND (with `data.repository` or `data.repository.discussion` null) for what does not
exist; 401 without a token, as GraphQL needs one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from watcher.fakes.github.http import Ctx, HTTPError, Reply
from watcher.fakes.github.routes.common import body_json, need_login

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub

FIELDS = (
    "number",
    "title",
    "url",
    "closed",
    "closedAt",
    "stateReason",
    "isAnswered",
    "createdAt",
    "updatedAt",
)


def query(gh: FakeGitHub, ctx: Ctx) -> Reply:
    need_login(ctx)
    data = body_json(ctx)
    text, variables = data.get("query"), data.get("variables") or {}
    if not isinstance(text, str) or "discussion(" not in text or not isinstance(variables, dict):
        raise HTTPError(400, "the fake GitHub answers one query: repository.discussion(number:)")
    owner, name, number = variables.get("owner"), variables.get("name"), variables.get("number")
    if not (isinstance(owner, str) and isinstance(name, str) and isinstance(number, int)):
        raise HTTPError(400, "variables owner, name (strings) and number (an integer) are required")
    with gh._lock:
        repo = gh._repos.get(f"{owner}/{name}".lower())
        if repo is None:
            return gh._json(
                {
                    "data": {"repository": None},
                    "errors": [
                        _not_found(
                            f"Could not resolve to a Repository with the name '{owner}/{name}'.",
                            ["repository"],
                        )
                    ],
                }
            )
        rec = repo.discussions.get(number)
        if rec is None:
            return gh._json(
                {
                    "data": {"repository": {"discussion": None}},
                    "errors": [
                        _not_found(
                            f"Could not resolve to a Discussion with the number of {number}.",
                            ["repository", "discussion"],
                        )
                    ],
                }
            )
        return gh._json({"data": {"repository": {"discussion": {k: rec[k] for k in FIELDS}}}})


def _not_found(message: str, path: list[str]) -> dict:
    return {"type": "NOT_FOUND", "path": path, "message": message}
