"""Running a recipe from the guide's own docker compose file, and always taking it down.

`docker compose -f FILE -p <run name> up -d SERVICE` starts it detached; `docker compose logs -f`
streams the service's output into the run's log (and is the process whose death says the
container stopped); the published port comes from the file or `docker compose port`; probes
run as for any recipe; `docker compose -p <run name> down -v --remove-orphans` ends every run,
on every exit path (a failed `up`, a runner error, Ctrl-C, SIGTERM of watcher).

The command layer is `Compose`: argv lists for the `docker` on PATH, nothing else. Tests put a
fake `docker` there that records its argv and starts the fake engine.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from watcher.config.composefile import read_service
from watcher.config.model import Config, Recipe
from watcher.config.signatures import all_signatures
from watcher.core.errors import ConfigError
from watcher.core.redact import redact
from watcher.smoke.checks import run_checks
from watcher.smoke.classify import Classifier
from watcher.smoke.launch import (
    RunProcesses,
    Teardown,
    become_subreaper,
    children_of_self,
    engine_env,
)
from watcher.smoke.launch import teardown as stop_processes
from watcher.smoke.log import LogPump
from watcher.smoke.probes import Wait, probe, refuse_taken_port, wait_ready

log = logging.getLogger("watcher.smoke")

UP_TIMEOUT_MIN = 120.0  # `up -d` pulls the image first: it may take a while
DOWN_TIMEOUT = 120.0


def project_name(run_id: str) -> str:
    """A compose project name (lower-case letters, digits, '-', '_'; starts alphanumeric)."""
    return re.sub(r"[^a-z0-9_-]", "-", f"watcher-{run_id}".lower())[:100]


class _Stop(Exception):
    """The run ends before probing; `doc` already says why (the project is still taken down)."""


@dataclass
class Compose:
    """The `docker compose` commands of one run, as argv lists (never a shell)."""

    file: Path
    project: str
    docker: str = "docker"

    def _base(self, with_file: bool = True) -> list[str]:
        head = [self.docker, "compose"]
        if with_file:
            head += ["-f", str(self.file)]
        return [*head, "-p", self.project]

    def up(self, service: str) -> list[str]:
        return [*self._base(), "up", "-d", service]

    def logs(self, service: str) -> list[str]:
        return [*self._base(), "logs", "-f", "--no-color", service]

    def port(self, service: str, container_port: int) -> list[str]:
        return [*self._base(), "port", service, str(container_port)]

    def down(self) -> list[str]:
        # no -f: a project is taken down by name, even if the file changed or vanished meanwhile
        return [*self._base(with_file=False), "down", "-v", "--remove-orphans"]

    def ps(self) -> list[str]:
        return [*self._base(with_file=False), "ps", "-a", "-q"]

    def image_digest(self, image: str) -> list[str]:
        return [self.docker, "image", "inspect", "--format", "{{json .RepoDigests}}", image]


def _run(argv: list[str], timeout: float, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def compose_down(project: str, docker: str = "docker") -> tuple[bool, str]:
    """`docker compose -p P down -v --remove-orphans` -> (ok, what docker said)."""
    c = Compose(Path("."), project, docker)
    try:
        r = _run(c.down(), DOWN_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"{shlex.join(c.down())} failed: {e}"
    return r.returncode == 0, (r.stderr or r.stdout).strip()[-500:]


def compose_leftover(project: str, docker: str = "docker") -> str | None:
    """Containers of the project that are still there after `down`, in words, or None."""
    c = Compose(Path("."), project, docker)
    try:
        r = _run(c.ps(), 60.0)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"compose project {project} (cannot check: {e})"
    ids = r.stdout.split()
    return f"compose project {project} ({len(ids)} container(s))" if ids else None


def _published_port(c: Compose, service: str, container_port: int, env, cwd) -> int | None:
    """`docker compose port SERVICE PORT` prints `0.0.0.0:49153` (or `[::]:49153`)."""
    try:
        r = _run(c.port(service, container_port), 30.0, env=env, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r":(\d+)\s*$", r.stdout.strip().splitlines()[0] if r.stdout.strip() else "")
    return int(m.group(1)) if r.returncode == 0 and m else None


def _digest(c: Compose, image: str) -> str | None:
    if not image:
        return None
    try:
        r = _run(c.image_digest(image), 30.0)
        digests = json.loads(r.stdout) if r.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    return str(digests[0]) if isinstance(digests, list) and digests else None


def run_compose(
    cfg: Config,
    recipe: Recipe,
    run_id: str,
    log_path: Path,
    doc: dict[str, Any],
    *,
    mark_started: Callable[..., None],
    verdict: Callable[..., None],
) -> None:
    """One compose run into `doc` (the smoke runner's result document). `mark_started` and
    `verdict` are the smoke runner's own: the verdict reads the same for both kinds of recipe."""
    file = cfg.resolve(recipe.compose or "")
    try:
        svc = read_service(file, recipe.service or "", shown_as=recipe.compose)
    except ConfigError as e:
        doc["outcome"], doc["reason"] = "error", f"not launched: {e}"
        return
    c = Compose(file, project_name(run_id))
    env = engine_env(recipe, run_id)
    cwd = str(file.parent)
    port = recipe.host_port
    if port is not None and refuse_taken_port(
        doc, port, "the compose service publishes", "stop it, or change the recipe's host_port"
    ):
        return
    doc["launch"] = {
        "container": None,
        "pid": None,
        "compose_project": c.project,
        "compose_file": recipe.compose,
        "service": recipe.service,
    }
    doc["image"] = {"ref": svc.image or None, "digest": None}
    mark_started(cfg, doc, recover=True)
    become_subreaper()
    known = children_of_self()
    classifier = Classifier(all_signatures(cfg.signatures))
    failures: list[str] = []
    notes: list[str] = []
    wait: Wait | None = None
    logs_proc: subprocess.Popen | None = None
    pump: LogPump | None = None
    td = Teardown()
    with open(log_path, "ab") as logf:
        logf.write(
            redact(
                f"# watcher smoke run {run_id} at {doc['started_at']}\n$ {shlex.join(c.up(svc.service))}\n"
            ).encode()
        )
    try:
        up_timeout = max(UP_TIMEOUT_MIN, recipe.startup_timeout)
        try:
            up = _run(c.up(svc.service), up_timeout, env=env, cwd=cwd)
        except subprocess.TimeoutExpired:
            doc["outcome"] = "timeout"
            doc["reason"] = f"`docker compose up -d` did not return within {up_timeout:.0f} s"
            raise _Stop from None
        except OSError as e:
            doc["outcome"] = "error"
            doc["reason"] = f"cannot start docker: {e.strerror or e}"
            raise _Stop from None
        with open(log_path, "ab") as logf:
            logf.write(redact(up.stdout + up.stderr).encode(errors="replace"))
        if up.returncode != 0:
            doc["outcome"] = "failed"
            doc["reason"] = (
                f"`docker compose up -d {svc.service}` exited with code {up.returncode}: "
                + ((up.stderr or up.stdout).strip().splitlines() or ["(no output)"])[-1][:300]
            )
            finding = classifier.scan(log_path)
            if finding is not None:
                doc["signature"], doc["excerpt"] = finding.id, finding.excerpt
            raise _Stop
        doc["image"]["digest"] = _digest(c, svc.image)
        if port is None and svc.container_port is not None:
            port = _published_port(c, svc.service, recipe.port, env, cwd)
        if port is None:
            doc["outcome"] = "error"
            doc["reason"] = (
                "the compose service publishes no port watcher can find (neither in the file"
                " nor from `docker compose port`); give the recipe `host_port`"
            )
            raise _Stop
        doc["launch"]["port"] = port
        logs_proc = subprocess.Popen(
            c.logs(svc.service),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            cwd=cwd,
        )
        doc["launch"]["pid"] = logs_proc.pid
        mark_started(cfg, doc)
        pump = LogPump(logs_proc.stdout, log_path, classifier)
        pump.start()
        base = f"http://127.0.0.1:{port}"
        wait = wait_ready(
            logs_proc,
            base + recipe.ready_path,
            recipe.startup_timeout,
            watch=pump,
            fatal_grace=min(30.0, recipe.startup_timeout / 4),
        )
        if wait.state == "ready":
            doc["stage_reached"] = "ready"
            doc["metrics"]["startup_s"] = round(wait.startup_s, 2)
            p = probe(base, recipe)
            doc["checks"] = run_checks(base, recipe, p)
            doc["engine_version"] = p.engine_version
            doc["metrics"].update(
                ttft_s=p.ttft_s,
                decode_tokens_per_s=p.decode_tokens_per_s,
                accept_length=p.accept_length,
            )
            failures, notes = p.failures, p.notes
            if logs_proc.poll() is not None and not failures:
                failures.append("the service's container stopped during the probes")
    except _Stop:
        wait = None
    except Exception as e:  # the runner's own bug: still take the project down, report `error`
        log.exception("smoke %s: compose runner failed", run_id)
        doc["outcome"], doc["reason"] = "error", f"runner error: {type(e).__name__}: {e}"
        wait = None
    finally:
        ok, said = compose_down(c.project, c.docker)
        td.container_removed = ok
        if not ok:
            td.leftovers.append(f"compose project {c.project} (down failed: {said[:200]})")
        if logs_proc is not None:
            procs = RunProcesses(logs_proc.pid, run_id, known)
            stopped = stop_processes(logs_proc, recipe.stop_timeout, None, procs)
            td.killed, td.escaped = stopped.killed, stopped.escaped
            td.leftovers.extend(stopped.leftovers)
            td.seconds = stopped.seconds
            doc["exit_code"] = logs_proc.returncode
        left = compose_leftover(c.project, c.docker)
        if left:
            td.leftovers.append(left)
        doc["teardown"] = td.as_dict()
        if pump is not None:
            pump.join(timeout=5)
    verdict(cfg, recipe, doc, wait, failures, notes, log_path, td)
    if wait is not None and wait.state == "died":  # `logs -f` ended: the container stopped
        doc["reason"] = doc["reason"].replace(
            f"exited with code {wait.exit_code} before becoming ready",
            "its container stopped before becoming ready",
            1,
        )
