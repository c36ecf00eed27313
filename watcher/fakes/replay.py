"""The fake GitHub answering from recorded upstream history, as it stood at a date.

`ReplayGitHub(as_of=...)` fills the fake's state model from tests/history (see history.py):
the commits committed by then (the branch tip is the newest first-parent commit by then), the
tags that existed by then, and releases modelled from the tags named like versions (the export
has no releases: published_at is the tag's date, `rc` tags are prereleases). Contents and trees
follow the record's knowledge: a file is known at a commit only if no later commit touched it,
the whole tree only at the cut (before it, the files known to be there, marked truncated).
Whatever the record cannot say is a 503 ("not in the recorded
history"), never a 404 and never a short list: a page of commits that would reach back before
the record starts, a ref whose commit was not recorded (e.g. a release tag cut on a release
branch), contents changed after the commit asked about.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from urllib.parse import unquote

from watcher.fakes.github import FakeGitHub, Unknown
from watcher.fakes.github.http import HTTPError
from watcher.fakes.github.shapes_git import tree_entry, tree_json
from watcher.fakes.github.util import Reply, iso, num
from watcher.fakes.github.util import sha as util_sha
from watcher.fakes.history import History, RepoHistory, default_history, parse_time

_REPO = r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
_REPO_ONLY = re.compile(_REPO + r"(?:/|$)")
_COMMITS = re.compile(_REPO + r"/commits$")
_COMMIT = re.compile(_REPO + r"/commits/(?P<ref>.+)$")
_COMPARE = re.compile(_REPO + r"/compare/(?P<base>.+?)\.\.\.(?P<head>.+)$")
_CONTENTS = re.compile(_REPO + r"/contents(?:/(?P<path>.*))?$")
_TREES = re.compile(_REPO + r"/git/trees/(?P<tree>.+)$")


class KnownTree(Mapping):
    """A commit's files as far as the record knows them: asking about an uncertain path, or
    listing the tree where some path is uncertain, raises Unknown."""

    def __init__(self, repo: RepoHistory, sha: str):
        self.repo, self.sha = repo, sha

    def __contains__(self, path: object) -> bool:
        return self.repo.blob_sha_at(self.sha, str(path)) is not None

    def __getitem__(self, path: str) -> str:
        found = self.repo.blob_sha_at(self.sha, path)
        if found is None:
            raise KeyError(path)
        return found

    def _all(self) -> dict[str, str]:
        return self.repo.tree_at(self.sha)

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


class ReplayGitHub(FakeGitHub):
    """A FakeGitHub whose git state is the recorded history as of `as_of` (default: the cut)."""

    def __init__(
        self,
        as_of: str | datetime | None = None,
        *,
        history: History | None = None,
        repos: list[str] | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.history = history or default_history()
        self.as_of = parse_time(as_of) if as_of is not None else None
        self.link_repository_ids = False
        for name in repos or list(self.history.repos):
            self._fill(self.history[name])

    # ------------------------------------------------------------ filling

    def _fill(self, h: RepoHistory) -> None:
        with self._lock:
            r = self._repo(h.repo)
            git = r.git
            git.default_branch = h.branch
            line = [s for s in reversed(h.first_parent) if h.visible(s, self.as_of)]
            for sha in line:  # oldest first, so each parent is recorded before its child
                c = h.commits[sha]
                git.commits[sha] = {
                    "sha": sha,
                    "message": c.message,
                    "date": iso(c.committed),
                    "files": list(c.files),
                    "status": dict(c.status),
                    "renamed": dict(c.renamed),
                    "author": c.author or "unknown",
                    "parent": c.parents[0] if c.parents and c.parents[0] in git.commits else None,
                    "tree": {},
                    "changes": {},
                    "parent_tree": {},
                }
            if line:
                git.branches[h.branch] = line[-1]
            for seq, tag in enumerate(reversed(h.tags_at(self.as_of))):  # oldest first
                git.tags[tag.name] = tag.sha
                if tag.is_release:
                    r.releases.append(
                        {
                            "id": num("release", h.repo, tag.name),
                            "tag": tag.name,
                            "name": tag.name,
                            "draft": False,
                            "prerelease": tag.prerelease,
                            "published_at": iso(tag.date),
                            "body": "",
                            "seq": seq,
                        }
                    )

    # ------------------------------------------------------------ the state model's hooks

    def tree_at(self, repo: str, sha: str) -> Mapping[str, str]:
        h = self._recorded(repo)
        if not h.visible(sha, self.as_of):
            raise Unknown(f"commit {sha[:12]} of {repo}")
        return KnownTree(h, sha)

    def blob(self, repo: str, blob_sha: str) -> bytes:
        return self._recorded(repo).blob(blob_sha)

    def _recorded(self, repo: str) -> RepoHistory:
        for name, h in self.history.repos.items():
            if name.lower() == repo.lower():
                return h
        raise Unknown(f"repository {repo}")

    # ------------------------------------------------------------ what the record cannot say

    def _route(self, method, path, query, headers, body, login, raw_query) -> Reply:
        if method in ("GET", "HEAD"):
            try:
                early = self._replay_answer(path, query)
            except Unknown as e:
                raise HTTPError(503, f"{e.args[0]} is not in the recorded history") from e
            if early is not None:
                return early
        return super()._route(method, path, query, headers, body, login, raw_query)

    def _resolve(self, h: RepoHistory, ref: str) -> str:
        """A ref's commit as of the replay date; Unknown when it names an unrecorded commit."""
        with self._lock:
            target = self._repo(h.repo).git.resolve(ref)
            known = target is not None and target in self._repo(h.repo).git.commits
        if target is not None and not known:
            raise Unknown(f"commit {target[:12]} ({ref}) of {h.repo}")
        if target is None:
            raise HTTPError(404, f"No commit found for the ref {ref}")
        return target

    def _replay_answer(self, path: str, query: dict) -> Reply | None:
        repo = _REPO_ONLY.match(path)
        if repo is not None:
            name = f"{repo['owner']}/{repo['repo']}"
            with self._lock:
                seeded = name.lower() in self._repos
            if not seeded:  # a repository the record does not hold: unknown, not missing
                raise Unknown(f"repository {name}")
        m = (
            _COMMITS.match(path)
            or _COMMIT.match(path)
            or _COMPARE.match(path)
            or _CONTENTS.match(path)
            or _TREES.match(path)
        )
        if m is None:
            return None
        try:
            h = self._recorded(f"{m['owner']}/{m['repo']}")
        except Unknown:
            return None  # a repository seeded by hand, not replayed
        if m.re is _COMMITS:
            self._commit_page_known(h, query)
            return None
        if m.re is _COMMIT:
            self._resolve(h, unquote(m["ref"]))
            return None
        if m.re is _COMPARE:
            self._resolve(h, unquote(m["base"]))
            self._resolve(h, unquote(m["head"]))
            return None
        if m.re is _CONTENTS:
            ref = query.get("ref") or h.branch
            sha = self._resolve(h, ref)
            wanted = (m["path"] or "").strip("/")
            if wanted and h.blob_sha_at(sha, wanted) is None and not h.folder_entries(sha, wanted):
                raise HTTPError(404, "Not Found")
            return None
        return self._tree(h, unquote(m["tree"]), query)

    def _commit_page_known(self, h: RepoHistory, query: dict) -> None:
        """A page of the commit list is known when it is full, or when the query stops at or
        after the record's start; a short last page reaching further back would hide commits."""
        top = self._resolve(h, query.get("sha") or h.branch)
        since = parse_time(query["since"]) if query.get("since") else None
        if since is not None and since >= h.since:
            return
        until = parse_time(query["until"]) if query.get("until") else None
        listed = h.log(top, path=query.get("path") or None, since=since, until=until)
        per_page = min(max(_int(query.get("per_page"), self.per_page_default), 1), 100)
        if len(listed) < _int(query.get("page"), 1) * per_page:
            raise Unknown(f"commits of {h.repo} before {h.since:%Y-%m-%d}")

    def _tree(self, h: RepoHistory, ref: str, query: dict) -> Reply:
        """The whole tree at the cut. Before it, the files known to be there, flagged
        `truncated` (GitHub's word for "not every entry is listed"), so a client asks for each
        path it cares about instead of reading absence from the list."""
        sha = self._resolve(h, ref)
        with self._lock:
            r = self._repo(h.repo)
        if sha != h.tip_sha:
            known = h.known_files_at(sha)
            recursive = query.get("recursive") not in (None, "", "0", "false")
            entries = [
                tree_entry(self, r, path, "blob", blob, self._size(h, blob))
                for path, blob in sorted(known.items())
                if recursive or "/" not in path
            ]
            out = tree_json(self, r, util_sha("tree", sha), entries)
            out["truncated"] = True
            return self._json(out)
        flat = h.tree_at(sha)
        with self._lock:
            root, dirs = r.git.trees(sha, flat)
        recursive = query.get("recursive") not in (None, "", "0", "false")
        entries, pending = [], [""]
        while pending:
            here = pending.pop(0)
            for name, kind, ident in dirs[here][1]:
                full = f"{here}/{name}" if here else name
                size = self._size(h, ident) if kind == "blob" else None
                entries.append(tree_entry(self, r, full, kind, ident, size))
                if kind == "tree" and recursive:
                    pending.append(full)
        if recursive:
            entries.sort(key=lambda e: e["path"])
        return self._json(tree_json(self, r, root, entries))

    @staticmethod
    def _size(h: RepoHistory, blob: str) -> int | None:
        return len(h.blobs[blob].encode()) if blob in h.blobs else None


def _int(value: str | None, default: int) -> int:
    try:
        return max(int(value), 1) if value is not None else default
    except ValueError:
        return default
