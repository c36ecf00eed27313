"""Reading an item's state from GitHub.

The state words it writes, and what they mean, live in `watcher.states`. Closed is not fixed: a
closed PR is searched for a superseding merged PR, and a merged fix is located in the first release
that contains it (compare API, never dates).
"""

from __future__ import annotations

import hashlib
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from watcher.config import Item
from watcher.errors import GitHubError
from watcher.github import GitHubClient

MAX_COMMITS_SHOWN = 20


@dataclass
class Observation:
    """What one poll saw of one item; `error` set means nothing else is to be trusted."""

    item_id: str
    state: str | None = None
    title: str | None = None
    url: str | None = None
    superseded_by: int | None = None
    superseded_state: str | None = None
    in_release: str | None = None
    updated_at: str | None = None
    moved_to: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def fingerprint(self) -> str:
        """Hash of what matters; a changed fingerprint is a change worth recording."""
        significant = {
            "state": self.state,
            "title": self.title,
            "superseded_by": self.superseded_by,
            "superseded_state": self.superseded_state,
            "in_release": self.in_release,
            "shas": [c["sha"] for c in self.details.get("commits", [])],
            "releases": [r["tag"] for r in self.details.get("releases", [])][:1],
            "moved_to": self.moved_to,
        }
        return hashlib.sha256(json.dumps(significant, sort_keys=True).encode()).hexdigest()[:16]


def pull_state(pull: dict[str, Any]) -> str:
    if pull.get("merged") or pull.get("merged_at"):
        return "merged"
    if pull.get("state") == "closed":
        return "closed"
    return "draft" if pull.get("draft") else "open"


def issue_state(issue: dict[str, Any]) -> str:
    if issue.get("state") != "closed":
        return "open"
    reason = issue.get("state_reason")
    return reason if reason in ("completed", "not_planned") else "closed"


def _repo_of(issue_like: dict[str, Any]) -> str | None:
    """owner/name of an issue object from a timeline event (repository or its URLs)."""
    repo = issue_like.get("repository") or {}
    if repo.get("full_name"):
        return repo["full_name"]
    for key in ("repository_url", "url"):
        m = re.search(r"/repos/([^/]+/[^/]+)", issue_like.get(key) or "")
        if m:
            return m.group(1)
    return None


class Poller:
    """Polls items concurrently (bounded) through one shared GitHubClient."""

    def __init__(self, client: GitHubClient, concurrency: int = 8):
        self.client = client
        self.concurrency = concurrency

    def poll_all(self, items: list[Item]) -> dict[str, Observation]:
        with ThreadPoolExecutor(
            max_workers=max(1, self.concurrency), thread_name_prefix="poll"
        ) as pool:
            results = pool.map(self.poll, items)
            return {o.item_id: o for o in results}

    def poll(self, item: Item) -> Observation:
        """Never raises for GitHub trouble: returns an Observation with `error` instead."""
        try:
            reader = {
                "pull": self._pull,
                "issue": self._issue,
                "commits": self._commits,
                "releases": self._releases,
            }[item.kind]
            return reader(item)
        except GitHubError as e:
            where = f" ({e.url})" if e.url else ""
            return Observation(item_id=item.id, error=f"{e}{where}")
        except (KeyError, TypeError, ValueError) as e:
            return Observation(
                item_id=item.id, error=f"unexpected response shape: {type(e).__name__}: {e}"
            )

    # -- issue
    def _issue(self, item: Item) -> Observation:
        path = f"/repos/{item.repo}/issues/{item.number}"
        page = self.client.get(path)
        issue = page.data
        return Observation(
            item_id=item.id,
            state=issue_state(issue),
            title=issue["title"],
            url=issue.get("html_url") or item.html_url,
            updated_at=issue.get("closed_at") or issue.get("updated_at"),
            moved_to=page.url if self.client.moved(self.client.url(path), page.url) else None,
            details={"state_reason": issue.get("state_reason"), "is_pull": "pull_request" in issue},
        )

    # -- pull request
    def _pull(self, item: Item) -> Observation:
        path = f"/repos/{item.repo}/pulls/{item.number}"
        page = self.client.get(path)
        pull = page.data
        state = pull_state(pull)
        obs = Observation(
            item_id=item.id,
            state=state,
            title=pull["title"],
            url=pull.get("html_url") or item.html_url,
            updated_at=pull.get("merged_at") or pull.get("closed_at") or pull.get("updated_at"),
            moved_to=page.url if self.client.moved(self.client.url(path), page.url) else None,
            details={"merged_at": pull.get("merged_at"), "closed_at": pull.get("closed_at")},
        )
        merge_sha, fix_repo = None, item.repo
        if state == "merged":
            merge_sha = pull.get("merge_commit_sha")
        elif state == "closed":
            sup = self._superseding(item)
            if sup:
                fix_repo, number, sup_pull = sup
                obs.superseded_by = number
                obs.superseded_state = pull_state(sup_pull)
                obs.details["superseded_repo"] = fix_repo
                obs.details["superseded_title"] = sup_pull.get("title")
                obs.details["superseded_url"] = sup_pull.get("html_url")
                obs.details["superseded_merged_at"] = sup_pull.get("merged_at")
                if obs.superseded_state == "merged":
                    merge_sha = sup_pull.get("merge_commit_sha")
        if merge_sha:
            obs.details["merge_commit_sha"] = merge_sha
            obs.in_release = self.first_release_containing(fix_repo, merge_sha)
        return obs

    def _superseding(self, item: Item) -> tuple[str, int, dict[str, Any]] | None:
        """A merged PR that cross-references this closed one; else the newest referencing PR."""
        events = self.client.paginate(
            f"/repos/{item.repo}/issues/{item.number}/timeline", {"per_page": 100}
        )
        candidates: list[tuple[str, int]] = []
        for ev in events:
            if ev.get("event") != "cross-referenced":
                continue
            source = (ev.get("source") or {}).get("issue") or {}
            if "pull_request" not in source or not source.get("number"):
                continue
            repo = _repo_of(source) or item.repo
            key = (repo, int(source["number"]))
            if key not in candidates and key != (item.repo, item.number):
                candidates.append(key)
        fallback = None
        for repo, number in reversed(candidates):  # newest reference first
            pull = self.client.get_json(f"/repos/{repo}/pulls/{number}")
            if pull_state(pull) == "merged":
                return repo, number, pull
            fallback = fallback or (repo, number, pull)
        return fallback

    def first_release_containing(self, repo: str, sha: str) -> str | None:
        """The oldest published release whose tag contains `sha`, by the compare API.

        Releases are ordered oldest to newest; containment is monotone along a release line, so
        a binary search asks log2(n) compares. `behind` or `identical` means contained.
        """
        releases = [
            r
            for r in self.client.paginate(f"/repos/{repo}/releases", {"per_page": 100})
            if not r.get("draft") and not r.get("prerelease")
        ]
        releases.sort(key=lambda r: (r.get("published_at") or r.get("created_at") or "", r["id"]))
        tags = [r["tag_name"] for r in releases]
        if not tags or not self._contains(repo, tags[-1], sha):
            return None
        lo, hi = 0, len(tags) - 1  # tags[hi] contains
        while lo < hi:
            mid = (lo + hi) // 2
            if self._contains(repo, tags[mid], sha):
                hi = mid
            else:
                lo = mid + 1
        return tags[lo]

    def _contains(self, repo: str, tag: str, sha: str) -> bool:
        try:
            data = self.client.get_json(f"/repos/{repo}/compare/{tag}...{sha}", {"per_page": 1})
        except GitHubError as e:
            if e.status == 404:  # the sha is not reachable from this tag's history at all
                return False
            raise
        return data.get("status") in ("behind", "identical")

    # -- commit stream
    def _commits(self, item: Item) -> Observation:
        pattern = re.compile(item.pattern) if item.pattern else None
        params: dict[str, Any] = {"per_page": 100}
        if item.since:
            params["since"] = item.since
        if item.branch:
            params["sha"] = item.branch
        seen: dict[str, dict[str, Any]] = {}
        for path in item.paths or (None,):
            query = dict(params, path=path) if path else params
            for c in self.client.paginate(f"/repos/{item.repo}/commits", query, max_pages=3):
                seen.setdefault(c["sha"], c)
        matches = []
        for sha, c in seen.items():
            message = (c.get("commit") or {}).get("message") or ""
            if pattern and not pattern.search(message):
                continue
            commit = c.get("commit") or {}
            date = (commit.get("committer") or {}).get("date") or (commit.get("author") or {}).get(
                "date"
            )
            matches.append(
                {
                    "sha": sha,
                    "date": date,
                    "subject": message.splitlines()[0] if message else "",
                    "url": c.get("html_url") or f"https://github.com/{item.repo}/commit/{sha}",
                }
            )
        matches.sort(key=lambda m: (m["date"] or "", m["sha"]), reverse=True)
        return Observation(
            item_id=item.id,
            state="matched" if matches else "no-match",
            title=(matches[0]["subject"] if matches else f"no matching commits in {item.repo}"),
            url=matches[0]["url"] if matches else item.html_url,
            updated_at=matches[0]["date"] if matches else None,
            details={
                "commits": matches[:MAX_COMMITS_SHOWN],
                "matched": len(matches),
                "scanned": len(seen),
            },
        )

    # -- release stream
    def _releases(self, item: Item) -> Observation:
        data = self.client.get_json(f"/repos/{item.repo}/releases", {"per_page": 30})
        releases = [
            {
                "tag": r["tag_name"],
                "name": r.get("name"),
                "published_at": r.get("published_at"),
                "url": r.get("html_url"),
                "prerelease": bool(r.get("prerelease")),
            }
            for r in data
            if not r.get("draft")
        ]
        if item.since:
            releases = [r for r in releases if (r["published_at"] or "") >= item.since]
        releases.sort(key=lambda r: r["published_at"] or "", reverse=True)
        latest = releases[0] if releases else None
        return Observation(
            item_id=item.id,
            state=latest["tag"] if latest else "none",
            title=(latest["name"] or latest["tag"]) if latest else f"no releases of {item.repo}",
            url=latest["url"] if latest else item.html_url,
            updated_at=latest["published_at"] if latest else None,
            details={"releases": releases[:10]},
        )
