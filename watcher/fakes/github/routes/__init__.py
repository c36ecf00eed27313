"""The fake GitHub's routes, grouped by resource; ROUTES maps (verb, path pattern) to a handler.

Each handler is `handler(gh, ctx) -> Reply`; the repo named in the path is looked up (404 if
unknown) before the handler runs. HEAD is answered by the GET handler.
"""

from __future__ import annotations

import re

from watcher.fakes.github.routes import (
    actions,
    comments,
    commits,
    contents,
    events,
    graphql,
    issues,
    releases,
    timeline,
    users,
)

_R = r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
_TABLE = [
    ("GET", _R, contents.get_repo),
    ("GET", _R + r"/branches/(?P<branch>.+)", contents.get_branch),
    ("GET", _R + r"/contents(?:/(?P<path>.*))?", contents.get_contents),
    ("GET", _R + r"/git/trees/(?P<tree>.+)", contents.get_tree),
    ("GET", _R + r"/git/blobs/(?P<sha>[0-9a-f]{40})", contents.get_blob),
    ("GET", _R + r"/git/ref/(?P<ref>.+)", contents.get_ref),
    ("GET", _R + r"/issues/(?P<number>\d+)", issues.get_issue),
    ("GET", _R + r"/pulls/(?P<number>\d+)", issues.get_pull),
    ("GET", _R + r"/issues/(?P<number>\d+)/timeline", timeline.get_timeline),
    ("GET", _R + r"/issues/(?P<number>\d+)/comments", comments.list_comments),
    ("POST", _R + r"/issues/(?P<number>\d+)/comments", comments.create_comment),
    ("GET", _R + r"/issues/comments/(?P<comment_id>\d+)", comments.get_comment),
    ("PATCH", _R + r"/issues/comments/(?P<comment_id>\d+)", comments.update_comment),
    ("DELETE", _R + r"/issues/comments/(?P<comment_id>\d+)", comments.delete_comment),
    ("GET", _R + r"/commits", commits.list_commits),
    ("GET", _R + r"/commits/(?P<ref>.+)", commits.get_commit),
    ("GET", _R + r"/compare/(?P<basehead>.+)", commits.compare),
    ("GET", _R + r"/events", events.list_events),
    ("GET", _R + r"/releases", releases.list_releases),
    ("GET", _R + r"/releases/latest", releases.latest_release),
    ("GET", _R + r"/releases/tags/(?P<tag>.+)", releases.release_by_tag),
    ("GET", _R + r"/tags", releases.list_tags),
    ("GET", _R + r"/collaborators/(?P<username>[^/]+)/permission", users.collaborator_permission),
    ("POST", _R + r"/actions/workflows/(?P<workflow>[^/]+)/dispatches", actions.dispatch),
    ("GET", _R + r"/actions/workflows/(?P<workflow>[^/]+)/runs", actions.list_runs),
    ("GET", _R + r"/actions/runs/(?P<run_id>\d+)", actions.get_run),
    ("GET", _R + r"/actions/runs/(?P<run_id>\d+)/artifacts", actions.list_artifacts),
    (
        "GET",
        _R + r"/actions/artifacts/(?P<artifact_id>\d+)/(?P<format>[^/]+)",
        actions.download_artifact,
    ),
    ("GET", r"^/rate_limit", users.rate_limit_route),
    ("POST", r"^/graphql", graphql.query),
    ("GET", r"^/user", users.get_user),
]
ROUTES = [(verb, re.compile(pattern + "$"), handler) for verb, pattern, handler in _TABLE]

__all__ = ["ROUTES", "actions"]
