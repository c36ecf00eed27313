"""Which of a stream's matching commits goes in front of readers.

The newest match is not the most relevant one, and neither is the one in a `core` path: that
ranking lifted a months-old EPLB change and a Mamba2 change over the fix for this recipe's own
flags. A commit is ranked by its relevance to the recipe, then by date (newest first):
first when it links a tracked item explicitly (its message says `Fixes #N`, `Closes
owner/repo#N`, `Resolves …`, or its PR, the subject's "(#N)", is one a tracked item's timeline
lists as `cross-referenced`); then when its subject names what the recipe runs (`prefer`) and
nothing it does not use (`demote`); then the rest; last a commit that names only what the recipe
does not use. Plain functions of what the poll already read (the commits, the tracked timelines).
"""

from __future__ import annotations

import re
from typing import Any

from watcher.config.model import Item
from watcher.poll import textmatch
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
            if not repo:
                continue  # a source that names no repository links nothing
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


def word_found(terms: tuple[str, ...], subject: str) -> str | None:
    """The first of `terms` found in the subject as a whole word (any case), or None (within
    the subject's first textmatch.MAX_LINE_CHARS characters, so the work is bounded)."""
    subject = subject[: textmatch.MAX_LINE_CHARS]
    for term in terms:
        bare = term.removeprefix("(?i)")
        if re.search(rf"(?<![\w])(?:{bare})(?![\w])", subject, re.IGNORECASE):
            return term
    return None


def _subject(commit: dict[str, Any]) -> str:
    return (_message(commit).splitlines() or [""])[0]


def tier(item: Item, commit: dict[str, Any]) -> int:
    """0: names what the recipe runs and nothing it does not use; 1: neither; 2: names what it
    does not use (a demoted word wins over a preferred one: "qwen3.5 mtp eplb" is EPLB work)."""
    subject = _subject(commit)
    if word_found(item.demote, subject):
        return 2
    return 0 if word_found(item.prefer, subject) else 1


def _linked(
    item: Item,
    commit: dict[str, Any],
    tracked: frozenset[tuple[str, int]],
    linked_prs: dict[tuple[str, int], str] | None,
) -> bool:
    return any(link in tracked for link in links(item.repo, _message(commit))) or bool(
        _pr_link(item.repo, commit, linked_prs or {})
    )


def reasons(
    item: Item,
    commit: dict[str, Any],
    paths_of: dict[str, list[str]],
    tracked: frozenset[tuple[str, int]],
    linked: dict[tuple[str, int], str] | None = None,
) -> list[str]:
    """Why a commit ranks where it does, in words (empty when only its date ranks it)."""
    out = [
        f"closes tracked {repo}#{n}"
        for repo, n in links(item.repo, _message(commit))
        if (repo, n) in tracked
    ]
    via = _pr_link(item.repo, commit, linked or {})
    if via:
        out.append(f"its PR is cross-referenced by tracked {via}")
    subject = _subject(commit)
    off = word_found(item.demote, subject)
    on = word_found(item.prefer, subject)
    if off:
        out.append(f"names {_word(off, subject)}, which this recipe does not use")
    elif on:
        out.append(f"names {_word(on, subject)}, which this recipe runs")
    core = [p for p in paths_of.get(commit["sha"], []) if any(_under(p, c) for c in item.core)]
    if core:
        out.append(f"touches core path {core[0]}")
    return out


def _word(term: str, subject: str) -> str:
    """The words of the subject a term found (what a reader recognises), quoted."""
    bare = term.removeprefix("(?i)")
    m = re.search(rf"(?<![\w])(?:{bare})(?![\w])", subject[: textmatch.MAX_LINE_CHARS], re.I)
    return f"“{m.group(0)}”" if m else f"“{bare}”"


def rank(
    item: Item,
    commits: list[dict[str, Any]],
    paths_of: dict[str, list[str]],
    tracked: frozenset[tuple[str, int]],
    linked_prs: dict[tuple[str, int], str] | None = None,
) -> list[dict[str, Any]]:
    """The commits (given newest first) by relevance to the recipe, then newest first: explicit
    links to a tracked item, then `prefer`, then the rest, then `demote` (see `tier`).
    `paths_of` is kept for `reasons`: a core path no longer ranks."""

    def key(pair: tuple[int, dict[str, Any]]) -> tuple[int, int, int]:
        position, c = pair
        return (0 if _linked(item, c, tracked, linked_prs) else 1, tier(item, c), position)

    return [c for _, c in sorted(enumerate(commits), key=key)]
