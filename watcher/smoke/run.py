"""The smoke runner: launch a recipe, wait for it, probe it, tear it down, say what happened.

One run = hardware gate -> launch (argv list, own process session, output streamed to
data/smoke/<run_id>.log) -> readiness polling (checking on every pass whether it died) -> probes
(/v1/models, a temperature-0 known answer, a streamed completion for TTFT and decode tokens/s,
spec-decode accept length) -> teardown (SIGTERM every process group of the session, wait, SIGKILL;
`docker rm -f` the named container) -> leftover check -> classify the log -> result document.
The teardown always runs, also on Ctrl-C or SIGTERM of watcher itself.

This module runs those stages in order and writes the result document; the stages live in
`launch` (argv, environment, processes, teardown), `probes` (port, readiness, HTTP probes) and
`smokelog` (the capped log). A run is stored as `started` before launch, so the next start can
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
import threading
import time
from pathlib import Path
from typing import Any

from watcher.config.model import Config, Recipe, recipe_digest
from watcher.config.signatures import HANG, all_signatures
from watcher.core.clock import iso, utcnow
from watcher.core.errors import ConfigError, WatcherError
from watcher.core.progress import Progress
from watcher.core.redact import redact
from watcher.judge.compare import CLEARS, INSUFFICIENT, compare, speed_phrase
from watcher.smoke.checks import run_checks
from watcher.smoke.classify import Classifier, describe, tail
from watcher.smoke.compose import compose_down, run_compose
from watcher.smoke.hardware import GpuReading, check_hardware, read_gpus
from watcher.smoke.launch import (
    KILL_WAIT,
    RunProcesses,
    Teardown,
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
from watcher.smoke.probes import (
    PORT_IN_USE,
    Wait,
    generation_answered,
    probe,
    refuse_taken_port,
    served_by,
    wait_ready,
)
from watcher.store.db import Store

log = logging.getLogger("watcher.smoke")

OUTCOMES = ("passed", "failed", "timeout", "error", "skipped", "started", "interrupted")

FATAL_GRACE_S = 30.0  # how long a run may still become ready after logging a known failure


def new_run_id(recipe_id: str) -> str:
    """Sortable and unique: <recipe>-<UTC time>-<4 hex>."""
    return f"{recipe_id}-{utcnow().strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(2)}"


@contextlib.contextmanager
def _term_raises():
    """While a run is live, SIGTERM to watcher raises SystemExit so teardown still happens."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def base_doc(recipe: Recipe, run_id: str, started_at: str | None = None) -> dict[str, Any]:
    """The result document's shape, before anything happened (outcome `error`)."""
    return {
        "run_id": run_id,
        "recipe": recipe.id,
        "backend": "local",
        "outcome": "error",
        "signature": None,
        "blockers_reproduced": [],
        "reason": "",
        "hardware": {"gpus": [], "matches_target": False},
        "engine_version": None,
        "metrics": {
            "startup_s": None,
            "ttft_s": None,
            "decode_tokens_per_s": None,
            "accept_length": None,
        },
        "stage_reached": "launch",
        "excerpt": None,
        "log_path": None,
        "started_at": started_at or iso(utcnow()),
        "finished_at": None,
        "host": host_label(),
    }


def host_label() -> str:
    """The label the matrix names this host by: WATCHER_HOST_LABEL, else the Actions runner's
    name (RUNNER_NAME), else the host name."""
    env = os.environ
    return env.get("WATCHER_HOST_LABEL") or env.get("RUNNER_NAME") or socket.gethostname()


def error_doc(recipe: Recipe, run_id: str, reason: str, backend: str = "local") -> dict[str, Any]:
    """A run that could not happen (the backend failed): recorded, never validating."""
    doc = base_doc(recipe, run_id)
    doc.update(backend=backend, reason=redact(reason), finished_at=iso(utcnow()))
    return doc


def run_recipe(
    cfg: Config,
    recipe: Recipe,
    *,
    any_hardware: bool = False,
    run_id: str | None = None,
    reading: GpuReading | None = None,
) -> dict[str, Any]:
    """One smoke run of `recipe` on this host -> the result document (never raises for a
    failure of the recipe; a failure of the runner itself is outcome `error`).

    A recipe with a `baseline` runs beside it in the same session: `compare_rounds` launches of
    each, interleaved (B R, R B, ...). The document then carries `comparison` (both figures and
    the verdict) and `baseline_runs` (the baseline's own documents, stored as runs of their own).
    """
    reading = reading if reading is not None else read_gpus()
    if not recipe.baseline:
        return _run_once(cfg, recipe, any_hardware=any_hardware, run_id=run_id, reading=reading)
    base = cfg.recipe(recipe.baseline)
    docs: dict[str, list[dict[str, Any]]] = {recipe.id: [], base.id: []}
    for i in range(recipe.compare_rounds):
        for r in (base, recipe) if i % 2 == 0 else (recipe, base):
            rid = run_id if (r is recipe and run_id and i == recipe.compare_rounds - 1) else None
            doc = _run_once(cfg, r, any_hardware=any_hardware, run_id=rid, reading=reading)
            docs[r.id].append(doc)
            if doc["outcome"] == "skipped":
                return doc if r is recipe else _skipped_like(cfg, recipe, doc, run_id)
    return _with_comparison(recipe, base, docs[recipe.id], docs[base.id])


def _skipped_like(cfg: Config, recipe: Recipe, base_doc_: dict, run_id: str | None) -> dict:
    doc = base_doc(recipe, run_id or new_run_id(recipe.id))
    doc.update(
        outcome="skipped",
        reason=base_doc_["reason"],
        hardware=base_doc_["hardware"],
        finished_at=iso(utcnow()),
    )
    return doc


def _with_comparison(
    recipe: Recipe, base: Recipe, mine: list[dict[str, Any]], theirs: list[dict[str, Any]]
) -> dict[str, Any]:
    """The recipe's last document, its figures pooled over the rounds, with the comparison."""
    doc = mine[-1]
    failed = [d for d in mine if d["outcome"] != "passed"]
    if failed and doc["outcome"] == "passed":
        doc["outcome"], doc["reason"] = failed[-1]["outcome"], failed[-1]["reason"]
        doc["signature"] = failed[-1]["signature"]

    def pooled(docs, key):
        return [x for d in docs if d["outcome"] == "passed" for x in d["metrics"].get(key) or []]

    c = compare(
        pooled(mine, "decode_samples"),
        pooled(theirs, "decode_samples"),
        recipe.min_speed_vs_baseline,
        pooled(mine, "ttft_samples"),
        pooled(theirs, "ttft_samples"),
        recipe.max_ttft_vs_baseline,
    )
    base_failed = [d for d in theirs if d["outcome"] != "passed"]
    c["baseline_passed"] = not base_failed
    if base_failed:
        c["verdict"] = INSUFFICIENT
        c["why"] = f"the baseline {base.id} did not pass: {base_failed[-1]['reason']}"
    gpus = [g.get("name", "?") for g in doc["hardware"].get("gpus", [])]
    c.update(
        baseline=base.id,
        baseline_title=base.title or base.id,
        baseline_run_ids=[d["run_id"] for d in theirs],
        rounds=recipe.compare_rounds,
        hardware=", ".join(gpus) or "no GPU",
        matches_target=bool(doc["hardware"].get("matches_target")),
        date=(doc.get("started_at") or "")[:10],
    )
    doc["comparison"] = c
    doc["baseline_runs"] = theirs
    if doc["outcome"] == "passed":
        title = f"the {base.title} path" if base.title else base.id
        doc["reason"] += f"; {speed_phrase(c, title)}: {c['verdict']}"
        if c["verdict"] != CLEARS and c.get("why"):
            doc["reason"] += f" ({c['why']})"
    return doc


def _run_once(
    cfg: Config,
    recipe: Recipe,
    *,
    any_hardware: bool,
    run_id: str | None,
    reading: GpuReading,
) -> dict[str, Any]:
    run_id = run_id or new_run_id(recipe.id)
    started_at = iso(utcnow())
    gate = check_hardware(recipe.hardware, reading)
    doc = base_doc(recipe, run_id, started_at)
    doc["recipe_digest"] = recipe_digest(recipe, cfg.base_dir)
    doc["hardware"] = {
        "gpus": [g.as_dict() for g in reading.gpus],
        "matches_target": gate.matches_target,
    }
    log.info("smoke %s: %s (read with %s)", run_id, gate.reason, reading.source)
    if not gate.matches_target and not any_hardware:
        doc["outcome"] = "skipped"
        doc["reason"] = redact(
            f"{gate.reason} (--any-hardware runs it anyway, marked off-target: never validates)"
        )
        doc["finished_at"] = iso(utcnow())
        return doc
    log_dir = cfg.data_dir / "smoke"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{run_id}.log"
    doc["log_path"] = str(log_path)
    with _term_raises():
        if recipe.compose:
            run_compose(
                cfg, recipe, run_id, log_path, doc, mark_started=mark_started, verdict=_verdict
            )
        else:
            _run(cfg, recipe, run_id, log_path, doc)
    if not gate.matches_target:
        doc["reason"] += " [off-target hardware: shown, never validates]"
    doc["reason"] = redact(doc["reason"])
    doc["excerpt"] = redact(doc["excerpt"]) or None
    doc["finished_at"] = iso(utcnow())
    return doc


def _run(cfg: Config, recipe: Recipe, run_id: str, log_path: Path, doc: dict[str, Any]) -> None:
    name = container_name(run_id)
    argv = build_argv(recipe, name)
    container = docker_name(argv) if is_docker_run(argv) else None
    port = recipe.host_port or recipe.port
    base = f"http://127.0.0.1:{port}"
    failures: list[str] = []
    notes: list[str] = []
    wait: Wait | None = None
    if refuse_taken_port(doc, port, "the recipe serves on", "stop it, or change the recipe's port"):
        return
    doc["launch"] = {"container": container, "pid": None}
    mark_started(cfg, doc, recover=True)
    subreaper = become_subreaper()
    known = children_of_self()
    with open(log_path, "ab") as logf:
        logf.write(
            redact(
                f"# watcher smoke run {run_id} at {doc['started_at']}\n$ {shlex.join(argv)}\n"
            ).encode()
        )
        logf.flush()
        # built before launch: compiling the families (hyperscan, ~0.3 s) must not widen the
        # window in which the engine runs and a SIGTERM finds no teardown in place
        classifier = Classifier(all_signatures(cfg.signatures))
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
            doc["outcome"] = "error"
            doc["reason"] = f"cannot start {argv[0]!r}: {e.strerror or e}"
            return
    doc["launch"]["pid"] = proc.pid
    mark_started(cfg, doc)
    procs = RunProcesses(proc.pid, run_id, known)
    pump = LogPump(proc.stdout, log_path, classifier)
    pump.start()
    log.info(
        "smoke %s: launched pid %s, log %s%s",
        run_id,
        proc.pid,
        log_path,
        "" if subreaper else " (not a subreaper: a double-forked child could escape teardown)",
    )
    td: Teardown | None = None
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
            generates=lambda: generation_answered(base),
        )
        shown.done()
        if wait.state == "ready":
            doc["stage_reached"] = "ready"
            doc["metrics"]["startup_s"] = round(wait.startup_s, 2)
            log.info("smoke %s: ready after %.1f s; probing", run_id, wait.startup_s)
            p = probe(base, recipe)
            doc["checks"] = run_checks(base, recipe, p)
            doc["engine_version"] = p.engine_version
            doc["metrics"].update(
                ttft_s=p.ttft_s,
                decode_tokens_per_s=p.decode_tokens_per_s,
                accept_length=p.accept_length,
                decode_spread=p.decode,
                ttft_spread=p.ttft,
                decode_tokens=p.decode_tokens,
                decode_samples=p.decode_samples,
                timing_source=p.timing_source,
                ttft_samples=p.ttft_samples,
            )
            failures, notes = p.failures, p.notes
            if proc.poll() is not None and not failures:
                failures.append(f"the engine exited (code {proc.returncode}) during the probes")
    except Exception as e:  # the runner's own bug: still tear down, report `error`
        log.exception("smoke %s: runner failed", run_id)
        doc["outcome"], doc["reason"] = "error", f"runner error: {type(e).__name__}: {e}"
        wait = None
    finally:
        td = teardown(proc, recipe.stop_timeout, container, procs)
        doc["teardown"] = td.as_dict()
        doc["exit_code"] = proc.returncode
        pump.join(timeout=5)
    _verdict(cfg, recipe, doc, wait, failures, notes, log_path, td)


def _verdict(
    cfg: Config,
    recipe: Recipe,
    doc: dict[str, Any],
    wait: Wait | None,
    failures: list[str],
    notes: list[str],
    log_path: Path,
    td: Teardown,
) -> None:
    finding = None
    passed = wait is not None and wait.state == "ready" and not failures
    if wait is not None and not passed and wait.state != "foreign":
        finding = Classifier(all_signatures(cfg.signatures)).scan(log_path)
    if passed:
        doc["outcome"], doc["stage_reached"] = "passed", "passed"
        m = doc["metrics"]
        parts = [f"ready in {m['startup_s']:.0f} s"]
        if m["decode_tokens_per_s"] is not None:
            parts.append(f"decode {m['decode_tokens_per_s']:.1f} tok/s")
        if m["accept_length"] is not None:
            parts.append(f"accept length {m['accept_length']:.2f}")
        doc["reason"] = "passed: " + ", ".join(parts) + "".join(f"; {n}" for n in notes)
    elif wait is None:
        pass  # runner error, reason already set
    elif wait.state == "fatal":
        doc["outcome"] = "failed"
        doc["reason"] = (
            f"logged a known failure and was still not ready {wait.startup_s:.0f} s after launch;"
            " stopped early instead of waiting out the startup timeout"
        )
    elif wait.state == "foreign":
        doc["outcome"], doc["signature"] = "error", PORT_IN_USE
        doc["reason"] = (
            f"a server answered on port {recipe.host_port or recipe.port} that is not the engine"
            " watcher launched (another process holds the port); it was not probed"
        )
    elif wait.state == "died":
        doc["outcome"] = "failed"
        doc["reason"] = f"exited with code {wait.exit_code} before becoming ready"
        if wait.last_error:
            doc["reason"] += f" (its ready path answered, but {wait.last_error})"
    elif wait.state == "timeout":
        doc["outcome"] = "timeout"
        doc["reason"] = (
            f"not ready after {recipe.startup_timeout:.0f} s and still running "
            "(hang: neither ready nor dead by the deadline)"
        )
        if wait.last_error:
            doc["reason"] += f"; its ready path answered, but {wait.last_error}"
        doc["signature"] = HANG
    else:
        doc["outcome"] = "failed"
        doc["reason"] = "; ".join(failures)
    if finding is not None:
        doc["signature"] = finding.id
        doc["excerpt"] = finding.excerpt
        doc["reason"] += f". {describe(finding)}"
    elif wait is not None and not passed and wait.state != "foreign":
        doc["excerpt"] = tail(log_path)
        if doc["signature"] is None:
            doc["reason"] += ". No known failure signature in the log; see the excerpt"
    sig = doc["signature"]
    if sig:
        doc["blockers_reproduced"] = [
            b for b in recipe.blockers if sig in cfg.blocker(b).signatures
        ]
    if td.escaped:
        doc["reason"] += (
            f". {len(td.escaped)} process(es) had left the run's session ({', '.join(td.escaped)});"
            " teardown found them all the same"
        )
    if td.leftovers:
        doc["reason"] += f". Teardown left {', '.join(td.leftovers)} behind"
    if td.killed:
        doc["reason"] += f". Needed SIGKILL after {recipe.stop_timeout:.0f} s"


# ---------------------------------------------------------------- storing


def run_message(doc: dict[str, Any]) -> str:
    """The one-line event message for a run, as the page's change list shows it."""
    off = "" if (doc.get("hardware") or {}).get("matches_target") else " (off-target)"
    sig = f" ({doc['signature']})" if doc.get("signature") else ""
    return f"smoke run {doc['run_id']} of {doc['recipe']}: {doc['outcome']}{sig}{off}"


def record_run(
    store: Store, doc: dict[str, Any], cycle_id: int | None = None, at: str | None = None
) -> int:
    """Store the result and one `smoke` event (subject: the recipe) for the page's change list;
    the baseline runs of a comparison first, each a run of its own recipe."""
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


def mark_started(cfg: Config, doc: dict[str, Any], recover: bool = False) -> None:
    """Store the run as `started` before (and right after) launch: if watcher dies mid-run, the
    next start finds it, tears down what it left and keeps it charged to the daily budget.
    With `recover`, first clean up after runs a dead watcher left."""
    row = json.loads(json.dumps(doc))
    row.update(outcome="started", reason="running", watcher=_watcher_identity())
    row["hardware"]["matches_target"] = False  # a run that did not finish validates nothing
    try:
        store = Store(cfg.db_path)
        try:
            if recover:
                recover_interrupted(cfg, store)
            store.add_smoke_run(row)
        finally:
            store.close()
    except (WatcherError, sqlite3.Error) as e:
        log.warning("smoke %s: could not record the start in %s: %s", doc["run_id"], cfg.db_path, e)


def _owner_alive(who: dict[str, Any]) -> bool:
    """Is the watcher process that started a run still running it? (Elsewhere: assume so.)"""
    if who.get("host") != socket.gethostname():
        return True
    pid = who.get("pid")
    return bool(pid) and _start_time(int(pid)) == who.get("start")


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
        found = procs.pids()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid, pgid in procs.pids():
                if pgid != os.getpgrp():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pgid, sig)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + (KILL_WAIT if sig == signal.SIGKILL else 2.0)
            while procs.pids() and time.monotonic() < deadline:
                procs.reap(-1)
                time.sleep(0.05)
        procs.reap(-1)
        left = [f"pid {pid}" for pid, _ in procs.pids()]
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
