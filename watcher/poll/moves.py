"""Follow a watched path that moved: ask GitHub which commit removed it and where it went.

SGLang moves files often, and mostly unchanged (git sees a 99%-similar rename). A watched path
missing at its ref is looked up, not written off: the newest commit that touched it
(`commits?path=<old>&per_page=1`) is the one that removed it, and that commit's `files[]` (300
a page, at most 3,000) has a `renamed` entry with `previous_filename` when git saw a rename. A
move with heavy edits shows as removed + added instead: then only a warning says so, naming a
file of the same name elsewhere in the tree ("possibly moved to"), which is never read.

Both reads are conditional and their URLs do not change while nothing moves again, so a quiet
cycle answers them with 304s (the ETag cache is the memory of what was learned).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from watcher.core.errors import GitHubError

if TYPE_CHECKING:
    from watcher.github.client import GitHubClient

MAX_FILE_PAGES = 10  # 300 files a page, 3,000 at most: what GitHub lists of one commit
MAX_HOPS = 3  # a file moved, then moved again
_PR = re.compile(r"\(#(\d+)\)\s*$")


@dataclass(frozen=True)
class Move:
    """What became of a watched path: renamed to `new` in `sha`, or removed there."""

    path: str
    sha: str
    new: str | None = None  # git's rename (a file, or a folder with its trailing slash)
    pr: int | None = None  # the "(#N)" of the commit's subject
    maybe: tuple[str, ...] = ()  # same file name elsewhere in the tree: shown, never read

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "sha": self.sha,
            "new": self.new,
            "pr": self.pr,
            "maybe": list(self.maybe),
        }


def _commit_files(client: GitHubClient, repo: str, sha: str) -> tuple[str, list[dict]]:
    """(subject, files[]) of one commit, every page of its files."""
    page = client.get(f"/repos/{repo}/commits/{sha}")
    message = ((page.data.get("commit") or {}).get("message")) or ""
    files = list(page.data.get("files") or [])
    pages = 1
    while "next" in page.links and pages < MAX_FILE_PAGES:
        page = client.get(page.links["next"])
        files.extend(page.data.get("files") or [])
        pages += 1
    return (message.splitlines() or [""])[0], files


def _renamed_to(path: str, files: list[dict]) -> str | None:
    """The new name of `path` (a file, or a folder ending in /) in one commit's files."""
    folder = path.endswith("/")
    for f in files:
        if f.get("status") != "renamed" or not f.get("previous_filename"):
            continue
        old, new = f["previous_filename"], f.get("filename") or ""
        if not folder and old == path:
            return new
        if folder and old.startswith(path):
            rest = old[len(path) :]
            if new.endswith("/" + rest):
                return new[: -len(rest)]
    return None


def same_name(path: str, tree: frozenset[str] | None) -> tuple[str, ...]:
    """Files of the same name elsewhere in the tree (a move git did not see as a rename)."""
    if tree is None or path.endswith("/"):
        return ()
    name = path.rsplit("/", 1)[-1]
    return tuple(sorted(p for p in tree if p != path and p.rsplit("/", 1)[-1] == name))[:3]


def find_move(
    client: GitHubClient, repo: str, path: str, ref: str, tree: frozenset[str] | None = None
) -> Move | None:
    """Where a path missing at `ref` went (following up to MAX_HOPS moves), or None when no
    commit on that history ever touched it. `tree`: the tip's paths, to check the new one."""
    first: Move | None = None
    current = path
    for _ in range(MAX_HOPS):
        commits = client.get_json(
            f"/repos/{repo}/commits", {"path": current.rstrip("/"), "sha": ref, "per_page": 1}
        )
        if not commits:
            return first
        sha = commits[0]["sha"]
        subject, files = _commit_files(client, repo, sha)
        m = _PR.search(subject)
        new = _renamed_to(current, files)
        move = Move(
            path=path,
            sha=sha,
            new=new,
            pr=int(m.group(1)) if m else None,
            maybe=() if new else same_name(current, tree),
        )
        first = move if first is None else Move(path, move.sha, new, move.pr, move.maybe)
        if new is None or tree is None or new.rstrip("/") in tree:
            return first
        current = new  # moved again since
    return first


def follow(
    client: GitHubClient, repo: str, path: str, ref: str, tree: frozenset[str] | None
) -> Move | None:
    """find_move, where a read error is no answer (the caller says the path is missing)."""
    try:
        return find_move(client, repo, path, ref, tree)
    except GitHubError:
        return None


def move_warning(kind: str, move: Move) -> str:
    """The sentence for a rename (the page, the site, status.json, explain and validate)."""
    pr = f" (#{move.pr})" if move.pr else ""
    follows = "reads" if kind == "code" else "follows"
    return (
        f"`{move.path}` moved to `{move.new}` in {move.sha[:7]}{pr}; this item {follows}"
        " the new path: update `paths`"
    )


def removed_note(move: Move) -> str:
    """What is added to a dead path's sentence when git saw no rename."""
    pr = f" (#{move.pr})" if move.pr else ""
    maybe = ", ".join(f"`{p}`" for p in move.maybe)
    also = f"; possibly moved to {maybe} (not used: git saw no rename)" if maybe else ""
    return f"; removed in {move.sha[:7]}{pr}{also}"


def suggested_paths(paths: tuple[str, ...], moves: list[Move]) -> list[str] | None:
    """The `paths` edit that follows every rename, or None when nothing was renamed."""
    renamed = {m.path: m.new for m in moves if m.new}
    if not renamed:
        return None
    return [renamed.get(p, p) for p in paths]
