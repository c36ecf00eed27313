"""GitHub's answers checked at the boundary: clean text, bounded nesting, the expected shape.

A hostile or broken server can send a list where an object belongs, nulls, 100k-deep nesting,
lone surrogates or NUL bytes. Each answer is cleaned and checked here, once, as it arrives: a bad
one raises BadAnswer (a GitHubError), so only the item that asked goes stale, and nothing
downstream (SQLite, the renderer, the comment) ever sees text it cannot store or show.
"""

from __future__ import annotations

import re
from typing import Any

from watcher.core.errors import GitHubError
from watcher.core.text import storable

MAX_DEPTH = 32  # GitHub's answers nest about 6 deep


class BadAnswer(GitHubError):
    """GitHub (or something posing as it) answered in a shape watcher cannot trust."""


def clean(data: Any, url: str | None = None) -> Any:
    """A copy of decoded JSON with every string storable (core.text's rule: a lone surrogate the
    JSON decoder left, or a control character, becomes U+FFFD); deeper than MAX_DEPTH is refused."""

    def walk(value: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise BadAnswer(f"answer nested deeper than {MAX_DEPTH} levels", url=url)
        if isinstance(value, str):
            return storable(value)
        if isinstance(value, dict):
            return {storable(str(k)): walk(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, depth + 1) for v in value]
        return value

    return walk(data, 0)


# ------------------------------------------------------------------ shapes


class Opt:
    """A key that may be missing or null; when present it must match `spec`."""

    def __init__(self, spec: Any):
        self.spec = spec


class OneOf:
    """A value that fits one of `specs` (the contents API answers a file or a folder listing)."""

    def __init__(self, *specs: Any):
        self.specs = specs


ANY = object()
_NAMES = {str: "a string", int: "an integer", bool: "a boolean", float: "a number"}

_LOGIN = Opt({"login": Opt(str)})
ISSUE = {
    "title": str,
    "state": str,
    "state_reason": Opt(str),
    "user": _LOGIN,
    "closed_by": _LOGIN,
    "html_url": Opt(str),
    "closed_at": Opt(str),
    "updated_at": Opt(str),
}
PULL = {
    "title": str,
    "state": str,
    "merged": Opt(bool),
    "merged_at": Opt(str),
    "closed_at": Opt(str),
    "updated_at": Opt(str),
    "draft": Opt(bool),
    "merge_commit_sha": Opt(str),
    "html_url": Opt(str),
    "base": Opt({"ref": Opt(str)}),
}
_ISSUE_REF = {
    "number": Opt(int),
    "title": Opt(str),
    "repository": Opt({"full_name": Opt(str)}),
    "repository_url": Opt(str),
    "url": Opt(str),
}
TIMELINE = [
    {
        "event": Opt(str),
        "actor": _LOGIN,
        "commit_id": Opt(str),
        "source": Opt({"issue": Opt(_ISSUE_REF)}),
    }
]
RELEASES = [
    {
        "id": int,
        "tag_name": str,
        "name": Opt(str),
        "draft": Opt(bool),
        "prerelease": Opt(bool),
        "published_at": Opt(str),
        "created_at": Opt(str),
        "html_url": Opt(str),
    }
]
_WHEN = Opt({"date": Opt(str)})
COMMITS = [
    {
        "sha": str,
        "html_url": Opt(str),
        "commit": Opt({"message": Opt(str), "committer": _WHEN, "author": _WHEN}),
    }
]
COMPARE = {
    "status": str,
    "html_url": Opt(str),
    "total_commits": Opt(int),
    "base_commit": Opt(COMMITS[0]),
    "commits": Opt(COMMITS),
    "ahead_by": Opt(int),
    "files": Opt([{"filename": str, "previous_filename": Opt(str)}]),  # watcher.poll.heads
}
TAGS = [{"name": str, "commit": {"sha": str}}]
# One commit (a page of its files: 300 a page, 3,000 at most): what follows a moved path.
COMMIT = {
    "sha": str,
    "commit": Opt({"message": Opt(str)}),
    "files": Opt([{"filename": str, "status": Opt(str), "previous_filename": Opt(str)}]),
}
REPO = {"default_branch": str}
# A git tag's ref (watcher.poll.pins): what it points at, a commit or an annotated tag object.
GIT_REF = {"ref": str, "object": {"sha": str, "type": str}}
# The events feed: only what names the item an event is about is read (watcher.poll.events_feed).
_NUMBERED = Opt({"number": Opt(int)})
EVENTS = [
    {
        "id": str,
        "type": Opt(str),
        "payload": Opt(
            {
                "number": Opt(int),
                "issue": _NUMBERED,
                "pull_request": _NUMBERED,
                "ref_type": Opt(str),
            }
        ),
    }
]
WORKFLOW_RUNS = {"workflow_runs": Opt([{"id": int, "display_title": Opt(str), "name": Opt(str)}])}
WORKFLOW_RUN = {"id": int, "status": Opt(str), "conclusion": Opt(str), "html_url": Opt(str)}
ARTIFACTS = {"artifacts": Opt([{"name": Opt(str), "archive_download_url": str}])}
COMMENT = {"id": int, "body": Opt(str), "html_url": Opt(str), "user": Opt({"login": Opt(str)})}
TREE = {"truncated": Opt(bool), "tree": Opt([{"path": str, "type": Opt(str)}])}
_FILE = {
    "type": Opt(str),
    "encoding": Opt(str),
    "content": Opt(str),
    "size": Opt(int),
    "sha": Opt(str),
}
CONTENTS = OneOf(_FILE, [{"path": Opt(str), "type": Opt(str)}])
BLOB = {"content": str, "encoding": str, "size": Opt(int)}
LATEST_RELEASE = {"tag_name": str}
USER = {"login": str}
RATE_LIMIT = {"resources": Opt({"core": Opt({"limit": Opt(int), "remaining": Opt(int)})})}

# GitHub's Link headers often name a repository by id: /repositories/{id}/... is the same path.
_REPO = r"(?:/repos/[^/]+/[^/]+|/repositories/\d+)"
ENDPOINTS: list[tuple[re.Pattern[str], Any]] = [
    (re.compile(rf"{_REPO}/issues/\d+/timeline"), TIMELINE),
    (re.compile(rf"{_REPO}/issues/\d+/comments"), [COMMENT]),
    (re.compile(rf"{_REPO}/issues/comments/\d+"), COMMENT),
    (re.compile(rf"{_REPO}/issues/\d+"), ISSUE),
    (re.compile(rf"{_REPO}/pulls/\d+"), PULL),
    (re.compile(rf"{_REPO}/releases/latest"), LATEST_RELEASE),
    (re.compile(rf"{_REPO}/releases"), RELEASES),
    (re.compile(rf"{_REPO}/git/ref/tags/.+"), GIT_REF),
    (re.compile(rf"{_REPO}/git/trees/.+"), TREE),
    (re.compile(rf"{_REPO}/git/blobs/[0-9a-f]+"), BLOB),
    (re.compile(rf"{_REPO}/contents/.*"), CONTENTS),
    (re.compile(rf"{_REPO}/collaborators/[^/]+/permission"), {"permission": Opt(str)}),
    (re.compile(r"/user"), USER),
    (re.compile(r"/rate_limit"), RATE_LIMIT),
    (re.compile(rf"{_REPO}/compare/.+"), COMPARE),
    (re.compile(rf"{_REPO}/events"), EVENTS),
    (re.compile(rf"{_REPO}/commits"), COMMITS),
    (re.compile(rf"{_REPO}/tags"), TAGS),
    (re.compile(rf"{_REPO}/commits/[^/]+"), COMMIT),
    (re.compile(rf"{_REPO}/actions/workflows/[^/]+/runs"), WORKFLOW_RUNS),
    (re.compile(rf"{_REPO}/actions/runs/\d+"), WORKFLOW_RUN),
    (re.compile(rf"{_REPO}/actions/runs/\d+/artifacts"), ARTIFACTS),
    (re.compile(_REPO), REPO),
]


# ------------------------------------------------------------------ what is kept
# A compare answer is the one that grows with a busy branch (every commit in full, every file
# with its patch: megabytes at GitHub's 250-commit cap) and it is cached whole as an ETag body.
# Only the fields something reads are kept, in the answer and in the cache alike: heads (files,
# total_commits, the last sha), pins and tags (status), bisect's grid and commit rules (each
# commit's sha, url, message, dates).
_PERSON = {"name": None, "email": None, "date": None}
_COMMIT_KEPT = {
    "sha": None,
    "html_url": None,
    "commit": {"message": None, "author": _PERSON, "committer": _PERSON},
    "author": {"login": None},
    "parents": [{"sha": None}],
}
COMPARE_KEPT = {
    "status": None,
    "html_url": None,
    "total_commits": None,
    "ahead_by": None,
    "behind_by": None,
    "base_commit": _COMMIT_KEPT,
    "merge_base_commit": {"sha": None},
    "commits": [_COMMIT_KEPT],
    "files": [{"filename": None, "previous_filename": None, "status": None}],
}
KEPT: list[tuple[re.Pattern[str], Any]] = [(re.compile(rf"{_REPO}/compare/.+"), COMPARE_KEPT)]


def kept(data: Any, keep: Any) -> Any:
    """`data` with only the keys `keep` names (None: the value whole; a dict: those keys, each
    by its own rule; a one-item list: each element by that rule)."""
    if keep is None:
        return data
    if isinstance(keep, list):
        return [kept(v, keep[0]) for v in data] if isinstance(data, list) else data
    if isinstance(data, dict):
        return {k: kept(data[k], sub) for k, sub in keep.items() if k in data}
    return data


def keep_for(path: str) -> Any:
    """What is kept of the answer at an API path, or None: all of it."""
    for pattern, keep in KEPT:
        if pattern.fullmatch(path.rstrip("/")):
            return keep
    return None


def spec_for(path: str) -> Any:
    """The shape expected at an API path (the part after the base URL), or None if unknown."""
    for pattern, spec in ENDPOINTS:
        if pattern.fullmatch(path.rstrip("/")):
            return spec
    return None


def check(data: Any, spec: Any, url: str | None = None) -> Any:
    """Raise BadAnswer naming the first field that does not fit `spec`; return `data`."""

    def fail(where: str, value: Any, wanted: str) -> None:
        got = "null" if value is None else type(value).__name__
        raise BadAnswer(
            f"unexpected answer shape: {where or 'the answer'} is {got}, expected {wanted}",
            url=url,
        )

    def walk(value: Any, spec: Any, where: str) -> None:
        if spec is ANY:
            return
        if isinstance(spec, Opt):
            if value is not None:
                walk(value, spec.spec, where)
            return
        if isinstance(spec, OneOf):
            for i, sub in enumerate(spec.specs):
                try:
                    walk(value, sub, where)
                    return
                except BadAnswer:
                    if i == len(spec.specs) - 1:
                        raise
        if isinstance(spec, dict):
            if not isinstance(value, dict):
                fail(where, value, "an object")
            for key, sub in spec.items():
                if key not in value and not isinstance(sub, Opt):
                    raise BadAnswer(
                        f"unexpected answer shape: {(where + '.' if where else '') + key} is "
                        "missing",
                        url=url,
                    )
                walk(value.get(key), sub, f"{where}.{key}" if where else key)
            return
        if isinstance(spec, list):
            if not isinstance(value, list):
                fail(where, value, "a list")
            for i, v in enumerate(value):
                walk(v, spec[0], f"{where}[{i}]")
            return
        ok = isinstance(value, spec) and not (spec is int and isinstance(value, bool))
        if not ok:
            fail(where, value, _NAMES.get(spec, spec.__name__))

    walk(data, spec, "")
    return data
