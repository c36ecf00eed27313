"""GitHub's JSON shapes for users, repositories, issues, pulls, comments, timeline events and the
rate limit, built from the state model with the fields GitHub's OpenAPI description requires.

Every function takes the running fake first (for its base URL and its records).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from watcher.fakes.github.util import WEB, color, node, num, sha

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub
    from watcher.fakes.github.state import Repo


def api_url(gh: FakeGitHub, r: Repo) -> str:
    return f"{gh.url}/repos/{r.full_name}"


def user_json(gh: FakeGitHub, login: str) -> dict:
    ident = num("user", login.lower())
    api = f"{gh.url}/users/{quote(login)}"
    return {
        "login": login,
        "id": ident,
        "node_id": node("User", ident),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{ident}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{WEB}/{quote(login)}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": "Bot" if login.endswith("[bot]") else "User",
        "user_view_type": "public",
        "site_admin": False,
    }


def repo_json(gh: FakeGitHub, r: Repo) -> dict:
    api = api_url(gh, r)
    owner = user_json(gh, r.owner)
    owner["type"] = "Organization"
    head = r.git.head()
    pushed = head["date"] if head else "2026-01-01T00:00:00Z"
    return {
        "id": r.id,
        "node_id": node("Repository", r.id),
        "name": r.name,
        "full_name": r.full_name,
        "private": False,
        "owner": owner,
        "html_url": f"{WEB}/{r.full_name}",
        "description": None,
        "fork": False,
        "url": api,
        "archive_url": f"{api}/{{archive_format}}{{/ref}}",
        "assignees_url": f"{api}/assignees{{/user}}",
        "blobs_url": f"{api}/git/blobs{{/sha}}",
        "branches_url": f"{api}/branches{{/branch}}",
        "collaborators_url": f"{api}/collaborators{{/collaborator}}",
        "comments_url": f"{api}/comments{{/number}}",
        "commits_url": f"{api}/commits{{/sha}}",
        "compare_url": f"{api}/compare/{{base}}...{{head}}",
        "contents_url": f"{api}/contents/{{+path}}",
        "contributors_url": f"{api}/contributors",
        "deployments_url": f"{api}/deployments",
        "downloads_url": f"{api}/downloads",
        "events_url": f"{api}/events",
        "forks_url": f"{api}/forks",
        "git_commits_url": f"{api}/git/commits{{/sha}}",
        "git_refs_url": f"{api}/git/refs{{/sha}}",
        "git_tags_url": f"{api}/git/tags{{/sha}}",
        "git_url": f"git://github.com/{r.full_name}.git",
        "issue_comment_url": f"{api}/issues/comments{{/number}}",
        "issue_events_url": f"{api}/issues/events{{/number}}",
        "issues_url": f"{api}/issues{{/number}}",
        "keys_url": f"{api}/keys{{/key_id}}",
        "labels_url": f"{api}/labels{{/name}}",
        "languages_url": f"{api}/languages",
        "merges_url": f"{api}/merges",
        "milestones_url": f"{api}/milestones{{/number}}",
        "notifications_url": f"{api}/notifications{{?since,all,participating}}",
        "pulls_url": f"{api}/pulls{{/number}}",
        "releases_url": f"{api}/releases{{/id}}",
        "ssh_url": f"git@github.com:{r.full_name}.git",
        "stargazers_url": f"{api}/stargazers",
        "statuses_url": f"{api}/statuses/{{sha}}",
        "subscribers_url": f"{api}/subscribers",
        "subscription_url": f"{api}/subscription",
        "tags_url": f"{api}/tags",
        "teams_url": f"{api}/teams",
        "trees_url": f"{api}/git/trees{{/sha}}",
        "clone_url": f"{WEB}/{r.full_name}.git",
        "mirror_url": None,
        "hooks_url": f"{api}/hooks",
        "svn_url": f"{WEB}/{r.full_name}",
        "homepage": None,
        "language": "Python",
        "forks_count": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "size": 0,
        "default_branch": r.git.default_branch,
        "open_issues_count": sum(1 for i in r.issues.values() if i["state"] == "open"),
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": True,
        "has_wiki": False,
        "has_pages": False,
        "has_downloads": True,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": "public",
        "pushed_at": pushed,
        "created_at": "2023-01-01T00:00:00Z",
        "updated_at": pushed,
        "license": None,
        "forks": 0,
        "open_issues": sum(1 for i in r.issues.values() if i["state"] == "open"),
        "watchers": 0,
        "network_count": 0,
        "subscribers_count": 0,
    }


def labels_json(gh: FakeGitHub, r: Repo, labels: list) -> list[dict]:
    out = []
    for label in labels:
        spec = {"name": label} if isinstance(label, str) else dict(label)
        name = spec["name"]
        ident = num("label", r.full_name, name)
        out.append(
            {
                "id": ident,
                "node_id": node("Label", ident),
                "url": f"{api_url(gh, r)}/labels/{quote(name)}",
                "name": name,
                "description": spec.get("description"),
                "color": spec.get("color") or color(name),
                "default": bool(spec.get("default", False)),
            }
        )
    return out


def reactions_json(url: str) -> dict:
    counts = dict.fromkeys(
        ("+1", "-1", "laugh", "hooray", "confused", "heart", "rocket", "eyes"), 0
    )
    return {"url": f"{url}/reactions", "total_count": 0, **counts}


def issue_json(gh: FakeGitHub, rec: dict, with_repo: bool = False) -> dict:
    r, n = rec["repo"], rec["number"]
    api = api_url(gh, r)
    ident = num("issue", r.full_name.lower(), n)
    kind = "pull" if rec["is_pull"] else "issues"
    out = {
        "id": ident,
        "node_id": node("PullRequest" if rec["is_pull"] else "Issue", ident),
        "url": f"{api}/issues/{n}",
        "repository_url": api,
        "labels_url": f"{api}/issues/{n}/labels{{/name}}",
        "comments_url": f"{api}/issues/{n}/comments",
        "events_url": f"{api}/issues/{n}/events",
        "html_url": f"{WEB}/{r.full_name}/{kind}/{n}",
        "number": n,
        "state": rec["state"],
        "title": rec["title"],
        "body": rec["body"] or None,
        "user": user_json(gh, rec["user"]),
        "labels": labels_json(gh, r, rec["labels"]),
        "assignee": None,
        "assignees": [],
        "milestone": None,
        "locked": False,
        "active_lock_reason": None,
        "comments": len(gh._issue_comments(rec)),
        "closed_at": rec["closed_at"],
        "created_at": rec["created_at"],
        "updated_at": rec["updated_at"],
        "closed_by": (
            user_json(gh, rec.get("closed_by") or r.owner)
            if rec["state"] == "closed" and rec.get("closed_by") != ""
            else None
        ),
        "author_association": "CONTRIBUTOR",
        "state_reason": rec["state_reason"],
        "reactions": reactions_json(f"{api}/issues/{n}"),
        "timeline_url": f"{api}/issues/{n}/timeline",
        "performed_via_github_app": None,
    }
    if rec["is_pull"]:
        html = f"{WEB}/{r.full_name}/pull/{n}"
        out["draft"] = rec["draft"]
        out["pull_request"] = {
            "url": f"{api}/pulls/{n}",
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "merged_at": rec["merged_at"],
        }
    if with_repo:
        out["repository"] = repo_json(gh, r)
    out.update({k: v for k, v in rec["extra"].items() if k in out})
    return out


def ref_json(gh: FakeGitHub, rec: dict, ref: str, sha: str) -> dict:
    r = rec["repo"]
    return {
        "label": f"{r.owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user_json(gh, r.owner),
        "repo": repo_json(gh, r),
    }


def pull_json(gh: FakeGitHub, rec: dict) -> dict:
    r, n = rec["repo"], rec["number"]
    api = api_url(gh, r)
    html = f"{WEB}/{r.full_name}/pull/{n}"
    ident = num("pull", r.full_name.lower(), n)
    head_sha = sha("head", r.full_name, n, rec["head_ref"])
    head = r.git.head()
    base_sha = head["sha"] if head else sha("base", r.full_name, n)
    is_open = rec["state"] == "open"
    links = {
        "self": f"{api}/pulls/{n}",
        "html": html,
        "issue": f"{api}/issues/{n}",
        "comments": f"{api}/issues/{n}/comments",
        "review_comments": f"{api}/pulls/{n}/comments",
        "review_comment": f"{api}/pulls/comments{{/number}}",
        "commits": f"{api}/pulls/{n}/commits",
        "statuses": f"{api}/statuses/{head_sha}",
    }
    out = {
        "url": f"{api}/pulls/{n}",
        "id": ident,
        "node_id": node("PullRequest", ident),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": f"{api}/issues/{n}",
        "commits_url": f"{api}/pulls/{n}/commits",
        "review_comments_url": f"{api}/pulls/{n}/comments",
        "review_comment_url": f"{api}/pulls/comments{{/number}}",
        "comments_url": f"{api}/issues/{n}/comments",
        "statuses_url": f"{api}/statuses/{head_sha}",
        "number": n,
        "state": rec["state"],
        "locked": False,
        "title": rec["title"],
        "user": user_json(gh, rec["user"]),
        "body": rec["body"] or None,
        "labels": labels_json(gh, r, rec["labels"]),
        "milestone": None,
        "active_lock_reason": None,
        "created_at": rec["created_at"],
        "updated_at": rec["updated_at"],
        "closed_at": rec["closed_at"],
        "merged_at": rec["merged_at"],
        "merge_commit_sha": rec["merge_commit_sha"],
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": ref_json(gh, rec, rec["head_ref"], head_sha),
        "base": ref_json(gh, rec, rec["base_ref"], base_sha),
        "_links": {k: {"href": v} for k, v in links.items()},
        "author_association": "CONTRIBUTOR",
        "auto_merge": None,
        "draft": rec["draft"],
        "merged": rec["merged"],
        "mergeable": (not rec["draft"]) if is_open else None,
        "rebaseable": (not rec["draft"]) if is_open else None,
        "mergeable_state": ("draft" if rec["draft"] else "clean") if is_open else "unknown",
        "merged_by": user_json(gh, rec["user"]) if rec["merged"] else None,
        "comments": len(gh._issue_comments(rec)),
        "review_comments": 0,
        "maintainer_can_modify": False,
        "commits": 1,
        "additions": 12,
        "deletions": 3,
        "changed_files": 2,
    }
    out.update({k: v for k, v in rec["extra"].items() if k in out})
    return out


def comment_json(gh: FakeGitHub, c: dict) -> dict:
    issue = c["issue"]
    r = issue["repo"]
    api = api_url(gh, r)
    kind = "pull" if issue["is_pull"] else "issues"
    return {
        "url": f"{api}/issues/comments/{c['id']}",
        "html_url": f"{WEB}/{r.full_name}/{kind}/{issue['number']}#issuecomment-{c['id']}",
        "issue_url": f"{api}/issues/{issue['number']}",
        "id": c["id"],
        "node_id": node("IssueComment", c["id"]),
        "user": user_json(gh, c["user"]),
        "created_at": c["created_at"],
        "updated_at": c["updated_at"],
        "author_association": "NONE",
        "body": c["body"],
        "reactions": reactions_json(f"{api}/issues/comments/{c['id']}"),
        "performed_via_github_app": None,
    }


def event_json(gh: FakeGitHub, r: Repo, ev: dict) -> dict:
    if "_cross_ref" in ev:
        src_repo, src_number = ev["_cross_ref"]
        source = gh._record(src_repo, src_number)
        return {
            "event": "cross-referenced",
            "created_at": ev["created_at"],
            "updated_at": ev["updated_at"],
            "actor": user_json(gh, source["user"]),
            "source": {"type": "issue", "issue": issue_json(gh, source, with_repo=True)},
        }
    out = dict(ev)
    if isinstance(out.get("actor"), str):
        out["actor"] = user_json(gh, out["actor"])
    if isinstance(out.get("url"), str) and out["url"].startswith("/"):
        out["url"] = gh.url + out["url"]
    return out


def rate_json(gh: FakeGitHub) -> dict:
    def bucket(limit: int, remaining: int, resource: str) -> dict:
        return {
            "limit": limit,
            "remaining": remaining,
            "reset": gh.rate_reset,
            "used": limit - remaining,
            "resource": resource,
        }

    core = bucket(gh.rate_limit, gh.rate_remaining, "core")
    return {
        "resources": {
            "core": core,
            "search": bucket(30, 30, "search"),
            "graphql": bucket(5000, 5000, "graphql"),
            "integration_manifest": bucket(5000, 5000, "integration_manifest"),
            "code_search": bucket(10, 10, "code_search"),
        },
        "rate": dict(core),
    }


def public_user_json(gh: FakeGitHub, login: str) -> dict:
    out = user_json(gh, login)
    out.update(
        {
            "name": login,
            "company": None,
            "blog": "",
            "location": None,
            "email": None,
            "hireable": None,
            "bio": None,
            "twitter_username": None,
            "public_repos": 1,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
        }
    )
    return out


# ---------------------------------------------------------------- refs and history


def permission_json(gh: FakeGitHub, login: str, role: str) -> dict:
    """GitHub's legacy `permission` folds maintain into write and triage into read."""
    legacy = {"maintain": "write", "triage": "read"}.get(role, role)
    user = user_json(gh, login)
    user.update(
        {
            "email": None,
            "name": login,
            "permissions": {
                "admin": role == "admin",
                "maintain": role in ("admin", "maintain"),
                "push": role in ("admin", "maintain", "write"),
                "triage": role in ("admin", "maintain", "write", "triage"),
                "pull": role != "none",
            },
            "role_name": role,
        }
    )
    return {"permission": legacy, "role_name": role, "user": user}
