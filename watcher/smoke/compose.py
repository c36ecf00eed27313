"""Running a recipe from the guide's own docker compose file, and always taking it down.

`docker compose -f FILE -p <run name> up -d SERVICE` starts it detached; `docker compose logs -f`
streams the service's output into the run's log (and is the process whose death says the
container stopped); a container that its `restart:` policy brings back keeps `logs -f` going, so
`docker inspect` is asked about once a second for its RestartCount (`ServiceWatch`): a crash loop
ends the wait as `died` with the exit code, not as a hang after the whole `startup_timeout`;
the published port comes from the file or `docker compose port`; probes
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
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from watcher.config.composefile import ComposeService, read_service
from watcher.config.model import Config, Recipe
from watcher.config.signatures import all_signatures
from watcher.core.errors import ConfigError
from watcher.core.redact import redact
from watcher.smoke.classify import Classifier
from watcher.smoke.launch import (
    GUARD,
    RunProcesses,
    become_subreaper,
    children_of_self,
    engine_env,
)
from watcher.smoke.launch import teardown as stop_processes
from watcher.smoke.log import LogPump
from watcher.smoke.probes import refuse_taken_port, wait_ready
from watcher.smoke.sequence import FATAL_GRACE_S, Launched, probe_ready
from watcher.store.smokerun import SmokeResult

log = logging.getLogger("watcher.smoke")

UP_TIMEOUT_MIN = 120.0  # `up -d` pulls the image first: it may take a while
DOWN_TIMEOUT = 120.0


def project_name(run_id: str) -> str:
    """A compose project name (lower-case letters, digits, '-', '_'; starts alphanumeric)."""
    return re.sub(r"[^a-z0-9_-]", "-", f"watcher-{run_id}".lower())[:100]


class _Stop(Exception):
    """The run ends before probing; the result already says why (the project is still taken down)."""


@dataclass
class Compose:
    """The `docker compose` commands of one run, as argv lists (never a shell)."""

    file: Path
    project: str
    docker: str = "docker"
    override: Path | None = None  # a second file laid over it (the bump gate's image)

    def _base(self, with_file: bool = True) -> list[str]:
        head = [self.docker, "compose"]
        if with_file:
            head += ["-f", str(self.file)]
            if self.override is not None:
                head += ["-f", str(self.override)]
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

    def ps(self, service: str | None = None) -> list[str]:
        return [*self._base(with_file=False), "ps", "-a", "-q", *([service] if service else [])]

    def inspect(self, container: str) -> list[str]:
        fields = "{{.RestartCount}} {{.State.Status}} {{.State.ExitCode}}"
        return [self.docker, "inspect", "--format", fields, container]

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


UNKNOWN_EXIT = -1  # a crash whose code docker no longer shows (running again): stopped all the same


class ServiceWatch:
    """The service's container as a process for `wait_ready`: stopped when `logs -f` ended, or
    when docker says it crashed and its restart policy started it again (RestartCount > 0), or
    it is restarting or exited. Docker is asked at most every `every` seconds."""

    def __init__(self, c: Compose, service: str, logs: subprocess.Popen, env, cwd, every=1.0):
        self.c, self.service, self.logs, self.env, self.cwd = c, service, logs, env, cwd
        self.every, self.next = every, 0.0
        self.container: str | None = None
        self.crash: tuple[int, int | None] | None = None  # (restarts, last exit code) once seen

    @property
    def returncode(self) -> int | None:
        if self.crash is None:
            return self.logs.returncode
        return UNKNOWN_EXIT if self.crash[1] is None else self.crash[1]

    def poll(self) -> int | None:
        if self.crash is None and self.logs.poll() is None and time.monotonic() >= self.next:
            self.next = time.monotonic() + self.every
            self.crash = self._ask()
        return self.returncode if self.crash else self.logs.poll()

    def _ask(self) -> tuple[int, int | None] | None:
        try:
            if self.container is None:
                r = _run(self.c.ps(self.service), 30.0, env=self.env, cwd=self.cwd)
                self.container = (r.stdout.split() or [None])[0]
                if self.container is None:
                    return None
            r = _run(self.c.inspect(self.container), 30.0)
            restarts, status, code = r.stdout.split()
            restarts, code = int(restarts), int(code)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return None  # docker cannot say: `logs -f` still tells when it stops
        if restarts > 0 or status == "restarting":  # exited/dead: `logs -f` ends and says so
            return restarts, (code if code or status != "running" else None)
        return None


class ComposeLauncher:
    """A recipe's service from the guide's own compose file (the `Launcher` of a compose recipe)."""

    def __init__(self, cfg: Config, recipe: Recipe, run_id: str, log_path: Path) -> None:
        self.cfg, self.recipe, self.run_id, self.log_path = cfg, recipe, run_id, log_path
        self.file = cfg.resolve(recipe.compose or "")
        self.c = Compose(self.file, project_name(run_id))
        self.svc: ComposeService | None = None
        self.port = recipe.host_port
        self.watch: ServiceWatch | None = None

    def prepare(self, result: SmokeResult) -> bool:
        """Read the file as `docker compose` will interpolate it (the run's own environment and
        the `.env` beside it) and refuse, before `up` pulls or loads anything, a run that cannot
        work: a required variable unset, an image tag left to a variable nobody set, or no port
        to probe. Such a refusal is a setup error
        (outcome `error`, no signature): never an engine failure, never a blocker's evidence."""
        recipe = self.recipe
        try:
            self.svc = read_service(
                self.file,
                recipe.service or "",
                shown_as=recipe.compose,
                environ=engine_env(recipe, self.run_id),
            )
        except ConfigError as e:
            result.outcome, result.reason = "error", f"not launched: {e}"
            return False
        if self.svc.required:
            name, message = self.svc.required[0]
            result.outcome = "error"
            result.reason = (
                f"not launched (setup): {recipe.compose} requires {name} ({message!r}) and the"
                f" run's environment does not set it; set {name} in [recipe.env], or in"
                f" watcher's environment and name it in the recipe's pass_env"
            )
            return False
        if self.svc.image_vars and not recipe.image_override:  # the guide's launcher fills it
            names = ", ".join(self.svc.image_vars)
            result.outcome = "error"
            result.reason = (
                f"not launched (setup): the image {self.svc.image!r} of {recipe.compose} leaves"
                f" {names} unset (the guide's launcher fills it); name the build in [recipe.env]"
            )
            return False
        if self.svc.host_port is not None:
            self.port = self.svc.host_port  # what docker publishes, under the run's environment
        if self.port is None and self.svc.container_port is None:
            result.outcome = "error"
            result.reason = (
                f"not launched (setup): {recipe.compose} service {recipe.service!r} publishes no"
                " port and the recipe gives no host_port; give the recipe `host_port` (and"
                " `port`, the container's)"
            )
            return False
        if self.port is not None and refuse_taken_port(
            result,
            self.port,
            "the compose service publishes",
            "stop it, or change the recipe's host_port",
        ):
            return False
        result.launch = {
            "container": None,
            "pid": None,
            "compose_project": self.c.project,
            "compose_file": recipe.compose,
            "service": recipe.service,
        }
        result.image = {"ref": self.svc.image or None, "digest": None}
        if recipe.image_override:  # the bump gate: the service's image swapped, the file untouched
            self.c.override = self.log_path.with_suffix(".override.yml")
            self.c.override.write_text(
                f"services:\n  {json.dumps(self.svc.service)}:\n"
                f"    image: {json.dumps(recipe.image_override)}\n",
                encoding="utf-8",
            )
            result.image["ref"] = recipe.image_override
        return True

    def run(self, result: SmokeResult, started: Callable[[], None]) -> Launched:
        cfg, recipe, run_id, log_path, c = self.cfg, self.recipe, self.run_id, self.log_path, self.c
        svc = self.svc
        assert svc is not None and result.launch is not None and result.image is not None
        env = engine_env(recipe, run_id)
        cwd = str(self.file.parent)
        port = self.port
        become_subreaper()
        known = children_of_self()
        classifier = Classifier(all_signatures(cfg.signatures))
        seen = Launched()
        logs_proc: subprocess.Popen | None = None
        pump: LogPump | None = None
        td = seen.td
        with open(log_path, "ab") as logf:
            logf.write(
                redact(
                    f"# watcher smoke run {run_id} at {result.started_at}\n$ {shlex.join(c.up(svc.service))}\n"
                ).encode()
            )
        try:
            up_timeout = max(UP_TIMEOUT_MIN, recipe.startup_timeout)
            try:
                up = _run(c.up(svc.service), up_timeout, env=env, cwd=cwd)
            except subprocess.TimeoutExpired:
                result.outcome = "timeout"
                result.reason = f"`docker compose up -d` did not return within {up_timeout:.0f} s"
                raise _Stop from None
            except OSError as e:
                result.outcome = "error"
                result.reason = f"cannot start docker: {e.strerror or e}"
                raise _Stop from None
            with open(log_path, "ab") as logf:
                logf.write(redact(up.stdout + up.stderr).encode(errors="replace"))
            if up.returncode != 0:
                result.outcome = "failed"
                result.reason = (
                    f"`docker compose up -d {svc.service}` exited with code {up.returncode}: "
                    + ((up.stderr or up.stdout).strip().splitlines() or ["(no output)"])[-1][:300]
                )
                finding = classifier.scan(log_path)
                if finding is not None:
                    result.signature, result.excerpt = finding.id, finding.excerpt
                raise _Stop
            result.image["digest"] = _digest(c, recipe.image_override or svc.image)
            if port is None and svc.container_port is not None:
                port = _published_port(c, svc.service, recipe.port, env, cwd)
            if port is None:
                result.outcome = "error"
                result.reason = (
                    "the compose service publishes no port watcher can find (neither in the file"
                    " nor from `docker compose port`); give the recipe `host_port`"
                )
                raise _Stop
            result.launch["port"] = port
            logs_proc = subprocess.Popen(
                c.logs(svc.service),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
                cwd=cwd,
            )
            result.launch["pid"] = logs_proc.pid
            self.watch = ServiceWatch(c, svc.service, logs_proc, env, cwd)
            started()
            pump = LogPump(logs_proc.stdout, log_path, classifier)
            pump.start()
            base = f"http://127.0.0.1:{port}"
            wait = wait_ready(
                self.watch,
                base + recipe.ready_path,
                recipe.startup_timeout,
                watch=pump,
                fatal_grace=min(FATAL_GRACE_S, recipe.startup_timeout / 4),
            )
            seen.wait = wait
            if wait.state == "ready":
                probed = probe_ready(base, recipe, wait, result)
                seen.failures, seen.notes = probed.failures, probed.notes
                seen.overran = probed.overran
                if self.watch.poll() is not None and not seen.failures:
                    seen.failures.append("the service's container stopped during the probes")
        except _Stop:
            seen.wait = None
        except Exception as e:  # the runner's own bug: still take the project down, report `error`
            log.exception("smoke %s: compose runner failed", run_id)
            result.outcome, result.reason = "error", f"runner error: {type(e).__name__}: {e}"
            seen.wait = None
        finally:
            with GUARD.tearing_down():  # a signal now hastens the teardown, never abandons it
                self._down(result, logs_proc, known, td, pump)
        return seen

    def _down(self, result, logs_proc, known, td, pump) -> None:
        """Take the project down, stop `logs -f`, check what is left."""
        c, recipe, run_id = self.c, self.recipe, self.run_id
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
            result.set_exit_code(logs_proc.returncode)
        left = compose_leftover(c.project, c.docker)
        if left:
            td.leftovers.append(left)
        result.teardown = td.as_dict()
        if pump is not None:
            pump.join(timeout=5)

    def finish(self, result: SmokeResult, launched: Launched) -> None:
        wait = launched.wait
        crash = self.watch.crash if self.watch is not None else None
        if crash is not None:
            restarts, code = crash
            result.set_exit_code(code)
            said = f"exited with code {code}" if code is not None else "crashed"
            words = f"its container {said}, and its restart policy " + (
                f"started it again ({restarts}×) before it became ready"
                if restarts
                else "was starting it again before it became ready"
            )
        else:
            words = "its container stopped before becoming ready"
        if wait is not None and wait.state == "died":  # the container stopped or crash-looped
            result.reason = result.reason.replace(
                f"exited with code {wait.exit_code} before becoming ready", words, 1
            )
