"""The fake GitHub's repository events feed, and its moving-repository mode.

GitHub's `GET /repos/{o}/{r}/events` lists what happened in a repository, newest first: at most
300 events and 90 days, not in real time. The state model records one event per change it is
asked to make (an issue or pull opened, edited, closed or merged, a comment, a push, a tag, a
release, a star), with the payload as it stood then, like GitHub's own snapshots.

`churn(repo)` is the moving-repository mode: what real GitHub does between two cycles while
nothing watched changes. A star moves `stargazers_count`, a push of a commit to a file nobody
watches moves `pushed_at`, the head and the tree; both land in the events feed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from watcher.fakes.github import shapes, shapes_git
from watcher.fakes.github.util import iso, later

if TYPE_CHECKING:
    from watcher.fakes.github.state import GitHubState, Repo

WINDOW = 300  # GitHub keeps at most this many events per repository (and 90 days)
# GitHub sends X-Poll-Interval: 60 with the feed. The fake sends none unless told (set
# `events_poll_interval`): tests run cycles seconds apart, and would otherwise skip the feed.
POLL_INTERVAL = None


def record(gh: GitHubState, r: Repo, kind: str, payload: dict, actor: str, at: str | None) -> None:
    """Append one event (the caller holds the lock); the oldest fall out of the window."""
    gh._event_seq += 1
    stamp = iso(at) if at else (r.events[-1]["created_at"] if r.events else "2026-01-05T09:00:00Z")
    r.events.append(
        {
            "id": str(40_000_000_000 + gh._event_seq),
            "type": kind,
            "actor": actor,
            "created_at": stamp,
            "payload": payload,
        }
    )
    del r.events[:-WINDOW]


def issue_event(gh: GitHubState, rec: dict, action: str, at: str | None = None) -> None:
    """IssuesEvent or PullRequestEvent for an issue or pull record as it is now."""
    r = rec["repo"]
    if rec["is_pull"]:
        pull = shapes.pull_json(gh, rec)
        payload = {"action": action, "number": rec["number"], "pull_request": pull}
        record(gh, r, "PullRequestEvent", payload, rec["user"] or "someone", at)
    else:
        payload = {"action": action, "issue": shapes.issue_json(gh, rec)}
        record(gh, r, "IssuesEvent", payload, rec["user"] or "someone", at)


def comment_event(gh: GitHubState, comment: dict) -> None:
    rec = comment["issue"]
    payload = {
        "action": "created",
        "issue": shapes.issue_json(gh, rec),
        "comment": shapes.comment_json(gh, comment),
    }
    record(gh, rec["repo"], "IssueCommentEvent", payload, comment["user"], comment["created_at"])


def push_event(gh: GitHubState, r: Repo, before: str | None, commit: dict) -> None:
    payload = {
        "repository_id": r.id,
        "push_id": 9_000_000_000 + gh._event_seq,
        "ref": f"refs/heads/{r.git.default_branch}",
        "head": commit["sha"],
        "before": before or "0" * 40,
    }
    record(gh, r, "PushEvent", payload, commit["author"], commit["date"])


def tag_event(gh: GitHubState, r: Repo, tag: str) -> None:
    payload = {
        "ref": tag,
        "ref_type": "tag",
        "full_ref": f"refs/tags/{tag}",
        "master_branch": r.git.default_branch,
        "pusher_type": "user",
    }
    record(gh, r, "CreateEvent", payload, "dev", None)


def release_event(gh: GitHubState, r: Repo, rel: dict) -> None:
    payload = {"action": "published", "release": shapes_git.release_json(gh, r, rel)}
    record(gh, r, "ReleaseEvent", payload, "dev", rel["published_at"])


def events_json(gh: GitHubState, r: Repo) -> list[dict]:
    """The feed, newest first, as GitHub renders it."""
    actor_cache: dict[str, dict] = {}
    out = []
    for ev in reversed(r.events):
        login = ev["actor"]
        if login not in actor_cache:
            user = shapes.user_json(gh, login)
            actor_cache[login] = {
                "id": user["id"],
                "login": login,
                "display_login": login,
                "gravatar_id": "",
                "url": user["url"],
                "avatar_url": user["avatar_url"],
            }
        out.append(
            {
                "id": ev["id"],
                "type": ev["type"],
                "actor": actor_cache[login],
                "repo": {"id": r.id, "name": r.full_name, "url": shapes.api_url(gh, r)},
                "payload": ev["payload"],
                "public": True,
                "created_at": ev["created_at"],
            }
        )
    return out


def churn(gh: GitHubState, repo: str, *, pushes: int = 1, stars: int = 1) -> list[str]:
    """Move a repository the way real GitHub does while nothing watched changes: `stars` new
    stars, and `pushes` commits to `docs/churn.md` (a file no rule watches). Returns the shas."""
    shas = []
    with gh._lock:
        r = gh._repo(repo)
        for _ in range(stars):
            r.stars += 1
            record(gh, r, "WatchEvent", {"action": "started"}, f"fan{r.stars}", None)
        for _ in range(pushes):
            head = r.git.head()
            date = later(head["date"], 60) if head else "2026-01-05T09:00:00Z"
            n = len(r.git.commits)
            shas.append(
                gh.add_commit(
                    repo,
                    message=f"docs: churn {n}",
                    date=date,
                    contents={"docs/churn.md": f"churn {n}\n"},
                )["sha"]
            )
    return shas


__all__ = ["churn", "events_json", "record"]
