"""Commits and compare: the history list (sha/path/since/until, pages), one commit, compare."""

from __future__ import annotations

from typing import TYPE_CHECKING

from watcher.fakes.github.http import Ctx, HTTPError, Reply
from watcher.fakes.github.shapes import api_url
from watcher.fakes.github.shapes_git import commit_json, files_json
from watcher.fakes.github.util import WEB, iso, to_int

FILES_PER_PAGE = 300  # GitHub's page of one commit's files
FILES_MAX = 3000  # and the most it lists at all

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub


def list_commits(gh: FakeGitHub, ctx: Ctx) -> Reply:
    """Newest first from `sha` (branch, tag or sha; default branch if absent), first parents."""
    with gh._lock:
        r = ctx.repo
        if not r.git.commits:
            raise HTTPError(409, "Git Repository is empty.")
        ref = ctx.query.get("sha") or "HEAD"
        top = r.git.resolve(ref)
        if top is None:
            raise HTTPError(404, f"No commit found for SHA: {ref}")
        chosen = r.git.ancestors(top)
        path = ctx.query.get("path", "").strip("/")
        if path:
            chosen = [
                c for c in chosen if any(f == path or f.startswith(path + "/") for f in c["files"])
            ]
        try:
            since = iso(ctx.query["since"]) if ctx.query.get("since") else None
            until = iso(ctx.query["until"]) if ctx.query.get("until") else None
        except ValueError as e:
            raise HTTPError(422, "Invalid time in since/until") from e
        if since:
            chosen = [c for c in chosen if c["date"] >= since]
        if until:
            chosen = [c for c in chosen if c["date"] <= until]
        page, link = gh._paginate(chosen, ctx.query, ctx.raw_query, ctx.path)
        newest = chosen[0]["date"] if chosen else None
        return gh._json([commit_json(gh, r, c) for c in page], last_modified=newest, **link)


def get_commit(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        r = ctx.repo
        ref = ctx.params["ref"]
        target = r.git.resolve(ref)
        if target is None:
            raise HTTPError(422, f"No commit found for SHA: {ref}")
        c = r.git.commits[target]
        if "application/vnd.github.sha" in ctx.headers.get("accept", ""):
            reply = Reply(200, c["sha"].encode(), {"Content-Type": "text/plain; charset=utf-8"})
            reply.cacheable = True
            return reply
        # GitHub lists at most 300 files per page of one commit (Link rel="next" for the rest,
        # up to 3,000); every page repeats the commit itself.
        files = files_json(gh, r, [c])[:FILES_MAX]
        last = max(1, -(-len(files) // FILES_PER_PAGE))
        page = min(max(to_int(ctx.query.get("page"), 1), 1), last + 1)
        chunk = files[(page - 1) * FILES_PER_PAGE : page * FILES_PER_PAGE]
        links = []
        if page < last:
            links = [("next", f"?page={page + 1}"), ("last", f"?page={last}")]
        return gh._json(
            commit_json(gh, r, c, detail=True, files=chunk),
            last_modified=c["date"],
            links=links,
            link_base=gh.url + gh._link_path(ctx.path),
        )


def compare(gh: FakeGitHub, ctx: Ctx) -> Reply:
    """base...head: ahead, behind, identical or diverged, with the commits head adds."""
    with gh._lock:
        r = ctx.repo
        base_ref, sep, head_ref = ctx.params["basehead"].partition("...")
        if not sep:
            raise HTTPError(404, "Not Found")
        base, head = r.git.resolve(base_ref), r.git.resolve(head_ref)
        if base is None or head is None:
            raise HTTPError(404, "Not Found")
        head_line = r.git.ancestors(head)
        base_line = r.git.ancestors(base)
        base_shas = {c["sha"] for c in base_line}
        ahead = next((i for i, c in enumerate(head_line) if c["sha"] in base_shas), None)
        if ahead is None:
            raise HTTPError(404, "Not Found")  # no common history
        merge_base = head_line[ahead]
        behind = next(i for i, c in enumerate(base_line) if c["sha"] == merge_base["sha"])
        between = list(reversed(head_line[:ahead]))
        if ahead and behind:
            status = "diverged"
        elif ahead:
            status = "ahead"
        elif behind:
            status = "behind"
        else:
            status = "identical"
        api = api_url(gh, r)
        spec = f"{base_ref}...{head_ref}"
        html = f"{WEB}/{r.full_name}/compare/{spec}"
        permalink = f"{r.owner}:{base}...{r.owner}:{head}"
        out = {
            "url": f"{api}/compare/{spec}",
            "html_url": html,
            "permalink_url": f"{WEB}/{r.full_name}/compare/{permalink}",
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "base_commit": commit_json(gh, r, r.git.commits[base]),
            "merge_base_commit": commit_json(gh, r, merge_base),
            "status": status,
            "ahead_by": ahead,
            "behind_by": behind,
            "total_commits": len(between),
            "commits": [commit_json(gh, r, c) for c in between[-250:]],
            "files": files_json(gh, r, between)[:300],
        }
        return gh._json(out)
