"""How a stored row is shown: the one shape the status document, pages, site, CLI and explain share
(its evidence and warnings included), and an item's state said in words.

It lives below them all, so a command that only reads the store (explain, `watcher status`) never
imports the renderer or its templates.
"""

from __future__ import annotations

import re
from typing import Any

from watcher.config.model import Config, Item
from watcher.judge.states import item_satisfied


def item_evidence(kind: str, details: dict[str, Any]) -> dict[str, Any]:
    """What an item's state rests on: matching commits, or matching lines of code."""
    if kind == "commits":
        return {
            "matches": list(details.get("commits") or []),
            "match_count": details.get("matched", 0),
        }
    if kind == "code" and details.get("code"):
        code = details["code"]
        return {
            "ref": code.get("ref"),
            "sha": code.get("sha"),
            "lines": list(code.get("lines") or []),
            "line_count": code.get("line_count", 0),
            "files_missing": list(code.get("files_missing") or []),
            "not_found": list(code.get("not_found") or []),
            "still_found": list(code.get("still_found") or []),
            "files_read": list(code.get("files_read") or []),
            "moved": dict(code.get("moved") or {}),
            "unreadable": code.get("unreadable"),
        }
    if kind == "pull":
        # the superseding PR by its real repository; referencing PRs that never count
        return {
            "superseded": details.get("superseded_ref"),
            "referenced_by": list(details.get("referenced_by") or []),
        }
    return {}


_WORD = re.compile(r"[a-z0-9]+(?:[.][0-9]+)?")
_FILLER = frozenset(
    "the and for with from into fix fixes fixed support supports add adds issue pull bug bugfix "
    "feature kernel model models".split()
)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _FILLER}


def mislabel(label: str | None, title: str | None) -> str | None:
    """GitHub's title when it shares no word with the config's label (vllm#39931, labelled
    "hybrid attention rollback support", is a TurboQuant PR): every place that prints the
    label then says what GitHub calls the thread. None when they agree or either is missing."""
    if not label or not title:
        return None
    return None if _words(label) & _words(title) else title


def item_view(cfg: Config, item_id: str, row: dict[str, Any] | None) -> dict[str, Any]:
    """One item as the status document, the pages and the site show it."""
    item = cfg.item(item_id)
    row = row or {}
    details = row.get("details") or {}
    return {
        "id": item.id,
        "repo": item.repo,
        "kind": item.kind,
        "number": item.number,
        "label": item.label,
        "title": row.get("title"),
        "mislabel": mislabel(item.label, row.get("title"))
        if item.kind in ("issue", "pull")
        else None,
        "state": row.get("state") or "unknown",
        "url": row.get("url") or item.html_url,
        "superseded_by": row.get("superseded_by"),
        "superseded_state": row.get("superseded_state"),
        "in_release": row.get("in_release"),
        "stale": bool(row.get("stale")) or not row,
        "error": row.get("error"),
        "moved_to": row.get("moved_to"),
        "checked_at": row.get("checked_at"),
        "changed_at": row.get("changed_at"),
        "updated_at": row.get("updated_at"),
        "details": details,
        "snoozed_until": item.snooze.until.isoformat() if item.snooze else None,
        "summary": item_phrase(item, row),
        "warnings": list(details.get("warnings") or []),
        "evidence": item_evidence(item.kind, details),
    }


# How pages name the projects they watch; any other repository is called by its own name.
PROJECT_NAMES = {
    "vllm-project/vllm": "vLLM",
    "sgl-project/sglang": "SGLang",
    "fla-org/flash-linear-attention": "flash-linear-attention",
    "moonshotai/flashkda": "FlashKDA",
}


def project_name(repo: str) -> str:
    return PROJECT_NAMES.get(repo.lower(), repo.rsplit("/", 1)[-1])


def item_phrase(item: Item, row: dict[str, Any] | None) -> str:
    """What an item's last known state means, in words: "fixed in vLLM #45295, first in v0.24.0"."""
    row = row or {}
    name = project_name(item.repo)
    state = row.get("state")
    if not state:
        ref = f" #{item.number}" if item.number else ""
        return f"{name}{ref} not read yet"
    if item.kind == "pull":
        number = item.number
        fix_repo = (row.get("details") or {}).get("superseded_repo") or item.repo
        if state == "closed" and row.get("superseded_state") == "merged":
            number = row.get("superseded_by") or number
            if fix_repo.lower() != item.repo.lower():  # a trusted other repository: say which
                name, number = fix_repo, f"{row.get('superseded_by')}".lstrip("#")
        if not item_satisfied(item, row) and state != "merged":
            sup = row.get("superseded_by")
            via = f", superseded by #{sup} ({row.get('superseded_state')})" if sup else ""
            return f"not fixed in {name} #{item.number} ({state}{via})"
        release = row.get("in_release")
        return f"fixed in {name} #{number}, " + (
            f"first in {release}" if release else "in no release yet"
        )
    if item.kind == "issue":
        if state == "closed-by-author":
            return f"{name} issue #{item.number} was closed by its author, with no fix merged"
        return f"{name} issue #{item.number} is {state.replace('_', ' ')}"
    if item.kind == "commits":
        if state != "matched":
            return f"no matching commits in {name}"
        details = row.get("details") or {}
        newest = details.get("newest") or (details.get("commits") or [{}])[0]
        when = f", newest on {newest['date'][:10]}" if newest.get("date") else ""
        return f"matching commits in {name}{when}"
    if item.kind == "code":
        ref = ((row.get("details") or {}).get("code") or {}).get("ref") or "its ref"
        words = {
            "present": "the fix is in",
            "absent": "the fix is not in",
            "file-missing": "the checked files are missing from",
            "unreadable": "the checked files can't be read in",
        }
        return f"{words.get(state, state)} {name}'s code at {ref}"
    return f"latest {name} release: {state}"
