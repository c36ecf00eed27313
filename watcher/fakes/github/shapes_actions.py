"""GitHub's JSON shapes for Actions: workflow runs and their artifacts."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from watcher.fakes.github.shapes import api_url, repo_json, user_json
from watcher.fakes.github.util import WEB, later, node, num, sha

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub
    from watcher.fakes.github.state import Repo


def run_json(gh: FakeGitHub, run: dict) -> dict:
    r: Repo = run["repo"]
    wf = run["workflow"]
    api = api_url(gh, r)
    ident = run["id"]
    url = f"{api}/actions/runs/{ident}"
    suite = num("suite", ident)
    return {
        "id": ident,
        "name": wf["name"],
        "node_id": node("WorkflowRun", ident),
        "head_branch": run["ref"],
        "head_sha": run["head_sha"],
        "path": wf["path"],
        "display_title": run["display_title"],
        "run_number": run["run_number"],
        "run_attempt": 1,
        "event": "workflow_dispatch",
        "status": run["status"],
        "conclusion": run["conclusion"],
        "workflow_id": wf["id"],
        "check_suite_id": suite,
        "check_suite_node_id": node("CheckSuite", suite),
        "url": url,
        "html_url": f"{WEB}/{r.full_name}/actions/runs/{ident}",
        "pull_requests": [],
        "created_at": run["created_at"],
        "updated_at": run["updated_at"],
        "run_started_at": run["created_at"],
        "actor": user_json(gh, run["actor"]),
        "triggering_actor": user_json(gh, run["actor"]),
        "jobs_url": f"{url}/jobs",
        "logs_url": f"{url}/logs",
        "check_suite_url": f"{api}/check-suites/{suite}",
        "artifacts_url": f"{url}/artifacts",
        "cancel_url": f"{url}/cancel",
        "rerun_url": f"{url}/rerun",
        "previous_attempt_url": None,
        "workflow_url": f"{api}/actions/workflows/{wf['id']}",
        "head_commit": {
            "id": run["head_sha"],
            "tree_id": sha("tree", run["head_sha"]),
            "message": run["head_message"],
            "timestamp": run["created_at"],
            "author": {"name": "dev", "email": "dev@users.noreply.github.com"},
            "committer": {"name": "GitHub", "email": "noreply@github.com"},
        },
        "repository": repo_json(gh, r),
        "head_repository": repo_json(gh, r),
    }


def artifact_json(gh: FakeGitHub, art: dict) -> dict:
    r: Repo = art["repo"]
    api = api_url(gh, r)
    run = gh._runs[art["run_id"]]
    return {
        "id": art["id"],
        "node_id": node("Artifact", art["id"]),
        "name": art["name"],
        "size_in_bytes": len(art["zip"]),
        "url": f"{api}/actions/artifacts/{art['id']}",
        "archive_download_url": f"{api}/actions/artifacts/{art['id']}/zip",
        "expired": False,
        "digest": "sha256:" + hashlib.sha256(art["zip"]).hexdigest(),
        "created_at": art["created_at"],
        "updated_at": art["created_at"],
        "expires_at": later(art["created_at"], 90 * 86400),
        "workflow_run": {
            "id": run["id"],
            "repository_id": r.id,
            "head_repository_id": r.id,
            "head_branch": run["ref"],
            "head_sha": run["head_sha"],
        },
    }
