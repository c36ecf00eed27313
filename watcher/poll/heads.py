"""One conditional read per repository and ref per cycle says whether anything watched changed.

On real GitHub a "quiet" cycle is not free when it re-reads what changes without anything watched
changing: the repository object (every star and push moves it), the head commit and the
recursive tree of a busy branch (every push). So:

- the repository object is read once, for its default branch, and again only when a read at
  that branch answers 404 (a renamed or moved default branch);
- the head is read as `compare/{base}...{branch}`, where `base` is the commit the watched state
  was last read at. It answers 304 while nothing was pushed (the URL and the answer stay the
  same), and otherwise lists every file changed across the whole range (up to 300; past that, or
  past 250 commits, the tip is read again in full);
- when no changed file is, or is under, a watched path, the head is *quiet*: the tree and the
  watched files are not asked for, and the items at that ref are answered from the cache
  (`GitHubClient.from_cache`), so a moved head costs that one read and nothing more;
- otherwise the tip is read in full (head commit, tree), the base moves to it, and the compare
  at the new base is asked once at once, so the next quiet cycle is a 304 and not a 200.

What is remembered lives in the client's memo (saved with the etag cache; a recheck drops it).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from watcher.config.model import LATEST_RELEASE
from watcher.core.errors import GitHubError

if TYPE_CHECKING:
    from watcher.github.client import GitHubClient

MAX_FILES = 300  # GitHub's compare lists at most 300 changed files
MAX_COMMITS = 250  # and at most 250 commits on its first page
_SHA = re.compile(r"^[0-9a-f]{40}$")


def touches(changed: set[str], watched: tuple[str, ...] | None) -> bool:
    """Does a changed file fall on a watched path (the file itself, or under a watched folder)?
    `watched` None: everything is watched."""
    if watched is None:
        return bool(changed)
    for path in watched:
        clean = path.strip("/")
        for f in changed:
            if f == clean or f.startswith(clean + "/"):
                return True
    return False


def compare_path(repo: str, base: str, ref: str) -> str:
    return f"/repos/{repo}/compare/{base}...{quote(ref, safe='')}"


def tree_path(repo: str, ref: str) -> str:
    return f"/repos/{repo}/git/trees/{quote(ref, safe='')}"


# ------------------------------------------------------------------ the git reads


@dataclass(frozen=True)
class Tip:
    """What a ref pointed at when it was read: its name, commit and (when complete) tree."""

    repo: str
    ref: str  # the branch or tag name that was read
    sha: str  # the commit it pointed at
    paths: frozenset[str] | None  # every file and folder; None when GitHub truncated the tree


def default_branch(client: GitHubClient, repo: str) -> str:
    return client.get_json(f"/repos/{repo}")["default_branch"]


def resolve_ref(client: GitHubClient, repo: str, ref: str | None) -> str:
    """A configured ref -> the branch or tag name to read. None: the default branch;
    "latest-release": the newest release's tag, or the newest tag when the repo has no releases."""
    if ref is None:
        return default_branch(client, repo)
    if ref != LATEST_RELEASE:
        return ref
    try:
        return client.get_json(f"/repos/{repo}/releases/latest")["tag_name"]
    except GitHubError as e:
        if e.status != 404:
            raise
    tags = client.get_json(f"/repos/{repo}/tags", {"per_page": 1})
    if not tags:
        raise GitHubError(f"{repo} has no releases and no tags, so 'latest-release' means nothing")
    return tags[0]["name"]


def head_sha(client: GitHubClient, repo: str, ref: str) -> str:
    """The commit a branch, tag or sha points at (the list form: small, and its URL is stable)."""
    if _SHA.match(ref):
        return ref
    commits = client.get_json(f"/repos/{repo}/commits", {"sha": ref, "per_page": 1})
    if not commits:
        raise GitHubError(f"{repo} has no commits at {ref!r}")
    return commits[0]["sha"]


def read_tip(client: GitHubClient, repo: str, ref: str) -> Tip:
    """The commit and the full file tree at a branch or tag name (two conditional reads)."""
    sha = head_sha(client, repo, ref)
    data = client.get_json(f"/repos/{repo}/git/trees/{quote(ref, safe='')}", {"recursive": 1})
    paths = None if data.get("truncated") else frozenset(e["path"] for e in data.get("tree", []))
    return Tip(repo=repo, ref=ref, sha=sha, paths=paths)


def path_exists(client: GitHubClient, tip: Tip, path: str) -> bool:
    """Is a watched path (a file, or a folder with or without its trailing slash) at the tip?"""
    clean = path.strip("/")
    if tip.paths is not None:
        return clean in tip.paths
    try:  # a truncated tree (a huge repository): ask for the one path
        client.get(f"/repos/{tip.repo}/contents/{quote(clean)}", {"ref": tip.ref})
    except GitHubError as e:
        if e.status == 404:
            return False
        raise
    return True


def dead_paths(client: GitHubClient, tip: Tip, paths: tuple[str, ...]) -> list[dict[str, Any]]:
    """The watched paths that do not exist at the tip: [{path, ref, sha}]."""
    return [
        {"path": p, "ref": tip.ref, "sha": tip.sha}
        for p in paths
        if not path_exists(client, tip, p)
    ]


@dataclass
class HeadRead:
    """One (repository, ref)'s head this cycle: its tip, and whether anything watched changed."""

    tip: Tip
    quiet: bool  # nothing watched changed since the base: reads at this ref may come from cache
    trusted: set[str]  # items read without error since the base (their cache is current)


class Heads:
    """The head reads of one cycle, shared by the poll threads."""

    def __init__(self, client: GitHubClient):
        self.client = client
        self._lock = threading.Lock()
        self._refs: dict[str, str] = {}

    # ------------------------------------------------------------------ default branch

    def default_branch(self, repo: str, reread: bool = False) -> str:
        """The repository's default branch: read once, remembered, asked again on `reread`."""
        with self._lock:
            if not reread and repo in self._refs:
                return self._refs[repo]
        memo = None if reread else self.client.memo_get(f"repo {repo}")
        if memo and memo.get("default_branch"):
            branch = memo["default_branch"]
        else:
            branch = self.client.get_json(f"/repos/{repo}")["default_branch"]
            self.client.memo_put(f"repo {repo}", {"default_branch": branch})
        with self._lock:
            self._refs[repo] = branch
        return branch

    def resolve(self, repo: str, spec: str | None, reread: bool = False) -> str:
        if spec is None:
            return self.default_branch(repo, reread)
        return resolve_ref(self.client, repo, spec) if spec == LATEST_RELEASE else spec

    # ------------------------------------------------------------------ the head

    def read(self, repo: str, spec: str | None, watched: tuple[str, ...] | None) -> HeadRead:
        """The tip of `spec` in `repo`; quiet when no watched path changed since the base."""
        key = f"head {repo} {spec or ''}"
        ref = self.resolve(repo, spec)
        memo = self.client.memo_get(key)
        if memo and memo.get("ref") == ref:
            try:
                found = self._compare(repo, memo, ref, watched)
            except GitHubError as e:
                if e.status != 404:
                    raise
                found = None  # the base or the branch is gone (force-push, rename)
                if spec is None:
                    ref = self.resolve(repo, spec, reread=True)
            if found is not None:
                head, tree = found
                memo = dict(memo, head=head)
                self.client.memo_put(key, memo)
                return HeadRead(self._tip(repo, ref, head, tree), True, set(memo.get("ok", [])))
        return self._full(repo, ref, key, memo)

    def _compare(
        self, repo: str, memo: dict[str, Any], ref: str, watched: tuple[str, ...] | None
    ) -> tuple[str, dict[str, Any]] | None:
        """(head, cached tree) when nothing watched changed since the base, else None."""
        data = self.client.get_json(compare_path(repo, memo["base"], ref))
        status = data.get("status")
        if status == "identical":
            tree = self._cached_tree(repo, ref)
            return None if tree is None else (memo["base"], tree)
        if status != "ahead":
            return None  # behind or diverged: the branch was rewritten
        commits = data.get("commits") or []
        files = data.get("files")
        total = data.get("total_commits", len(commits))
        if not commits or files is None or len(files) >= MAX_FILES or total > len(commits):
            return None  # the range is too long to list every change
        changed = {f["filename"] for f in files}
        changed |= {f["previous_filename"] for f in files if f.get("previous_filename")}
        if touches(changed, watched):
            return None
        tree = self._cached_tree(repo, ref)
        if tree is None:
            return None
        return commits[-1]["sha"], tree

    def _cached_tree(self, repo: str, ref: str) -> dict[str, Any] | None:
        """The tree read at the base, from the cache only (None when it was never kept)."""
        if self.client.cached(tree_path(repo, ref), {"recursive": 1}) is None:
            return None
        with self.client.from_cache():
            return self.client.get_json(tree_path(repo, ref), {"recursive": 1})

    def _tip(self, repo: str, ref: str, sha: str, tree: dict[str, Any]) -> Tip:
        paths = None
        if not tree.get("truncated"):
            paths = frozenset(e["path"] for e in tree.get("tree", []))
        return Tip(repo=repo, ref=ref, sha=sha, paths=paths)

    def _full(self, repo: str, ref: str, key: str, memo: dict[str, Any] | None) -> HeadRead:
        """Read the tip again (head commit and tree); it becomes the new base."""
        sha = head_sha(self.client, repo, ref)
        tree = self.client.get_json(tree_path(repo, ref), {"recursive": 1})
        if memo and memo.get("base") and memo["base"] != sha:
            self.client.forget(self.client.url(compare_path(repo, memo["base"], ref)))
        self.client.memo_put(key, {"ref": ref, "base": sha, "head": sha, "ok": []})
        try:  # learn the new base's ETag now: the next quiet cycle is then a 304
            self.client.get(compare_path(repo, sha, ref))
        except GitHubError:
            pass  # asked again next cycle
        return HeadRead(self._tip(repo, ref, sha, tree), False, set())

    def trust(self, repo: str, spec: str | None, item_ids: set[str]) -> None:
        """Items at this head read without error since the base: next quiet cycle, from cache."""
        key = f"head {repo} {spec or ''}"
        with self._lock:
            memo = self.client.memo_get(key)
            if not memo:
                return
            ok = set(memo.get("ok", []))
            if item_ids <= ok:
                return
            self.client.memo_put(key, dict(memo, ok=sorted(ok | item_ids)))
