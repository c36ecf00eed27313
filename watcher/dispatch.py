"""The `github-actions` backend: run a recipe on a self-hosted GPU runner and fetch its verdict.

POST a `workflow_dispatch` (inputs: recipe, run_id) through the GitHubClient's httpx session,
find the run (from the dispatch answer, else by its run-name, which carries our run_id), poll it
until it completes, download its artifact zip and read `result.json` (and the log, if shipped).
A dispatch is a POST: it is never retried. If its answer is lost, the run may exist; the error
says so instead of dispatching a second one.
"""

from __future__ import annotations

import io
import json
import logging
import time
import zipfile
from collections.abc import Callable
from typing import Any

import httpx

from watcher.config import Config, Recipe
from watcher.errors import GitHubError
from watcher.github import GitHubClient
from watcher.redact import redact
from watcher.smoke import error_doc

log = logging.getLogger("watcher.dispatch")

ARTIFACT_NAME = "smoke-result"
MAX_LOG_BYTES = 64 * 1024 * 1024
FIND_RUN_ATTEMPTS = 10


class _Api:
    """Raw JSON calls on the client's session, outside its ETag cache (run states move)."""

    def __init__(self, client: GitHubClient):
        self.client = client

    def request(self, method: str, path: str, **kw) -> httpx.Response:
        try:
            return self.client.http.request(method, self.client.url(path), **kw)
        except httpx.HTTPError as e:
            raise GitHubError(f"{method} {path}: {type(e).__name__}: {e}", url=path) from None

    def get_json(self, path: str, params: dict | None = None) -> Any:
        r = self.request("GET", path, params=params)
        if r.status_code != 200:
            raise GitHubError(
                f"GET {path}: HTTP {r.status_code}: {r.text[:200]}", r.status_code, path
            )
        return r.json()


def dispatch_and_wait(
    cfg: Config,
    recipe: Recipe,
    run_id: str,
    client: GitHubClient,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Dispatch one run and wait for its result document. Failures come back as `error` docs."""
    s = cfg.smoke
    api = _Api(client)
    wf = f"/repos/{s.repo}/actions/workflows/{s.workflow}"
    started = time.monotonic()
    body = {
        "ref": s.ref,
        "inputs": {"recipe": recipe.id, "run_id": run_id},
        "return_run_details": True,
    }
    try:
        r = api.request("POST", f"{wf}/dispatches", json=body)
    except GitHubError as e:
        return _error(
            recipe,
            run_id,
            f"dispatch of {s.workflow} in {s.repo} got no answer ({e}); a run may have started,"
            " so it was not retried",
        )
    if r.status_code not in (200, 201, 204):
        return _error(
            recipe,
            run_id,
            f"dispatch of {s.workflow} in {s.repo} refused: HTTP {r.status_code}: {r.text[:200]}",
        )
    gh_run_id = None
    if r.status_code == 200 and r.content:
        try:
            gh_run_id = r.json().get("workflow_run_id")
        except ValueError:
            gh_run_id = None
    try:
        if gh_run_id is None:
            gh_run_id = _find_run(api, wf, run_id, s.poll_interval, sleep)
        run = _wait_run(
            api, s.repo, gh_run_id, started + s.dispatch_timeout, s.poll_interval, sleep
        )
        if run is None:
            return _error(
                recipe,
                run_id,
                f"Actions run {gh_run_id} gave no result within {s.dispatch_timeout:.0f} s",
            )
        doc = _fetch_result(api, cfg, s.repo, run, run_id)
    except GitHubError as e:
        return _error(recipe, run_id, f"Actions run of {s.workflow}: {e}")
    if doc is None:
        return _error(
            recipe,
            run_id,
            f"Actions run {run.get('html_url') or gh_run_id} concluded"
            f" {run.get('conclusion')} without a {ARTIFACT_NAME} artifact",
        )
    return doc


def _error(recipe: Recipe, run_id: str, reason: str) -> dict[str, Any]:
    log.warning("smoke dispatch %s: %s", run_id, reason)
    return error_doc(recipe, run_id, reason, backend="github-actions")


def _find_run(api: _Api, wf: str, run_id: str, interval: float, sleep) -> int:
    """The dispatch answered 204 (older GitHub): find our run by the run-name carrying run_id."""
    for _ in range(FIND_RUN_ATTEMPTS):
        data = api.get_json(f"{wf}/runs", {"event": "workflow_dispatch", "per_page": 30})
        for run in data.get("workflow_runs") or []:
            if run_id in (run.get("display_title") or run.get("name") or ""):
                return int(run["id"])
        sleep(max(interval, 1.0))
    raise GitHubError(f"dispatched, but no run titled with {run_id} appeared")


def _wait_run(
    api: _Api, repo: str, gh_run_id: int, deadline: float, interval: float, sleep
) -> dict | None:
    while True:
        run = api.get_json(f"/repos/{repo}/actions/runs/{gh_run_id}")
        if run.get("status") == "completed":
            return run
        if time.monotonic() >= deadline:
            return None
        sleep(interval)


def _fetch_result(
    api: _Api, cfg: Config, repo: str, run: dict, run_id: str
) -> dict[str, Any] | None:
    arts = api.get_json(f"/repos/{repo}/actions/runs/{run['id']}/artifacts").get("artifacts") or []
    art = next((a for a in arts if a.get("name") == ARTIFACT_NAME), None)
    if art is None and len(arts) == 1:
        art = arts[0]
    if art is None:
        return None
    r = api.request("GET", art["archive_download_url"])
    if r.status_code != 200:
        raise GitHubError(f"artifact download: HTTP {r.status_code}", r.status_code)
    try:
        zf = zipfile.ZipFile(io.BytesIO(r.content))
        names = zf.namelist()
        result = next((n for n in names if n.rsplit("/", 1)[-1] == "result.json"), None)
        if result is None:
            raise GitHubError(f"artifact {art.get('name')} holds no result.json ({names[:5]})")
        doc = json.loads(zf.read(result))
    except (zipfile.BadZipFile, ValueError, KeyError) as e:
        raise GitHubError(f"artifact {art.get('name')} is unreadable: {e}") from None
    for key in ("run_id", "recipe", "outcome"):
        if key not in doc:
            raise GitHubError(f"result.json lacks {key!r}")
    if doc["run_id"] != run_id:
        raise GitHubError(f"result.json is for run {doc['run_id']!r}, expected {run_id!r}")
    doc["backend"] = "github-actions"
    doc["reason"] = redact(doc.get("reason"))
    doc["excerpt"] = redact(doc.get("excerpt")) or None
    doc["actions_run_url"] = run.get("html_url")
    logs = [n for n in names if n.endswith(".log")]
    if logs and zf.getinfo(logs[0]).file_size <= MAX_LOG_BYTES:
        target = cfg.data_dir / "smoke" / f"{run_id}.log"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(zf.read(logs[0]))
        doc["log_path"] = str(target)
    return doc


def dispatch_runner(client: GitHubClient | None):
    """A trigger runner for the github-actions backend (opens its own client when given none)."""

    def run(cfg: Config, recipe: Recipe, run_id: str) -> dict[str, Any]:
        if client is not None:
            return dispatch_and_wait(cfg, recipe, run_id, client)
        with GitHubClient(
            cfg.settings.github_api_url,
            timeout=cfg.settings.timeout,
            user_agent=cfg.settings.user_agent,
        ) as own:
            return dispatch_and_wait(cfg, recipe, run_id, own)

    return run
