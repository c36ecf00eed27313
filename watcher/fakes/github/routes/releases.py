"""Releases (all, latest, by tag) and tags."""

from __future__ import annotations

from typing import TYPE_CHECKING

from watcher.fakes.github.http import Ctx, HTTPError, Reply
from watcher.fakes.github.shapes_git import release_json, tag_json
from watcher.fakes.github.state import Repo

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub


def sorted_releases(r: Repo) -> list[dict]:
    return sorted(r.releases, key=lambda x: (x["published_at"], x["seq"]), reverse=True)


def list_releases(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        r = ctx.repo
        rendered = [release_json(gh, r, x) for x in sorted_releases(r)]
        page, link = gh._paginate(rendered, ctx.query, ctx.raw_query, ctx.path)
        return gh._json(page, **link)


def latest_release(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        r = ctx.repo
        for rel in sorted_releases(r):
            if not rel["draft"] and not rel["prerelease"]:
                return gh._json(release_json(gh, r, rel), last_modified=rel["published_at"])
        raise HTTPError(404, "Not Found")


def release_by_tag(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        r = ctx.repo
        for rel in r.releases:
            if rel["tag"] == ctx.params["tag"]:
                return gh._json(release_json(gh, r, rel), last_modified=rel["published_at"])
        raise HTTPError(404, "Not Found")


def list_tags(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        r = ctx.repo
        rendered = [tag_json(gh, r, n, s) for n, s in reversed(list(r.git.tags.items()))]
        page, link = gh._paginate(rendered, ctx.query, ctx.raw_query, ctx.path)
        return gh._json(page, **link)
