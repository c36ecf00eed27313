"""Which of a stream's matching commits goes in front of readers.

The newest match is not the most relevant one: a refactor or another vendor's work can be newer
than the fix that matters. A commit is ranked first when it links a tracked item explicitly —
its message says `Fixes #N`, `Closes owner/repo#N`, `Resolves …`, or its PR (the subject's
"(#N)") is one a tracked item's timeline lists as `cross-referenced` (the strongest signal there
is) — then when the list of one of the rule's `core` paths named it, then by date (newest
first). Plain functions of what the poll already read (the commits, the tracked timelines).
"""

from __future__ import annotations

import re
from typing import Any

from watcher.config.model import Item
from watcher.poll.trust import referencing_pulls

_LINK = re.compile(
    r"(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+"
    r"(?:https://github\.com/)?(?P<repo>[\w.-]+/[\w.-]+)?(?:#|/(?:issues|pull)/)(?P<n>\d+)\b"
)


def tracked_numbers(items: list[Item]) -> frozenset[tuple[str, int]]:
    """(repo lower-case, number) of every tracked issue and pull."""
    return frozenset(
        (i.repo.lower(), i.number) for i in items if i.kind in ("issue", "pull") and i.number
    )


_PR = re.compile(r"\(#(\d+)\)\s*$")


def linked_pulls(
    threads: list[Item], timelines: dict[tuple[str, int], list[dict[str, Any]]]
) -> dict[tuple[str, int], str]:
    """PR (repo lower-case, number) -> "owner/repo#N" of the tracked item whose timeline
    cross-references it."""
    out: dict[tuple[str, int], str] = {}
    for item in threads:
        events = timelines.get((item.repo.lower(), int(item.number or 0))) or []
        for repo, number, _source in referencing_pulls(events, item):
            out.setdefault((repo.lower(), number), f"{item.repo}#{item.number}")
    return out


def _pr_link(repo: str, commit: dict[str, Any], linked: dict[tuple[str, int], str]) -> str | None:
    subject = (_message(commit).splitlines() or [""])[0]
    m = _PR.search(subject)
    return linked.get((repo.lower(), int(m.group(1)))) if m else None


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
    linked: dict[tuple[str, int], str] | None = None,
) -> list[str]:
    """Why a commit ranks high, in words (empty when only its date ranks it)."""
    out = [
        f"closes tracked {repo}#{n}"
        for repo, n in links(item.repo, _message(commit))
        if (repo, n) in tracked
    ]
    via = _pr_link(item.repo, commit, linked or {})
    if via:
        out.append(f"its PR is cross-referenced by tracked {via}")
    core = [p for p in paths_of.get(commit["sha"], []) if any(_under(p, c) for c in item.core)]
    if core:
        out.append(f"touches core path {core[0]}")
    return out


def rank(
    item: Item,
    commits: list[dict[str, Any]],
    paths_of: dict[str, list[str]],
    tracked: frozenset[tuple[str, int]],
    linked_prs: dict[tuple[str, int], str] | None = None,
) -> list[dict[str, Any]]:
    """The commits (given newest first) with explicit links first, then core paths, then the
    rest, each group newest first."""

    def key(pair: tuple[int, dict[str, Any]]) -> tuple[int, int, int]:
        position, c = pair
        linked = any(link in tracked for link in links(item.repo, _message(c))) or bool(
            _pr_link(item.repo, c, linked_prs or {})
        )
        core = any(_under(p, core) for p in paths_of.get(c["sha"], []) for core in item.core)
        return (0 if linked else 1, 0 if core else 1, position)

    return [c for _, c in sorted(enumerate(commits), key=key)]
