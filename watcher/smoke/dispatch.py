"""The `github-actions` backend: run a recipe on a self-hosted GPU runner and fetch its verdict.

POST a `workflow_dispatch` (inputs: recipe, run_id) through the GitHubClient's httpx session,
find the run (from the dispatch answer, else by its run-name, which carries our run_id), and,
once it has completed, download its artifact zip and read `result.json` (and the log, if shipped).
A cycle never waits for the GPU: it dispatches (`dispatch`), records the trigger as dispatched
with the run's id, and collects the result in a later cycle (`collect`). A dispatch is a POST: it
is never retried. If its answer is lost, the run may exist; the trigger waits for it instead of
dispatching a second one.
"""

from __future__ import annotations

import io
import json
import logging
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from watcher.config.model import Config, Recipe, recipe_digest
from watcher.config.signatures import all_signatures
from watcher.core.errors import GitHubError
from watcher.core.redact import redact
from watcher.core.text import storable
from watcher.github.answers import clean
from watcher.github.client import Answer, GitHubClient
from watcher.smoke.hardware import Gpu, GpuReading, check_hardware
from watcher.smoke.run import OUTCOMES, error_doc

log = logging.getLogger("watcher.smoke.dispatch")

ARTIFACT_NAME = "smoke-result"
MAX_LOG_BYTES = 64 * 1024 * 1024
MAX_ARTIFACT_BYTES = MAX_LOG_BYTES + 1024 * 1024  # the zip is at most the log and the result
MAX_RESULT_BYTES = 10 * 1024 * 1024
FIND_RUN_ATTEMPTS = 10


class Unreadable(Exception):
    """A completed run's artifact that cannot be read as a result (a cancelled job's empty
    result.json, a log entry failing its CRC): refused with this reason, never asked again."""


class _Api:
    """Raw JSON calls through the client's transport (origin, deadline and size rules), outside
    its ETag cache (run states move)."""

    def __init__(self, client: GitHubClient):
        self.client = client

    def request(self, method: str, path: str, **kw) -> Answer:
        """A write's redirect is never followed: it comes back as its 3xx status."""
        return self.client.send(method, path, params=kw.get("params"), json_body=kw.get("json"))

    def get_json(self, path: str, params: dict | None = None) -> Any:
        r = self.request("GET", path, params=params)
        if r.status != 200:
            raise GitHubError(
                f"GET {path}: HTTP {r.status}: {storable(r.text[:200])}", r.status, r.url
            )
        return self.client.decode(self.client.url(path), r.content)


@dataclass
class Dispatched:
    """What one dispatch POST left behind: the Actions run (when known), or why there is none.

    `sent` is True whenever a run may exist (even with no id yet): the trigger must then wait for
    it, never dispatch again."""

    sent: bool
    actions_run_id: int | None = None
    error: str | None = None


def dispatch(
    cfg: Config, recipe: Recipe, run_id: str, client: GitHubClient, build: str | None = None
) -> Dispatched:
    """POST one workflow_dispatch (never retried) and learn the run's id when GitHub says it.
    `build` (a bisect step) names the engine build the runner swaps into the recipe."""
    s = cfg.smoke
    api = _Api(client)
    wf = f"/repos/{s.repo}/actions/workflows/{s.workflow}"
    body = {
        "ref": s.ref,
        "inputs": {"recipe": recipe.id, "run_id": run_id, **({"build": build} if build else {})},
        "return_run_details": True,
    }
    try:
        r = api.request("POST", f"{wf}/dispatches", json=body)
    except GitHubError as e:
        return Dispatched(
            True,
            error=f"dispatch of {s.workflow} in {s.repo} got no answer ({e}); a run may have"
            " started, so it was not retried",
        )
    if r.status not in (200, 201, 204):
        return Dispatched(
            False,
            error=f"dispatch of {s.workflow} in {s.repo} refused: HTTP {r.status}:"
            f" {storable(r.text[:200])}",
        )
    gh_run_id = None
    if r.status == 200 and r.content:
        try:
            answer = r.json()
        except (ValueError, RecursionError):
            answer = None
        if isinstance(answer, dict) and isinstance(answer.get("workflow_run_id"), int):
            gh_run_id = answer["workflow_run_id"]
    return Dispatched(True, gh_run_id)


def find_run(cfg: Config, run_id: str, client: GitHubClient) -> int | None:
    """One look for our run by the run-name carrying run_id (GitHub answered 204, or nothing)."""
    s = cfg.smoke
    wf = f"/repos/{s.repo}/actions/workflows/{s.workflow}"
    data = _Api(client).get_json(f"{wf}/runs", {"event": "workflow_dispatch", "per_page": 30})
    for run in data.get("workflow_runs") or []:
        if run_id in (run.get("display_title") or run.get("name") or ""):
            return int(run["id"])
    return None


def collect(
    cfg: Config, recipe: Recipe, run_id: str, gh_run_id: int, client: GitHubClient
) -> dict[str, Any] | None:
    """The result of a dispatched run if it has completed, else None (ask again next cycle).

    A run GitHub no longer knows (404: deleted, or expired) comes back as an `error` document
    marked `vanished`; GitHub trouble raises GitHubError (the trigger stays, retried next cycle).
    """
    s = cfg.smoke
    api = _Api(client)
    r = api.request("GET", f"/repos/{s.repo}/actions/runs/{gh_run_id}")
    if r.status == 404:
        doc = _error(recipe, run_id, f"Actions run {gh_run_id} vanished (GitHub answers 404)")
        doc["vanished"] = True
        return doc
    if r.status != 200:
        raise GitHubError(f"GET actions run {gh_run_id}: HTTP {r.status}", r.status)
    run = api.client.decode(api.client.url(f"/repos/{s.repo}/actions/runs/{gh_run_id}"), r.content)
    if not isinstance(run, dict):
        raise GitHubError(f"GET actions run {gh_run_id}: not an object", r.status)
    if run.get("status") != "completed":
        return None
    return settle(api, cfg, recipe, run, run_id)


def settle(api: _Api, cfg: Config, recipe: Recipe, run: dict, run_id: str) -> dict[str, Any]:
    """The final document of a completed run: its accepted result, or an `error` saying why
    there is none (no artifact, an unreadable or refused one; a cancelled or timed-out job says
    so). GitHub trouble still raises GitHubError (asked again, until the dispatch timeout)."""
    where = run.get("html_url") or run.get("id")
    concluded = storable(str(run.get("conclusion")))[:40]
    try:
        doc = _fetch_result(api, cfg, cfg.smoke.repo, run, run_id)
    except Unreadable as e:
        out = _error(recipe, run_id, f"Actions run {where} concluded {concluded}; refused: {e}")
        out["refused"] = True
        out["actions_run_url"] = run.get("html_url")
        return out
    if doc is None:
        return _error(
            recipe,
            run_id,
            f"Actions run {where} concluded {concluded} without a {ARTIFACT_NAME} artifact",
        )
    return accept(cfg, recipe, run, run_id, doc)


def dispatch_and_wait(
    cfg: Config,
    recipe: Recipe,
    run_id: str,
    client: GitHubClient,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Dispatch one run and wait for its result (`watcher smoke` on the Actions backend; cycles
    use `dispatch` and `collect` instead, never waiting). Failures come back as `error` docs."""
    s = cfg.smoke
    api = _Api(client)
    wf = f"/repos/{s.repo}/actions/workflows/{s.workflow}"
    started = time.monotonic()
    sent = dispatch(cfg, recipe, run_id, client)
    if sent.error:
        return _error(recipe, run_id, sent.error)
    gh_run_id = sent.actions_run_id
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
        return settle(api, cfg, recipe, run, run_id)
    except GitHubError as e:
        return _error(recipe, run_id, f"Actions run of {s.workflow}: {e}")


def refusal(cfg: Config, recipe: Recipe, run: dict, doc: dict[str, Any]) -> str | None:
    """Why the result of an Actions run is not accepted as this dispatch's, or None.

    Accepted only from the run watcher dispatched (a workflow_dispatch of the configured repo,
    never a fork's), for the dispatched recipe with the same recipe digest, and with hardware
    that passes the recipe's gate when it claims to (the artifact says what the runner saw).
    """
    event = run.get("event")
    if event != "workflow_dispatch":
        return f"the Actions run was started by {storable(str(event))[:40]!r}, not a dispatch"
    head = run.get("head_repository")
    head = head.get("full_name") if isinstance(head, dict) else None
    if head != cfg.smoke.repo:
        return f"the Actions run ran code from {storable(str(head))[:80]}, not {cfg.smoke.repo}"
    if doc.get("outcome") == "started":
        return (
            "result.json says the run never finished (outcome 'started': the job was cancelled"
            " or died mid-run)"
        )
    if doc.get("recipe") != recipe.id:
        return f"result.json is for recipe {storable(str(doc.get('recipe')))[:80]!r}, dispatched {recipe.id!r}"
    want, got = recipe_digest(recipe, cfg.base_dir), doc.get("recipe_digest")
    if got != want:
        shown = storable(str(got))[:80] if got else "missing"
        return (
            f"its recipe digest ({shown}) is not the dispatched recipe's ({want}): the runner ran"
            " another version of the recipe"
        )
    hw = doc.get("hardware") if isinstance(doc.get("hardware"), dict) else {}
    if hw.get("matches_target"):
        gpus = []
        for g in hw.get("gpus") if isinstance(hw.get("gpus"), list) else []:
            if isinstance(g, dict) and isinstance(g.get("name"), str):
                mem = g.get("memory_mib")  # not reported: the name alone is checked
                ok = isinstance(mem, int) and not isinstance(mem, bool)
                mem = mem if ok else recipe.hardware.min_memory_mib
                gpus.append(Gpu(g["name"], mem, str(g.get("compute_capability") or "")))
        gate = check_hardware(recipe.hardware, GpuReading(tuple(gpus), "artifact"))
        if not gate.matches_target:
            return f"it claims the target hardware, but {gate.reason}"
    return None


def accept(cfg: Config, recipe: Recipe, run: dict, run_id: str, doc: dict) -> dict[str, Any]:
    """`doc` when `refusal` finds nothing; else a refused `error` run that says why (logged, and
    listed on the matrix page), keeping what the artifact claimed."""
    why = refusal(cfg, recipe, run, doc)
    if why is None:
        return doc
    log.warning("smoke %s: refused the result of Actions run %s: %s", run_id, run.get("id"), why)
    out = error_doc(recipe, run_id, f"refused: {why}", backend="github-actions")
    out["refused"] = True
    out["actions_run_url"] = run.get("html_url")
    out["claimed"] = {k: doc.get(k) for k in ("outcome", "host", "recipe_digest", "hardware")}
    return out


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
    r = api.client.download(art["archive_download_url"], MAX_ARTIFACT_BYTES)
    if r.status != 200:
        raise GitHubError(f"artifact download: HTTP {r.status}", r.status, r.url)
    name = storable(str(art.get("name")))[:80]
    try:
        zf = zipfile.ZipFile(io.BytesIO(r.content))
        names = zf.namelist()
        result = next((n for n in names if n.rsplit("/", 1)[-1] == "result.json"), None)
        if result is None:
            raise Unreadable(f"artifact {name} holds no result.json ({names[:5]})")
        if zf.getinfo(result).file_size > MAX_RESULT_BYTES:
            raise Unreadable(f"artifact {name}: result.json is too large")
        doc = clean(json.loads(zf.read(result)))
    except (zipfile.BadZipFile, ValueError, KeyError, RecursionError, OSError) as e:
        raise Unreadable(f"artifact {name} is unreadable: {e}") from None
    if not isinstance(doc, dict):
        raise Unreadable(f"artifact {name}: result.json is not an object")
    for key in ("run_id", "recipe", "outcome"):
        if not isinstance(doc.get(key), str):
            raise Unreadable(f"result.json lacks {key!r}")
    if doc["run_id"] != run_id:
        raise Unreadable(
            f"result.json is for run {storable(doc['run_id'])[:80]!r}, expected {run_id!r}"
        )
    if doc["outcome"] not in OUTCOMES:
        raise Unreadable(f"result.json has an unknown outcome {storable(doc['outcome'])[:40]!r}")
    known = {s.id for s in all_signatures(cfg.signatures)} | {
        s for b in cfg.blockers for s in b.signatures
    }
    if doc.get("signature") is not None and doc["signature"] not in known:
        doc["signature"] = None  # only a signature this config names may be shown
    doc["backend"] = "github-actions"
    doc["reason"] = redact(doc.get("reason"))
    doc["excerpt"] = redact(doc.get("excerpt")) or None
    doc["actions_run_url"] = run.get("html_url")
    logs = [n for n in names if n.endswith(".log")]
    if logs and zf.getinfo(logs[0]).file_size <= MAX_LOG_BYTES:
        try:
            data = zf.read(logs[0])
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:  # a bad CRC
            raise Unreadable(f"artifact {name}: its log is unreadable: {e}") from None
        target = cfg.data_dir / "smoke" / f"{run_id}.log"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
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
