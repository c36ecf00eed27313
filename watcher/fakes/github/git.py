"""One repository's git history in the fake: commits, branches, tags, trees and blobs.

History is first-parent only: each new commit's parent is the default branch's head, and the
branch advances to it. A commit's tree is its parent's tree plus the changes it makes; commits
seeded without `contents` change file names only (their tree stays the parent's). Tree and
blob ids are git's own (sha1 of the object), so they agree with `git hash-object`.
"""

from __future__ import annotations

import hashlib
import re

from watcher.fakes.github.util import blob_sha, sha

EMPTY: dict[str, str] = {}
_PREFIXES = ("refs/tags/", "tags/", "refs/heads/", "heads/")


class Unknown(LookupError):
    """The state model cannot say (e.g. a replayed history lacks the object): not "missing"."""


class History:
    def __init__(self) -> None:
        self.commits: dict[str, dict] = {}  # sha -> record, in insertion order
        self.branches: dict[str, str] = {}
        self.default_branch = "main"
        self.tags: dict[str, str] = {}
        self.annotated: set[str] = (
            set()
        )  # tags made with `git tag -a`: their ref names a tag object
        self.blobs: dict[str, bytes] = {}
        self._trees: dict[str, tuple[str, dict[str, tuple[str, list]]]] = {}  # commit -> trees
        self.tree_index: dict[str, tuple[str, str]] = {}  # tree sha -> (commit sha, dir path)

    # ------------------------------------------------------------ commits and refs

    def head(self) -> dict | None:
        sha = self.branches.get(self.default_branch)
        return self.commits[sha] if sha else None

    def add(self, rec: dict, contents: dict[str, str | bytes | None] | None) -> None:
        """Record `rec` (sha, message, date, files, author) on top of the default branch."""
        parent = self.head()
        rec["parent"] = parent["sha"] if parent else None
        tree = dict(parent["tree"]) if parent else {}
        changes: dict[str, str | None] = {}
        for path, data in (contents or {}).items():
            path = path.strip("/")
            if data is None:
                tree.pop(path, None)
                changes[path] = None
                continue
            raw = data.encode() if isinstance(data, str) else bytes(data)
            ident = blob_sha(raw)
            self.blobs[ident] = raw
            tree[path] = changes[path] = ident
        rec["tree"] = tree
        rec["changes"] = changes
        rec["parent_tree"] = parent["tree"] if parent else EMPTY
        self.commits[rec["sha"]] = rec
        self.branches[self.default_branch] = rec["sha"]

    def resolve(self, ref: str) -> str | None:
        """The commit sha a tag, branch, "HEAD" or (abbreviated) sha names, or None."""
        if not self.commits:
            return None
        for prefix in _PREFIXES:
            if ref.startswith(prefix):
                ref = ref[len(prefix) :]
        if ref in self.tags:
            return self.tags[ref]
        if ref in self.branches:
            return self.branches[ref]
        if ref == "HEAD":
            return self.branches.get(self.default_branch)
        if ref in self.commits:
            return ref
        if len(ref) >= 4 and re.fullmatch(r"[0-9a-fA-F]+", ref):
            hits = [s for s in self.commits if s.startswith(ref.lower())]
            if len(hits) == 1:
                return hits[0]
        return None

    def ancestors(self, sha: str) -> list[dict]:
        """The commit and its first-parent ancestors, newest first."""
        out = []
        while sha:
            rec = self.commits[sha]
            out.append(rec)
            sha = rec["parent"]
        return out

    # ------------------------------------------------------------ trees

    def trees(self, commit: str, flat: dict[str, str]) -> tuple[str, dict[str, tuple[str, list]]]:
        """(root tree sha, {dir path: (tree sha, entries)}) of a flat {path: blob sha} map."""
        cached = self._trees.get(commit)
        if cached is not None:
            return cached
        dirs: dict[str, dict[str, tuple[str, str]]] = {"": {}}
        for path in flat:
            parts = path.split("/")
            for i in range(1, len(parts)):
                parent, name = "/".join(parts[: i - 1]), parts[i - 1]
                dirs.setdefault("/".join(parts[:i]), {})
                dirs.setdefault(parent, {})[name] = ("tree", "/".join(parts[:i]))
            dirs["/".join(parts[:-1])][parts[-1]] = ("blob", flat[path])
        out: dict[str, tuple[str, list]] = {}
        for path in sorted(dirs, key=lambda p: -p.count("/") if p else 1):
            entries = []
            for name, (kind, ref) in dirs[path].items():
                ident = out[ref][0] if kind == "tree" else ref
                entries.append((name, kind, ident))
            # An empty history keeps the per-commit tree id it always had (no files seeded).
            ident = _tree_sha(entries) if flat else sha("tree", commit)
            out[path] = (ident, sorted(entries))
            self.tree_index[out[path][0]] = (commit, path)
        result = (out[""][0], out)
        self._trees[commit] = result
        return result


def _tree_sha(entries: list[tuple[str, str, str]]) -> str:
    """Git's tree id: entries sorted as git does (a folder sorts as if named "name/")."""
    body = b""
    for name, kind, ident in sorted(entries, key=lambda e: e[0] + ("/" if e[1] == "tree" else "")):
        mode = b"40000" if kind == "tree" else b"100644"
        body += mode + b" " + name.encode() + b"\0" + bytes.fromhex(ident)
    return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()
