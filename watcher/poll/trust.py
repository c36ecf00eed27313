"""Whom to believe: only upstream fixes upstream.

A PR that mentions a tracked one counts as superseding it only when it comes from the tracked
item's own repository (or one the config names in `supersede_from`) and was merged into that
repository's default branch: anyone can open and merge a PR in their own fork that mentions
ours. A reference whose source names no repository (a malformed answer) is never taken for
the item's own: it is context, like a stranger's. Other referencing PRs are context, shown and never counted. An issue closed as completed
by its own author, with no merged PR or commit linked to it, is "closed by its author", not
fixed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from watcher.config.model import Item

if TYPE_CHECKING:
    from watcher.github.client import GitHubClient

MAX_CONTEXT = 5


def repo_of(issue_like: dict[str, Any]) -> str | None:
    """owner/name of an issue object from a timeline event (repository or its URLs)."""
    repo = issue_like.get("repository") or {}
    if repo.get("full_name"):
        return repo["full_name"]
    for key in ("repository_url", "url"):
        m = re.search(r"/repos/([^/]+/[^/]+)", issue_like.get(key) or "")
        if m:
            return m.group(1)
    return None


def trusted(item: Item) -> set[str]:
    """The repositories (lower-case) whose merged PRs may supersede this item."""
    return {item.repo.lower(), *(r.lower() for r in item.supersede_from)}


def referencing_pulls(events: list[dict[str, Any]], item: Item) -> list[tuple[str, int, dict]]:
    """(repo, number, source issue) of each PR that cross-references the item, oldest first;
    repo is "" when the source names none (fail closed: never assumed to be the item's)."""
    out: list[tuple[str, int, dict]] = []
    seen = {(item.repo.lower(), item.number)}
    for ev in events:
        if ev.get("event") != "cross-referenced":
            continue
        source = (ev.get("source") or {}).get("issue") or {}
        if "pull_request" not in source or not source.get("number"):
            continue
        repo = repo_of(source) or ""
        key = (repo.lower(), int(source["number"]))
        if key in seen:
            continue
        seen.add(key)
        out.append((repo, int(source["number"]), source))
    return out


def superseding(
    client: GitHubClient, item: Item, events: list[dict[str, Any]], pull_state
) -> tuple[tuple[str, int, dict] | None, list[dict[str, Any]]]:
    """(the trusted merged PR that supersedes the item, or None; the other referencing PRs as
    context: [{repo, number, title, url, state, why}], newest first)."""
    allowed = trusted(item)
    context: list[dict[str, Any]] = []
    fix = None
    defaults: dict[str, str] = {}
    for repo, number, source in reversed(referencing_pulls(events, item)):  # newest first
        entry = {
            "repo": repo,
            "number": number,
            "title": source.get("title"),
            "url": source.get("html_url"),
        }
        if not repo:
            entry.update(state=None, why="names no repository")
            context.append(entry)
            continue
        if repo.lower() not in allowed:
            entry.update(state=None, why="not from a trusted repository")
            context.append(entry)
            continue
        pull = client.get_json(f"/repos/{repo}/pulls/{number}")
        entry.update(state=pull_state(pull), title=pull.get("title"))
        if entry["state"] != "merged":
            entry["why"] = "not merged"
            context.append(entry)
            continue
        base = ((pull.get("base") or {}).get("ref")) or None
        if repo not in defaults:  # the pull's JSON embeds its base repository: no read for it
            embedded = ((pull.get("base") or {}).get("repo")) or {}
            same = str(embedded.get("full_name") or "").lower() == repo.lower()
            defaults[repo] = (
                embedded["default_branch"]
                if same and embedded.get("default_branch")
                else client.get_json(f"/repos/{repo}")["default_branch"]
            )
        if base is not None and base != defaults[repo]:
            entry["why"] = f"merged into {base}, not {defaults[repo]}"
            context.append(entry)
            continue
        if fix is None:
            fix = (repo, number, pull)
        else:
            context.append(dict(entry, why="an older merged reference"))
    return fix, context[:MAX_CONTEXT]


def author_closed(issue: dict[str, Any]) -> bool | None:
    """Did the issue's author close it? None when the issue does not say (ask the timeline)."""
    author = ((issue.get("user") or {}).get("login") or "").lower()
    closer = ((issue.get("closed_by") or {}).get("login") or "").lower()
    if not author:
        return False
    return (closer == author) if closer else None


def closed_by_author(issue: dict[str, Any], events: list[dict[str, Any]]) -> bool:
    """Closed as completed by the one who opened it, with nothing merged linked to it: no
    closing commit, no merged PR that cross-references or is connected to it."""
    author = ((issue.get("user") or {}).get("login") or "").lower()
    closer = ((issue.get("closed_by") or {}).get("login") or "").lower()
    closed = [e for e in events if e.get("event") == "closed"]
    if not closer and closed:
        closer = ((closed[-1].get("actor") or {}).get("login") or "").lower()
    if not author or closer != author:
        return False
    if any(e.get("commit_id") for e in closed):
        return False  # closed by a commit ("Fixes #N" landing)
    for ev in events:
        if ev.get("event") == "connected":
            return False  # someone linked a PR to it (GitHub does not say which)
        if ev.get("event") != "cross-referenced":
            continue
        source = (ev.get("source") or {}).get("issue") or {}
        if ((source.get("pull_request") or {}).get("merged_at")) is not None:
            return False
    return True
