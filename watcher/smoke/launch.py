"""Launching and tearing down an engine's processes, and the docker container it may start.

The engine runs from an argv list (never a shell) in its own process session, with a scrubbed
environment that carries a marker naming the run. Teardown finds every process of the run (its
session, the marker, orphans re-parented to watcher as subreaper), SIGTERMs their process groups,
waits, SIGKILLs, removes the named container, and says what was left behind.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from watcher.config.model import Recipe

log = logging.getLogger("watcher.smoke")

KILL_WAIT = 5.0  # after SIGKILL, how long to wait for the kernel to reap


# ---------------------------------------------------------------- argv


def container_name(run_id: str) -> str:
    """A docker container name (letters, digits, _ . -) that says who made it."""
    return re.sub(r"[^a-zA-Z0-9_.-]", "-", f"watcher-{run_id}")[:128]


def is_docker_run(argv: list[str]) -> bool:
    return bool(argv) and Path(argv[0]).name == "docker" and len(argv) > 1 and argv[1] == "run"


def fill_placeholders(arg: str, values: dict[str, object]) -> str:
    """`{port}`, `{model}`, `{name}` replaced as plain text, everything else left as it is: an
    argument may hold JSON (`--speculative-config '{"method": "ngram"}'`), which str.format
    would take for a field. Used wherever a recipe is run or shown."""
    for key, value in values.items():
        arg = arg.replace("{" + key + "}", str(value))
    return arg


def build_argv(recipe: Recipe, name: str) -> list[str]:
    """Substitute {port}, {model}, {name} in each argv element (never through a shell).

    `{port}` is host_port when set (the port watcher probes), else port. A `docker run` without
    `--name` gets one, so teardown can always `docker rm -f` it.
    """
    port = str(recipe.host_port or recipe.port)
    values = {"port": port, "model": recipe.model, "name": name}
    argv = [fill_placeholders(arg, values) for arg in recipe.command]
    if is_docker_run(argv) and not docker_name(argv):
        argv[2:2] = ["--name", name]
    return argv


def docker_name(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv[2:], start=2):
        if arg == "--name" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--name="):
            return arg.split("=", 1)[1]
    return None


# ---------------------------------------------------------------- environment

RUN_MARKER = "WATCHER_SMOKE_RUN"  # set in the engine's environment: finds its processes later
# What an engine gets from watcher's own environment; everything else (GITHUB_TOKEN, cloud keys)
# stays behind. A recipe adds its own `env` table and names more in `pass_env`.
SAFE_ENV = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR",
        "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "LD_LIBRARY_PATH",  # where CUDA is found
        "HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME",  # where models are cached (no credentials)
        "DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",
    }
)  # fmt: skip
SAFE_PREFIXES = ("LC_", "NVIDIA_")
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL|AUTH", re.IGNORECASE)


def _safe_name(name: str) -> bool:
    if name in SAFE_ENV:
        return True
    return name.startswith(SAFE_PREFIXES) and not _SECRET_NAME.search(name)


def engine_env(recipe: Recipe, run_id: str, environ=None) -> dict[str, str]:
    """The engine's whole environment: a safe base, the recipe's `pass_env`, its `env`, a marker."""
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items() if _safe_name(k)}
    env.update({k: environ[k] for k in recipe.pass_env if k in environ})
    env["PYTHONUNBUFFERED"] = "1"
    env.update(dict(recipe.env))
    env[RUN_MARKER] = run_id
    return env


# ---------------------------------------------------------------- processes


def _proc_stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, pgrp, session, ppid) from /proc/<pid>/stat, or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    rest = data[data.rfind(")") + 2 :].split()
    return rest[0], int(rest[2]), int(rest[3]), int(rest[1])


def _has_marker(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read().split(b"\0")
    except OSError:
        return False


def marker_of(run_id: str) -> bytes:
    return f"{RUN_MARKER}={run_id}".encode()


_PR_SET_CHILD_SUBREAPER = 36
_subreaper: bool | None = None


def become_subreaper() -> bool:
    """Linux: orphans of what watcher launches (a double fork, a `setsid` daemon) are re-parented
    to watcher instead of init, so teardown still finds them. Process-wide; asked once."""
    global _subreaper
    if _subreaper is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            _subreaper = False
    return _subreaper


def children_of_self() -> set[int]:
    me = os.getpid()
    out = set()
    if os.path.isdir("/proc/self"):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                st = _proc_stat(int(entry))
                if st and st[3] == me:
                    out.add(int(entry))
    return out


class RunProcesses:
    """Every live process of one run: its session, anything carrying the run's environment
    marker, orphans re-parented to watcher (subreaper) since launch, and their descendants."""

    def __init__(self, sid: int, run_id: str, known_children: set[int] | None = None):
        self.sid = sid
        self.marker = marker_of(run_id)
        self.known = set(known_children or ())
        self.escaped: set[int] = set()  # seen outside the run's session

    def pids(self) -> list[tuple[int, int]]:
        """Live (pid, pgid); zombies hold nothing and don't count.

        Uses /proc (Linux). Elsewhere, falls back to whether the leader's group still exists.
        """
        if not os.path.isdir("/proc/self"):
            if self.sid <= 0:
                return []
            try:
                os.killpg(self.sid, 0)
                return [(self.sid, self.sid)]
            except (ProcessLookupError, PermissionError):
                return []
        me = os.getpid()
        table: dict[int, tuple[str, int, int, int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != me:
                st = _proc_stat(int(entry))
                if st:
                    table[int(entry)] = st
        own_session = os.getsid(0)  # watcher's own helpers (a `docker rm`) are never the run's
        ours = {
            pid
            for pid, (_state, _pgrp, sess, ppid) in table.items()
            if sess != own_session
            and (
                sess == self.sid
                or (ppid == me and pid not in self.known)
                or _has_marker(pid, self.marker)
            )
        }
        grew = True
        while grew:  # descendants of anything ours
            more = {
                pid
                for pid, st in table.items()
                if st[3] in ours and pid not in ours and st[2] != own_session
            }
            ours |= more
            grew = bool(more)
        live = [(pid, table[pid][1]) for pid in sorted(ours) if table[pid][0] not in ("Z", "X")]
        self.escaped |= {pid for pid, _ in live if table[pid][2] != self.sid}
        return live

    def reap(self, leader: int) -> None:
        """Collect the exit status of adopted orphans (watcher is their parent now)."""
        me = os.getpid()
        for entry in os.listdir("/proc") if os.path.isdir("/proc/self") else ():
            if not entry.isdigit() or int(entry) in self.known or int(entry) == leader:
                continue
            st = _proc_stat(int(entry))
            if st and st[3] == me and st[0] == "Z" and st[2] != os.getsid(0):
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(int(entry), os.WNOHANG)


def session_pids(sid: int) -> list[tuple[int, int]]:
    """Live (pid, pgid) of the processes in session `sid` alone (RunProcesses finds a whole run)."""
    if not os.path.isdir("/proc/self"):
        return RunProcesses(sid, "").pids()
    out = []
    for entry in os.listdir("/proc"):
        st = _proc_stat(int(entry)) if entry.isdigit() else None
        if st and st[2] == sid and st[0] not in ("Z", "X"):
            out.append((int(entry), st[1]))
    return out


def _signal_run(procs: RunProcesses, sig: int) -> None:
    live = procs.pids()
    groups = ({pgid for _pid, pgid in live} | {procs.sid}) - {os.getpgrp()}
    for pgid in groups:
        if pgid <= 0:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
    for pid, _ in live:  # stragglers that moved to a group of their own
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _wait_gone(proc: subprocess.Popen, procs: RunProcesses, deadline: float) -> bool:
    while True:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)
        procs.reap(proc.pid)
        if proc.returncode is not None and not procs.pids():
            return True
        if time.monotonic() >= deadline or GUARD.hurry:
            return False
        time.sleep(0.05)


# ---------------------------------------------------------------- signals


def _interruption(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else SystemExit(128 + signum)


class SignalGuard:
    """SIGTERM and SIGINT to watcher while a smoke run lives, so that no engine is ever left
    running: installed before anything launches; `defer()` holds a signal back from the launch
    (Popen) until `armed()`, called first inside the `try` whose `finally` tears down, raises it
    there; during `tearing_down()` a signal never interrupts the teardown: the first is raised
    after it, and a second (or one on top of the one that started the teardown) makes it
    SIGKILL now instead of waiting out the grace (`hurry`)."""

    def __init__(self) -> None:
        self.deferring = False
        self.tearing = False
        self.hurry = False
        self.pending: int | None = None
        self.raised = False  # a signal already interrupted this run

    def handle(self, signum: int, frame: object) -> None:
        if self.tearing:
            if self.raised or self.pending is not None:
                self.hurry = True
                log.warning("signal %d during teardown: killing the run's processes now", signum)
            self.pending = self.pending or signum
            return
        if self.deferring:
            self.pending = self.pending or signum
            return
        self.raised = True
        raise _interruption(signum)

    def defer(self) -> None:
        self.deferring = True

    def armed(self) -> None:
        """Inside the teardown's `try`: a signal that came during the launch is raised now."""
        self.deferring = False
        if self.pending is not None:
            signum, self.pending = self.pending, None
            self.raised = True
            raise _interruption(signum)

    @contextlib.contextmanager
    def tearing_down(self) -> Iterator[None]:
        self.deferring, self.tearing = False, True
        if self.pending is not None:  # came before the try was entered: not lost
            self.raised = True
        try:
            yield
        finally:
            self.tearing, self.hurry = False, False
        if self.pending is not None:
            signum, self.pending = self.pending, None
            self.raised = True
            raise _interruption(signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """For one run: the handlers in place (main thread only), the state fresh."""
        self.__init__()
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        old = {s: signal.signal(s, self.handle) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)


GUARD = SignalGuard()


@dataclass
class Teardown:
    seconds: float = 0.0
    killed: bool = False  # SIGKILL was needed
    container_removed: bool | None = None
    leftovers: list[str] = field(default_factory=list)
    escaped: list[str] = field(default_factory=list)  # had left the run's session (and were killed)

    def as_dict(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 3),
            "killed": self.killed,
            "container_removed": self.container_removed,
            "leftovers": self.leftovers,
            "escaped": self.escaped,
        }


def docker(args: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def remove_container(container: str) -> bool:
    """`docker rm -f`; True when docker removed it (or it was already gone)."""
    try:
        rm = docker(["rm", "-f", container])
    except (OSError, subprocess.TimeoutExpired) as e:
        log.warning("docker rm -f %s failed: %s", container, e)
        return False
    if rm.returncode != 0 and "No such container" not in rm.stderr:
        log.warning("docker rm -f %s: %s", container, rm.stderr.strip())
    return rm.returncode == 0


def teardown(
    proc: subprocess.Popen,
    grace: float,
    container: str | None = None,
    procs: RunProcesses | None = None,
) -> Teardown:
    """SIGTERM every process of the run, wait `grace`, SIGKILL; `docker rm -f`; check."""
    started = time.monotonic()
    t = Teardown()
    procs = procs or RunProcesses(proc.pid, "")  # start_new_session: leader pid = session id
    _signal_run(procs, signal.SIGTERM)
    if not _wait_gone(proc, procs, time.monotonic() + grace):
        t.killed = True
        _signal_run(procs, signal.SIGKILL)
        _wait_gone(proc, procs, time.monotonic() + KILL_WAIT)
    if container:
        t.container_removed = remove_container(container)
    left = procs.pids()
    procs.reap(proc.pid)
    t.escaped = [f"pid {pid}" for pid in sorted(procs.escaped)]
    if left:
        t.leftovers.extend(f"pid {pid}" for pid, _ in left)
    if container:
        try:
            ps = docker(["ps", "-a", "-q", "--filter", f"name=^/?{container}$"])
            if ps.stdout.strip():
                t.leftovers.append(f"container {container}")
        except (OSError, subprocess.TimeoutExpired) as e:
            t.leftovers.append(f"container {container} (cannot check: {e})")
    t.seconds = time.monotonic() - started
    return t
