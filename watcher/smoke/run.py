"""The smoke runner: launch a recipe, wait for it, probe it, tear it down, say what happened.

One run = hardware gate -> launch (argv list, own process session, output streamed to
data/smoke/<run_id>.log) -> readiness polling (checking on every pass whether it died) -> probes
(/v1/models, a temperature-0 known answer, a streamed completion for TTFT and decode tokens/s,
spec-decode accept length) -> teardown (SIGTERM every process group of the session, wait, SIGKILL;
`docker rm -f` the named container) -> leftover check -> classify the log -> result document.
The teardown always runs, also on Ctrl-C or SIGTERM of watcher itself.

This module runs those stages in order into one typed result (`store.smokerun.SmokeResult`,
stored as the result document); the argv launcher lives here, the compose one in `compose`, and
what both share (the launcher interface, probing, the verdict) in `sequence`; the stages live in
`launch` (argv, environment, processes, teardown), `probes` (port, readiness, HTTP probes) and
`log` (the capped log). A run is stored as `started` before launch, so the next start can
clean up after a watcher that died mid-run (`recover_interrupted`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watcher.config.model import Config, Recipe, recipe_digest
from watcher.config.signatures import all_signatures
from watcher.core.clock import iso, utcnow
from watcher.core.errors import ConfigError, WatcherError
from watcher.core.progress import Progress
from watcher.core.redact import redact
from watcher.smoke.classify import Classifier
from watcher.smoke.compose import ComposeLauncher, compose_down
from watcher.smoke.hardware import GpuReading, check_hardware, read_gpus
from watcher.smoke.launch import (
    GUARD,
    KILL_WAIT,
    RunProcesses,
    become_subreaper,
    build_argv,
    children_of_self,
    container_name,
    docker_name,
    engine_env,
    is_docker_run,
    remove_container,
    teardown,
)
from watcher.smoke.log import LogPump
from watcher.smoke.probes import generation_answered, refuse_taken_port, served_by, wait_ready
from watcher.smoke.sequence import FATAL_GRACE_S, Launched, Launcher, probe_ready, verdict
from watcher.smoke.session import no_baseline, pick_baseline, sessions, with_comparison
from watcher.store.db import Store
from watcher.store.smokerun import SmokeResult

log = logging.getLogger("watcher.smoke")

STARTED_BUSY_S = 1.0  # the note that the engine is up waits at most this long for the database
OUTCOMES = ("passed", "failed", "timeout", "error", "skipped", "started", "interrupted")


def new_run_id(recipe_id: str) -> str:
    """Sortable and unique: <recipe>-<UTC time>-<4 hex>."""
    return f"{recipe_id}-{utcnow().strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(2)}"


def base_doc(recipe: Recipe, run_id: str, started_at: str | None = None) -> SmokeResult:
    """The result before anything happened (outcome `error`)."""
    return SmokeResult(
        run_id=run_id, recipe=recipe.id, started_at=started_at or iso(utcnow()), host=host_label()
    )


def host_label() -> str:
    """The label the matrix names this host by: WATCHER_HOST_LABEL, else the Actions runner's
    name (RUNNER_NAME), else the host name."""
    env = os.environ
    return env.get("WATCHER_HOST_LABEL") or env.get("RUNNER_NAME") or socket.gethostname()


def error_doc(recipe: Recipe, run_id: str, reason: str, backend: str = "local") -> dict[str, Any]:
    """A run that could not happen (the backend failed): recorded, never validating."""
    res = base_doc(recipe, run_id)
    res.backend, res.reason, res.finished_at = backend, redact(reason), iso(utcnow())
    return res.to_record()


def run_recipe(
    cfg: Config,
    recipe: Recipe,
    *,
    any_hardware: bool = False,
    run_id: str | None = None,
    reading: GpuReading | None = None,
) -> dict[str, Any]:
    """One smoke run of `recipe` on this host -> the result document (`run_result`'s record)."""
    res = run_result(cfg, recipe, any_hardware=any_hardware, run_id=run_id, reading=reading)
    return res.to_record()


def run_result(
    cfg: Config,
    recipe: Recipe,
    *,
    any_hardware: bool = False,
    run_id: str | None = None,
    reading: GpuReading | None = None,
) -> SmokeResult:
    """One smoke run of `recipe` on this host -> its result (never raises for a failure of the
    recipe; a failure of the runner itself is outcome `error`).

    A recipe with a `baseline` runs beside it in the same session (`run_results`): the result
    then carries `comparison` (both figures and the verdict) and `baseline_runs` (the
    baseline's own results, stored as runs of their own).
    """
    ids = {recipe.id: run_id} if run_id else {}
    return run_results(cfg, [recipe], any_hardware=any_hardware, run_ids=ids, reading=reading)[
        recipe.id
    ]


def run_results(
    cfg: Config,
    recipes: list[Recipe],
    *,
    any_hardware: bool = False,
    run_ids: dict[str, str] | None = None,
    reading: GpuReading | None = None,
) -> dict[str, SmokeResult]:
    """Smoke runs of `recipes` on this host, by recipe id. Recipes that share a baseline run in
    one session (`smoke.session`): `compare_rounds` rounds, interleaved (B R1 R2, R2 R1 B, ...),
    the baseline launched once a round for all of them. Its runs are nested (`baseline_runs`)
    in the first candidate's result only, so they are stored once; every candidate's
    `comparison.baseline_run_ids` names them. Each recipe's baseline is the first that fits
    this host (`session.pick_baseline`); with none, the recipe runs alone and says so."""
    reading = reading if reading is not None else read_gpus()
    run_ids = run_ids or {}
    out: dict[str, SmokeResult] = {}
    picks = {r.id: pick_baseline(cfg, r, reading, any_hardware) for r in recipes}
    for s in sessions(cfg, recipes, picked={rid: base for rid, (base, _) in picks.items()}):
        runs: dict[str, list[SmokeResult]] = {r.id: [] for r in s.candidates}
        base_runs: list[SmokeResult] = []
        skipped: dict[str, SmokeResult] = {}
        for i, r in s.order():
            if r.id in skipped:
                continue
            last = i == s.rounds - 1 and r is not s.baseline
            rid = run_ids.get(r.id) if last else None
            res = _run_once(cfg, r, any_hardware=any_hardware, run_id=rid, reading=reading)
            if res.outcome == "skipped" and r is s.baseline:
                for c in s.candidates:
                    skipped.setdefault(c.id, _skipped_like(c, res, run_ids.get(c.id)))
                break
            if res.outcome == "skipped":
                skipped[r.id] = res
            elif r is s.baseline:
                base_runs.append(res)
            else:
                runs[r.id].append(res)
        nested = False
        for c in s.candidates:
            if c.id in skipped or s.baseline is None:
                out[c.id] = skipped.get(c.id) or runs[c.id][-1]
                why = picks[c.id][1]
                if why and out[c.id].outcome != "skipped":
                    out[c.id] = no_baseline(out[c.id], c, why)
                continue
            out[c.id] = with_comparison(c, s.baseline, runs[c.id], base_runs)
            if not nested:
                out[c.id].baseline_runs, nested = base_runs, True
    return out


def _skipped_like(recipe: Recipe, base_run: SmokeResult, run_id: str | None) -> SmokeResult:
    res = base_doc(recipe, run_id or new_run_id(recipe.id))
    res.outcome, res.reason = "skipped", base_run.reason
    res.gpus, res.matches_target = base_run.gpus, base_run.matches_target
    res.finished_at = iso(utcnow())
    return res


def _run_once(
    cfg: Config,
    recipe: Recipe,
    *,
    any_hardware: bool,
    run_id: str | None,
    reading: GpuReading,
) -> SmokeResult:
    run_id = run_id or new_run_id(recipe.id)
    started_at = iso(utcnow())
    gate = check_hardware(recipe.hardware, reading)
    res = base_doc(recipe, run_id, started_at)
    res.recipe_digest = recipe_digest(recipe, cfg.base_dir)
    res.gpus = [g.as_dict() for g in reading.gpus]
    res.matches_target = gate.matches_target
    log.info("smoke %s: %s (read with %s)", run_id, gate.reason, reading.source)
    if not gate.matches_target and not any_hardware:
        res.outcome = "skipped"
        res.reason = redact(
            f"{gate.reason} (--any-hardware runs it anyway, marked off-target: never validates)"
        )
        res.finished_at = iso(utcnow())
        return res
    log_dir = cfg.data_dir / "smoke"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{run_id}.log"
    res.log_path = str(log_path)
    launcher: Launcher = (
        ComposeLauncher(cfg, recipe, run_id, log_path)
        if recipe.compose
        else ArgvLauncher(cfg, recipe, run_id, log_path)
    )
    with GUARD.installed():  # before anything launches: no instant without a teardown
        if launcher.prepare(res):
            mark_started(cfg, res, recover=True)
            seen = launcher.run(res, lambda: mark_started(cfg, res))
            if seen is not None:
                verdict(cfg, recipe, res, seen, log_path)
                launcher.finish(res, seen)
    if not gate.matches_target:
        res.reason += " [off-target hardware: shown, never validates]"
    res.reason = redact(res.reason)
    res.excerpt = redact(res.excerpt) or None
    res.finished_at = iso(utcnow())
    return res


class ArgvLauncher:
    """A recipe's argv list (a local engine or `docker run`): the `Launcher` of most recipes."""

    def __init__(self, cfg: Config, recipe: Recipe, run_id: str, log_path: Path) -> None:
        self.cfg, self.recipe, self.run_id, self.log_path = cfg, recipe, run_id, log_path
        self.argv = build_argv(recipe, container_name(run_id))
        self.container = docker_name(self.argv) if is_docker_run(self.argv) else None
        self.port = recipe.host_port or recipe.port

    def prepare(self, result: SmokeResult) -> bool:
        if refuse_taken_port(
            result, self.port, "the recipe serves on", "stop it, or change the recipe's port"
        ):
            return False
        result.launch = {"container": self.container, "pid": None}
        return True

    def run(self, result: SmokeResult, started: Callable[[], None]) -> Launched | None:
        cfg, recipe, run_id, log_path, argv = (
            self.cfg,
            self.recipe,
            self.run_id,
            self.log_path,
            self.argv,
        )
        container = self.container
        assert result.launch is not None
        seen = Launched()
        become_subreaper()
        known = children_of_self()
        with open(log_path, "ab") as logf:
            logf.write(
                redact(
                    f"# watcher smoke run {run_id} at {result.started_at}\n$ {shlex.join(argv)}\n"
                ).encode()
            )
            logf.flush()
            # built before launch: compiling the families (hyperscan, ~0.3 s) must not widen the
            # window in which the engine runs and a SIGTERM finds no teardown in place
            classifier = Classifier(all_signatures(cfg.signatures))
            GUARD.defer()  # a signal from here to `armed()` waits for the teardown to be in place
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=engine_env(recipe, run_id),
                    cwd=str(cfg.base_dir),
                )
            except OSError as e:
                result.outcome = "error"
                result.reason = f"cannot start {argv[0]!r}: {e.strerror or e}"
                GUARD.armed()
                return None
        result.launch["pid"] = proc.pid
        procs = RunProcesses(proc.pid, run_id, known)
        pump = None
        try:
            GUARD.armed()
            started()  # after `armed`: a slow store never holds a signal back
            pump = LogPump(proc.stdout, log_path, classifier)
            pump.start()
            self._watch(result, proc, procs, pump, seen)
        finally:
            with GUARD.tearing_down():
                seen.td = teardown(proc, recipe.stop_timeout, container, procs)
                result.teardown = seen.td.as_dict()
                result.set_exit_code(proc.returncode)
                if pump is not None and pump.is_alive():
                    pump.join(timeout=5)
        return seen

    def _watch(self, result, proc, procs, pump, seen: Launched) -> None:
        """Wait for the engine and probe it (the teardown is the caller's)."""
        recipe, run_id, container, port = self.recipe, self.run_id, self.container, self.port
        base = f"http://127.0.0.1:{port}"
        subreaper = become_subreaper()
        log.info(
            "smoke %s: launched pid %s, log %s%s",
            run_id,
            proc.pid,
            self.log_path,
            "" if subreaper else " (not a subreaper: a double-forked child could escape teardown)",
        )
        shown = Progress(f"smoke {recipe.id}", deadline_s=recipe.startup_timeout)
        try:
            wait = wait_ready(
                proc,
                base + recipe.ready_path,
                recipe.startup_timeout,
                watch=pump,
                fatal_grace=min(FATAL_GRACE_S, recipe.startup_timeout / 4),
                owner=None if container else (lambda: served_by(port, procs)),
                progress=lambda: shown.update("waiting for the engine", pump.last_line),
                generates=lambda by: generation_answered(base, deadline=by),
            )
            shown.done()
            seen.wait = wait
            if wait.state == "ready":
                log.info("smoke %s: ready after %.1f s; probing", run_id, wait.startup_s)
                probed = probe_ready(base, recipe, wait, result)
                seen.failures, seen.notes = probed.failures, probed.notes
                seen.overran = probed.overran
                if proc.poll() is not None and not seen.failures:
                    seen.failures.append(
                        f"the engine exited (code {proc.returncode}) during the probes"
                    )
        except Exception as e:  # the runner's own bug: still tear down, report `error`
            log.exception("smoke %s: runner failed", run_id)
            result.outcome, result.reason = "error", f"runner error: {type(e).__name__}: {e}"
            seen.wait = None

    def finish(self, result: SmokeResult, launched: Launched) -> None:
        pass


# ---------------------------------------------------------------- storing


def run_message(doc: dict[str, Any]) -> str:
    """The one-line event message for a run, as the page's change list shows it."""
    off = "" if (doc.get("hardware") or {}).get("matches_target") else " (off-target)"
    sig = f" ({doc['signature']})" if doc.get("signature") else ""
    if SmokeResult.from_record(doc).setup_problem:  # never the engine's verdict: say so
        sig = " (a setup problem, not launched: no verdict)"
    return f"smoke run {doc['run_id']} of {doc['recipe']}: {doc['outcome']}{sig}{off}"


def record_run(
    store: Store,
    doc: dict[str, Any] | SmokeResult,
    cycle_id: int | None = None,
    at: str | None = None,
) -> int:
    """Store the result (typed, or a record as a GitHub Actions run uploads it) and one `smoke`
    event (subject: the recipe) for the page's change list; the baseline runs of a comparison
    first, each a run of its own recipe."""
    if isinstance(doc, SmokeResult):
        doc = doc.to_record()
    for base_run in doc.get("baseline_runs") or ():
        record_run(store, base_run, cycle_id, at)
    doc = {k: v for k, v in doc.items() if k != "baseline_runs"}
    store.add_smoke_run(doc)
    message = run_message(doc)
    return store.add_event(
        at or doc.get("finished_at") or iso(utcnow()),
        cycle_id,
        "smoke",
        doc["recipe"],
        None,
        doc["outcome"],
        message,
        {"run_id": doc["run_id"], "matches_target": bool(doc["hardware"]["matches_target"])},
    )


def _start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot): tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return data[data.rfind(")") + 2 :].split()[19]


def _watcher_identity() -> dict[str, Any]:
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "start": _start_time(pid)}


def mark_started(cfg: Config, result: SmokeResult, recover: bool = False) -> None:
    """Store the run as `started` before (and right after) launch: if watcher dies mid-run, the
    next start finds it, tears down what it left and keeps it charged to the daily budget.
    With `recover`, first clean up after runs a dead watcher left."""
    row = json.loads(json.dumps(result.to_record()))
    row.update(outcome="started", reason="running", watcher=_watcher_identity())
    row["hardware"]["matches_target"] = False  # a run that did not finish validates nothing
    try:
        # once the engine runs, never wait 30 s for another writer's lock
        store = Store(cfg.db_path, busy_s=30.0 if recover else STARTED_BUSY_S)
        try:
            if recover:
                recover_interrupted(cfg, store)
            store.add_smoke_run(row)
        finally:
            store.close()
    except (WatcherError, sqlite3.Error) as e:
        log.warning("smoke %s: could not record the start in %s: %s", result.run_id, cfg.db_path, e)


def _owner_alive(who: dict[str, Any]) -> bool:
    """Is the watcher process that started a run still running it? (Elsewhere: assume so.)"""
    if who.get("host") != socket.gethostname():
        return True
    pid = who.get("pid")
    return bool(pid) and _start_time(int(pid)) == who.get("start")


def _still_there(found: dict[int, str | None], procs: RunProcesses) -> dict[int, str | None]:
    """What was found and still runs (the same process: its start time unchanged), with what
    the run's markers and descendants show now."""
    now = {pid: _start_time(pid) for pid, _ in procs.pids()}
    same = {pid: t for pid, t in found.items() if t is not None and _start_time(pid) == t}
    return {pid: t for pid, t in {**same, **now}.items() if _running(pid)}


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return False
    return data[data.rfind(")") + 2 :].split()[0] not in ("Z", "X")


def _stop_found(procs: RunProcesses) -> dict[int, str | None]:
    """SIGTERM, then SIGKILL, every process of a dead watcher's run: what the first look found
    (a helper that dropped the marker and was re-parented after its parent died is no longer
    found by a second look) and whatever the run's marker shows since. Returns what was found."""
    found = {pid: _start_time(pid) for pid, _ in procs.pids()}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _still_there(found, procs):
            found.setdefault(pid, _start_time(pid))
            try:
                pgid = os.getpgid(pid)
            except ProcessLookupError:
                continue
            if pgid > 0 and pgid != os.getpgrp():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, sig)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (KILL_WAIT if sig == signal.SIGKILL else 2.0)
        while _still_there(found, procs) and time.monotonic() < deadline:
            procs.reap(-1)
            time.sleep(0.05)
    procs.reap(-1)
    return found


def recover_interrupted(cfg: Config, store: Store) -> list[dict[str, Any]]:
    """Runs left `started` by a watcher that died: tear down what they left, mark `interrupted`.

    Only processes that carry the run's environment marker are signalled (a reused pid never is),
    with their whole process groups; a named container is removed.
    """
    out = []
    for run in store.smoke_runs():
        if run.get("outcome") != "started" or _owner_alive(run.get("watcher") or {}):
            continue
        procs = RunProcesses(-1, run["run_id"], known_children=children_of_self())
        found = _stop_found(procs)
        left = [f"pid {pid}" for pid in _still_there(found, procs)]
        container = (run.get("launch") or {}).get("container")
        cleaned = [f"stopped {len(found)} process(es)"] if found else []
        if container:
            removed = remove_container(container) if shutil.which("docker") else False
            cleaned.append(f"container {container} {'removed' if removed else 'NOT removed'}")
        project = (run.get("launch") or {}).get("compose_project")
        if project:
            down = compose_down(project)[0] if shutil.which("docker") else False
            cleaned.append(
                f"compose project {project} {'taken down' if down else 'NOT taken down'}"
            )
        reason = "interrupted: watcher stopped during this run (killed?); never validates"
        if cleaned:
            reason += "; " + ", ".join(cleaned)
        if left:
            reason += f"; still running: {', '.join(left)}"
        run.update(
            outcome="interrupted",
            reason=reason,
            finished_at=iso(utcnow()),
            teardown={"leftovers": left, "container_removed": None},
        )
        run.pop("watcher", None)
        record_run(store, run)
        log.warning("smoke %s: %s", run["run_id"], reason)
        out.append(run)
    return out


def recipe_or_error(cfg: Config, recipe_id: str) -> Recipe:
    try:
        return cfg.recipe(recipe_id)
    except KeyError:
        known = ", ".join(r.id for r in cfg.recipes) or "none"
        raise ConfigError(f"no recipe {recipe_id!r} in {cfg.path} (known: {known})") from None
