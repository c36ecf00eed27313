"""GitHub's JSON shapes for git objects: commits and their files, releases, tags, branches,
contents (files and folders) and trees. Ids are git's own where the state knows the bytes.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING
from urllib.parse import quote

from watcher.fakes.github.git import Unknown
from watcher.fakes.github.shapes import api_url, user_json
from watcher.fakes.github.util import WEB, later, node, num, sha

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub
    from watcher.fakes.github.state import Repo


def git_user(login: str, date: str) -> dict:
    return {"name": login, "email": f"{login}@users.noreply.github.com", "date": date}


def trees_of(gh: FakeGitHub, r: Repo, commit: str) -> tuple[str, dict[str, tuple[str, list]]]:
    """(root tree sha, {folder: (tree sha, entries)}) at a commit; Unknown if the state can't say."""
    return r.git.trees(commit, gh.tree_at(r.full_name, commit))


def tree_sha(gh: FakeGitHub, r: Repo, commit: str) -> str:
    try:
        return trees_of(gh, r, commit)[0]
    except Unknown:
        return sha("tree", commit)


def commit_json(
    gh: FakeGitHub, r: Repo, c: dict, detail: bool = False, files: list[dict] | None = None
) -> dict:
    api = api_url(gh, r)
    ident = c["sha"]
    tree = tree_sha(gh, r, ident)
    parents = []
    if c["parent"]:
        p = c["parent"]
        parents.append(
            {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{WEB}/{r.full_name}/commit/{p}"}
        )
    out = {
        "sha": ident,
        "node_id": node("Commit", num("commit", ident)),
        "commit": {
            "author": git_user(c["author"], c["date"]),
            "committer": {"name": "GitHub", "email": "noreply@github.com", "date": c["date"]},
            "message": c["message"],
            "tree": {"sha": tree, "url": f"{api}/git/trees/{tree}"},
            "url": f"{api}/git/commits/{ident}",
            "comment_count": 0,
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
        },
        "url": f"{api}/commits/{ident}",
        "html_url": f"{WEB}/{r.full_name}/commit/{ident}",
        "comments_url": f"{api}/commits/{ident}/comments",
        "author": user_json(gh, c["author"]),
        "committer": user_json(gh, "web-flow"),
        "parents": parents,
    }
    if detail:
        files = files_json(gh, r, [c]) if files is None else files
        adds = sum(f["additions"] for f in files)
        dels = sum(f["deletions"] for f in files)
        out["stats"] = {"total": adds + dels, "additions": adds, "deletions": dels}
        out["files"] = files
    return out


def files_json(gh: FakeGitHub, r: Repo, commits: list[dict]) -> list[dict]:
    """The files the commits touch; seeded contents give real blob shas and added/removed.

    A rename (`renamed` {new: old}) is one entry, status `renamed` with `previous_filename`,
    as GitHub answers; a recorded `status` (A/D per path) gives added/removed where no
    contents were seeded."""
    seen: dict[str, dict] = {}
    for c in commits:
        changes = c.get("changes") or {}
        before = c.get("parent_tree") or {}
        renamed = c.get("renamed") or {}
        recorded = c.get("status") or {}
        moved_away = set(renamed.values())
        for name in c["files"]:
            if name in moved_away and name not in renamed:
                continue  # listed once, under its new name
            status, blob = "modified", sha("blob", c["sha"], name)
            if recorded.get(name) == "A":
                status = "added"
            elif recorded.get(name) == "D":
                status = "removed"
            if name in changes:
                blob = changes[name] or before.get(name, blob)
                if changes[name] is None:
                    status = "removed"
                elif name not in before:
                    status = "added"
            entry = {
                "sha": blob,
                "filename": name,
                "status": status,
                "additions": 3,
                "deletions": 1,
                "changes": 4,
                "blob_url": f"{WEB}/{r.full_name}/blob/{c['sha']}/{quote(name)}",
                "raw_url": f"{WEB}/{r.full_name}/raw/{c['sha']}/{quote(name)}",
                "contents_url": f"{api_url(gh, r)}/contents/{quote(name)}?ref={c['sha']}",
                "patch": "@@ -1,2 +1,4 @@",
            }
            if name in renamed:
                entry.update(status="renamed", previous_filename=renamed[name])
            seen[name] = entry
    return list(seen.values())


def release_json(gh: FakeGitHub, r: Repo, rel: dict) -> dict:
    api = api_url(gh, r)
    tag = rel["tag"]
    published = None if rel["draft"] else rel["published_at"]
    return {
        "url": f"{api}/releases/{rel['id']}",
        "html_url": f"{WEB}/{r.full_name}/releases/tag/{quote(tag)}",
        "assets_url": f"{api}/releases/{rel['id']}/assets",
        "upload_url": f"{api}/releases/{rel['id']}/assets{{?name,label}}",
        "tarball_url": f"{api}/tarball/{quote(tag)}",
        "zipball_url": f"{api}/zipball/{quote(tag)}",
        "id": rel["id"],
        "node_id": node("Release", rel["id"]),
        "tag_name": tag,
        "target_commitish": r.git.default_branch,
        "name": rel["name"],
        "body": rel["body"],
        "draft": rel["draft"],
        "prerelease": rel["prerelease"],
        "immutable": False,
        "created_at": later(rel["published_at"], -600),
        "updated_at": rel["published_at"],
        "published_at": published,
        "author": user_json(gh, "release-manager"),
        "assets": [],
    }


def tag_json(gh: FakeGitHub, r: Repo, name: str, sha: str) -> dict:
    api = api_url(gh, r)
    return {
        "name": name,
        "commit": {"sha": sha, "url": f"{api}/commits/{sha}"},
        "zipball_url": f"{api}/zipball/refs/tags/{quote(name)}",
        "tarball_url": f"{api}/tarball/refs/tags/{quote(name)}",
        "node_id": node("Ref", num("tag", r.full_name, name)),
    }


def branch_json(gh: FakeGitHub, r: Repo, name: str, commit: dict) -> dict:
    api = api_url(gh, r)
    return {
        "name": name,
        "commit": commit_json(gh, r, commit),
        "_links": {
            "self": f"{api}/branches/{quote(name)}",
            "html": f"{WEB}/{r.full_name}/tree/{quote(name)}",
        },
        "protected": False,
        "protection": {
            "enabled": False,
            "required_status_checks": {
                "enforcement_level": "off",
                "contexts": [],
                "checks": [],
            },
        },
        "protection_url": f"{api}/branches/{quote(name)}/protection",
    }


def content_json(
    gh: FakeGitHub, r: Repo, ref: str, path: str, kind: str, ident: str, data: bytes | None
) -> dict:
    """A file (with base64 `content` when `data` is given) or a folder entry of contents/."""
    api = api_url(gh, r)
    self_url = f"{api}/contents/{quote(path)}?ref={quote(ref)}"
    git_url = f"{api}/git/{'trees' if kind == 'dir' else 'blobs'}/{ident}"
    html = f"{WEB}/{r.full_name}/{'tree' if kind == 'dir' else 'blob'}/{quote(ref)}/{quote(path)}"
    raw = f"https://raw.githubusercontent.com/{r.full_name}/{quote(ref)}/{quote(path)}"
    out = {
        "type": kind,
        "size": len(data) if data is not None else 0,
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": ident,
        "url": self_url,
        "git_url": git_url,
        "html_url": html,
        "download_url": raw if kind == "file" else None,
        "_links": {"self": self_url, "git": git_url, "html": html},
    }
    if data is not None:
        text = base64.b64encode(data).decode()
        # GitHub wraps the base64 at 60 characters, each line ending in a newline.
        out["content"] = "".join(text[i : i + 60] + "\n" for i in range(0, len(text), 60))
        out["encoding"] = "base64"
    return out


def tree_json(gh: FakeGitHub, r: Repo, ident: str, entries: list[dict]) -> dict:
    return {
        "sha": ident,
        "url": f"{api_url(gh, r)}/git/trees/{ident}",
        "tree": entries,
        "truncated": False,
    }


def tree_entry(gh: FakeGitHub, r: Repo, path: str, kind: str, ident: str, size: int | None) -> dict:
    api = api_url(gh, r)
    entry = {
        "path": path,
        "mode": "040000" if kind == "tree" else "100644",
        "type": kind,
        "sha": ident,
        "url": f"{api}/git/{'trees' if kind == 'tree' else 'blobs'}/{ident}",
    }
    if size is not None:
        entry["size"] = size
    return entry


def ref_json(gh: FakeGitHub, r: Repo, ref: str, target: str) -> dict:
    api = api_url(gh, r)
    return {
        "ref": ref,
        "node_id": node("Ref", num("ref", r.full_name, ref)),
        "url": f"{api}/git/{ref}",
        "object": {"type": "commit", "sha": target, "url": f"{api}/git/commits/{target}"},
    }
