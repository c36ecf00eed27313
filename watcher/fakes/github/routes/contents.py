"""The repository, its branches and git refs, file contents at a ref and git trees.

A ref or path the state knows nothing about is 404; a commit whose files the state cannot
tell (`Unknown`, e.g. a replay without that object) is 503, because unknown is not missing.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from watcher.fakes.github.git import Unknown
from watcher.fakes.github.http import NEVER_HEADERS, Ctx, HTTPError, Reply
from watcher.fakes.github.shapes import repo_json
from watcher.fakes.github.shapes_git import (
    blob_json,
    branch_json,
    content_json,
    ref_json,
    tree_entry,
    tree_json,
    trees_of,
)

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub
    from watcher.fakes.github.state import Repo


def get_repo(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        return gh._json(repo_json(gh, ctx.repo))


def get_branch(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        r = ctx.repo
        name = ctx.params["branch"]
        target = r.git.branches.get(name)
        if target is None:
            raise HTTPError(404, "Branch not found")
        c = r.git.commits[target]
        return gh._json(branch_json(gh, r, name, c), last_modified=c["date"])


def _unknown(e: Unknown) -> HTTPError:
    return HTTPError(
        503,
        f"{e.args[0] if e.args else 'this object'} is not in the recorded history",
        NEVER_HEADERS,
    )


def _commit_at(r: Repo, ref: str) -> dict:
    target = r.git.resolve(ref)
    if target is None:
        raise HTTPError(404, f"No commit found for the ref {ref}")
    return r.git.commits[target]


def get_contents(gh: FakeGitHub, ctx: Ctx) -> Reply:
    """A file (base64 content, git blob sha) or a folder's entries, at `ref` (default branch)."""
    with gh._lock:
        r = ctx.repo
        ref = ctx.query.get("ref") or r.git.default_branch
        path = (ctx.params.get("path") or "").strip("/")
        if not r.git.commits:
            raise HTTPError(404, "This repository is empty.")
        c = _commit_at(r, ref)
        try:
            flat = gh.tree_at(r.full_name, c["sha"])
            if path in flat:
                data = gh.blob(r.full_name, flat[path])
                out = content_json(gh, r, ref, path, "file", flat[path], data)
                return gh._json(out, last_modified=c["date"])
            _, dirs = trees_of(gh, r, c["sha"])
            if path not in dirs:
                raise HTTPError(404, "Not Found")
            entries = []
            for name, kind, ident in dirs[path][1]:
                child = f"{path}/{name}" if path else name
                kind = "dir" if kind == "tree" else "file"
                entry = content_json(gh, r, ref, child, kind, ident, None)
                if kind == "file":
                    entry["size"] = len(gh.blob(r.full_name, ident))
                entries.append(entry)
        except Unknown as e:
            raise _unknown(e) from e
        return gh._json(entries, last_modified=c["date"])


def get_blob(gh: FakeGitHub, ctx: Ctx) -> Reply:
    """A blob by its sha (how a file over the contents API's 1 MB limit is read)."""
    with gh._lock:
        r = ctx.repo
        try:
            data = gh.blob(r.full_name, ctx.params["sha"])
        except (Unknown, KeyError):
            raise HTTPError(404, "Not Found") from None
        return gh._json(blob_json(gh, r, ctx.params["sha"], data))


def get_tree(gh: FakeGitHub, ctx: Ctx) -> Reply:
    """A tree by commit ref (branch, tag, sha) or by tree sha; `recursive` lists every level."""
    with gh._lock:
        r = ctx.repo
        ref = ctx.params["tree"]
        try:
            target = r.git.resolve(ref)
            if target is not None:
                commit, folder = target, ""
            elif ref in r.git.tree_index:
                commit, folder = r.git.tree_index[ref]
            else:
                raise HTTPError(404, "Not Found")
            _, dirs = trees_of(gh, r, commit)
            recursive = ctx.query.get("recursive") not in (None, "", "0", "false")
            entries = []
            pending = [folder]
            while pending:
                here = pending.pop(0)
                for name, kind, ident in dirs[here][1]:
                    full = f"{here}/{name}" if here else name
                    rel = full[len(folder) + 1 :] if folder else full
                    size = None if kind == "tree" else len(gh.blob(r.full_name, ident))
                    entries.append(tree_entry(gh, r, rel, kind, ident, size))
                    if kind == "tree" and recursive:
                        pending.append(full)
        except Unknown as e:
            raise _unknown(e) from e
        if recursive:
            entries.sort(key=lambda e: e["path"])
        return gh._json(tree_json(gh, r, dirs[folder][0], entries))


def get_ref(gh: FakeGitHub, ctx: Ctx) -> Reply:
    """git/ref/heads/{branch} or git/ref/tags/{tag}: the commit it points at, or for an
    annotated tag the tag object (whose sha is not the commit's)."""
    with gh._lock:
        r = ctx.repo
        kind, _, name = ctx.params["ref"].partition("/")
        table = {"heads": r.git.branches, "tags": r.git.tags}.get(kind, {})
        if name not in table:
            raise HTTPError(404, "Not Found")
        body = ref_json(gh, r, f"refs/{kind}/{name}", table[name])
        if kind == "tags" and name in r.git.annotated:
            tag_sha = hashlib.sha1(f"tag {name} {table[name]}".encode()).hexdigest()
            url = body["object"]["url"].replace("/git/commits/", "/git/tags/")
            body["object"] = {
                "type": "tag",
                "sha": tag_sha,
                "url": url.replace(table[name], tag_sha),
            }
        return gh._json(body)
