"""The recorded upstream history (tests/history/, trimmed from the real export) as queryable data.

It answers only what the record supports, as of any date inside it. Contents and trees were
recorded once, at the cut (2026-04-30): a file's content at an earlier commit is known only when
no later commit touched it, the whole tree only at the cut; anything else raises `Unknown` —
unknown is not missing, so the fake GitHub answers 503, never 404. So do commits the record
never saw (before it starts, or a release tag cut on a release branch). An `Unknown`'s message
names the object; the fake adds "is not in the recorded history".
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from watcher.fakes.github.git import Unknown

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "tests" / "history"
RELEASE_TAG = re.compile(r"^v\d+(\.\d+)+(\.post\d+)?(rc\d+)?$")


def parse_time(value: str | datetime) -> datetime:
    """ISO 8601 (any offset, or Z) -> aware UTC datetime."""
    if isinstance(value, datetime):
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    text = value.strip().replace("Z", "+00:00")
    if len(text) == 10:  # a bare date means the end of that day
        text += "T23:59:59+00:00"
    moment = datetime.fromisoformat(text)
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    committed: datetime
    committed_text: str
    authored_text: str | None = None
    author: str | None = None
    message: str = ""
    files: tuple[str, ...] = ()  # a rename's old and new path both (as git lists them)
    status: tuple[tuple[str, str], ...] = ()  # (path, "A" | "D") where not a plain modification
    renamed: tuple[tuple[str, str], ...] = ()  # (new path, old path): git's rename detection

    @property
    def subject(self) -> str:
        return self.message.splitlines()[0] if self.message else ""


@dataclass(frozen=True)
class Tag:
    name: str
    sha: str
    date: datetime
    date_text: str

    @property
    def is_release(self) -> bool:
        """Releases are modelled from tags (the export has no releases): `v1.2.3[.postN][rcN]`."""
        return bool(RELEASE_TAG.match(self.name))

    @property
    def prerelease(self) -> bool:
        return "rc" in self.name


class RepoHistory:
    """One repository's record: commits newest first, tags, the tree and some blobs at the cut."""

    def __init__(self, data: dict):
        self.repo: str = data["repo"]
        self.branch: str = data["branch"]
        self.since = parse_time(data["since"])
        self.until = parse_time(data["until"])
        self.tip_sha: str = data["tip"]
        self.commits: dict[str, Commit] = {}
        self.order: list[str] = []  # newest first, as exported
        for c in data["commits"]:
            commit = Commit(
                sha=c["sha"],
                parents=tuple(c["parents"]),
                committed=parse_time(c["committed"]),
                committed_text=c["committed"],
                authored_text=c.get("authored"),
                author=c.get("author"),
                message=c["message"],
                files=tuple(c["files"]),
                status=tuple(sorted((c.get("status") or {}).items())),
                renamed=tuple(sorted((c.get("renamed") or {}).items())),
            )
            self.commits[commit.sha] = commit
            self.order.append(commit.sha)
        self.first_parent: list[str] = []
        sha: str | None = self.tip_sha
        while sha in self.commits:
            self.first_parent.append(sha)
            parents = self.commits[sha].parents
            sha = parents[0] if parents else None
        self.tags = [
            Tag(t["name"], t["sha"], parse_time(t["date"]), t["date"]) for t in data["tags"]
        ]
        self.tree: dict[str, str] = data["tree"]["tree"]
        self.tree_date = parse_time(data["tree"]["date"])
        self.blobs: dict[str, str] = data["blobs"]
        self._position = {sha: i for i, sha in enumerate(self.order)}

    # -------------------------------------------------------------- refs

    def tip(self, as_of: datetime | None = None) -> str | None:
        """The branch tip as of a date: the newest first-parent commit committed at or before it."""
        for sha in self.first_parent:
            if as_of is None or self.commits[sha].committed <= as_of:
                return sha
        return None

    def tags_at(self, as_of: datetime | None = None) -> list[Tag]:
        """Tags that existed by then, newest first."""
        tags = [t for t in self.tags if as_of is None or t.date <= as_of]
        return sorted(tags, key=lambda t: (t.date, t.name), reverse=True)

    def releases_at(self, as_of: datetime | None = None) -> list[Tag]:
        return [t for t in self.tags_at(as_of) if t.is_release]

    def visible(self, sha: str, as_of: datetime | None = None) -> bool:
        c = self.commits.get(sha)
        return c is not None and (as_of is None or c.committed <= as_of)

    def resolve(self, ref: str, as_of: datetime | None = None) -> str | None:
        """A branch, tag or (abbreviated) sha -> a full sha as of the date; None if not there."""
        if ref in (self.branch, "HEAD"):
            return self.tip(as_of)
        for tag in self.tags_at(as_of):
            if tag.name == ref:
                return tag.sha
        if re.fullmatch(r"[0-9a-f]{7,40}", ref):
            for sha in self.order:
                if sha.startswith(ref) and self.visible(sha, as_of):
                    return sha
        return None

    def ancestors(self, sha: str) -> set[str]:
        """`sha` and every recorded commit reachable from it."""
        return set(self._ancestors(sha))

    @cache  # noqa: B019 - one RepoHistory per process, kept for its lifetime
    def _ancestors(self, sha: str) -> frozenset[str]:
        seen: set[str] = set()
        stack = [sha]
        while stack:
            s = stack.pop()
            if s in seen or s not in self.commits:
                continue
            seen.add(s)
            stack.extend(self.commits[s].parents)
        return frozenset(seen)

    def _known(self, sha: str) -> Commit:
        commit = self.commits.get(sha)
        if commit is None:
            raise Unknown(f"commit {sha[:12]} of {self.repo}")
        return commit

    # -------------------------------------------------------------- commits

    def log(
        self,
        sha: str,
        *,
        path: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[Commit]:
        """Recorded commits reachable from `sha`, newest first by commit date, like GitHub's list
        API. Commits before the record starts (`self.since`) are not in it: the caller decides
        whether a list that reaches back that far can be answered."""
        self._known(sha)
        reachable = self.ancestors(sha)
        out = []
        for s in self.order:
            if s not in reachable:
                continue
            c = self.commits[s]
            if since is not None and c.committed < since:
                continue
            if until is not None and c.committed > until:
                continue
            if path and not any(_touches(f, path) for f in c.files):
                continue
            out.append(c)
        out.sort(key=lambda c: (c.committed, -self._position[c.sha]), reverse=True)
        return out

    def compare(self, base: str, head: str) -> tuple[str, int, int]:
        """(status, ahead_by, behind_by) of head relative to base, by ancestry."""
        self._known(base)
        self._known(head)
        base_set, head_set = self.ancestors(base), self.ancestors(head)
        ahead = len(head_set - base_set)
        behind = len(base_set - head_set)
        if not ahead and not behind:
            return "identical", 0, 0
        if ahead and behind:
            return "diverged", ahead, behind
        return ("ahead" if ahead else "behind"), ahead, behind

    # -------------------------------------------------------------- files

    def later_touches(self, sha: str, path: str) -> list[str]:
        """Commits between `sha` and the cut that touched `path` (a file or folder)."""
        before = self.ancestors(sha)
        return [
            s
            for s in self.order
            if s not in before and any(_touches(f, path) for f in self.commits[s].files)
        ]

    def tree_at(self, sha: str) -> dict[str, str]:
        """{path: blob_sha} at a commit: recorded only at the cut."""
        self._known(sha)
        if sha != self.tip_sha:
            raise Unknown(
                f"the file tree of {self.repo} at {sha[:12]} (recorded only at "
                f"{self.tip_sha[:12]}, {self.tree_date:%Y-%m-%d})"
            )
        return dict(self.tree)

    def known_files_at(self, sha: str) -> dict[str, str]:
        """The files certainly present at a commit, with their blob: those at the cut that no
        later commit touched. Others may exist too (the record cannot say)."""
        self._known(sha)
        before = self.ancestors(sha)
        touched = {f for s in self.order if s not in before for f in self.commits[s].files}
        return {p: b for p, b in self.tree.items() if p not in touched}

    def blob_sha_at(self, sha: str, path: str) -> str | None:
        """The file's blob sha at a commit, None when it does not exist there; Unknown otherwise."""
        self._known(sha)
        touched = self.later_touches(sha, path)
        if touched:
            raise Unknown(
                f"{self.repo}:{path} at {sha[:12]} (changed later by {touched[-1][:12]}; "
                f"contents were recorded at {self.tree_date:%Y-%m-%d})"
            )
        return self.tree.get(path)

    def blob(self, blob_sha: str) -> bytes:
        if blob_sha not in self.blobs:
            raise Unknown(f"blob {blob_sha[:12]} of {self.repo}")
        return self.blobs[blob_sha].encode("utf-8")

    def folder_entries(self, sha: str, folder: str) -> dict[str, str]:
        """Paths directly and indirectly under `folder` at a commit (same knowledge rule as files)."""
        self._known(sha)
        prefix = folder.strip("/") + "/"
        touched = self.later_touches(sha, prefix)
        if touched:
            raise Unknown(
                f"{self.repo}:{folder} at {sha[:12]} (changed later by {touched[-1][:12]})"
            )
        return {p: b for p, b in self.tree.items() if p.startswith(prefix)}


def _touches(file: str, path: str) -> bool:
    path = path.strip("/")
    return file == path or file.startswith(path + "/")


class History:
    """All recorded repositories, loaded once from a folder of `<owner>__<name>.json.gz`."""

    def __init__(self, repos: dict[str, RepoHistory]):
        self.repos = repos

    @classmethod
    def load(cls, folder: Path | str = DEFAULT_DIR) -> History:
        repos = {}
        for path in sorted(Path(folder).glob("*.json.gz")):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                repo = RepoHistory(json.load(f))
            repos[repo.repo] = repo
        return cls(repos)

    def __getitem__(self, repo: str) -> RepoHistory:
        return self.repos[repo]


@cache
def default_history() -> History:
    """The committed record, parsed once per process (tests share it)."""
    return History.load(DEFAULT_DIR)
