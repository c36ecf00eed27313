"""Which of a stream's matching commits goes in front of readers.

The newest match is not the most relevant one: a refactor or another vendor's work can be newer
than the fix that matters. A commit is ranked first when its message links a tracked item
explicitly (`Fixes #N`, `Closes owner/repo#N`, `Resolves …`: the strongest signal there is),
then when the list of one of the rule's `core` paths named it, then by date (newest first).
Plain functions of the commits the stream already read: no extra request.
"""

from __future__ import annotations

import re
from typing import Any

from watcher.config import Item

_LINK = re.compile(
    r"(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+"
    r"(?:https://github\.com/)?(?P<repo>[\w.-]+/[\w.-]+)?(?:#|/(?:issues|pull)/)(?P<n>\d+)\b"
)


def tracked_numbers(items: list[Item]) -> frozenset[tuple[str, int]]:
    """(repo lower-case, number) of every tracked issue and pull."""
    return frozenset(
        (i.repo.lower(), i.number) for i in items if i.kind in ("issue", "pull") and i.number
    )


def links(repo: str, message: str) -> list[tuple[str, int]]:
    """The items a commit message says it closes: [(repo lower-case, number)]."""
    return [((m["repo"] or repo).lower(), int(m["n"])) for m in _LINK.finditer(message or "")]


def _message(commit: dict[str, Any]) -> str:
    return ((commit.get("commit") or {}).get("message")) or ""


def _under(path: str, core: str) -> bool:
    path, core = path.strip("/"), core.strip("/")
    return path == core or path.startswith(core + "/") or core.startswith(path + "/")


def reasons(
    item: Item,
    commit: dict[str, Any],
    paths_of: dict[str, list[str]],
    tracked: frozenset[tuple[str, int]],
) -> list[str]:
    """Why a commit ranks high, in words (empty when only its date ranks it)."""
    out = [
        f"closes tracked {repo}#{n}"
        for repo, n in links(item.repo, _message(commit))
        if (repo, n) in tracked
    ]
    core = [p for p in paths_of.get(commit["sha"], []) if any(_under(p, c) for c in item.core)]
    if core:
        out.append(f"touches core path {core[0]}")
    return out


def rank(
    item: Item,
    commits: list[dict[str, Any]],
    paths_of: dict[str, list[str]],
    tracked: frozenset[tuple[str, int]],
) -> list[dict[str, Any]]:
    """The commits (given newest first) with explicit links first, then core paths, then the
    rest, each group newest first."""

    def key(pair: tuple[int, dict[str, Any]]) -> tuple[int, int, int]:
        position, c = pair
        linked = any(link in tracked for link in links(item.repo, _message(c)))
        core = any(_under(p, core) for p in paths_of.get(c["sha"], []) for core in item.core)
        return (0 if linked else 1, 0 if core else 1, position)

    return [c for _, c in sorted(enumerate(commits), key=key)]
