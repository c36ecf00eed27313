"""The smoke runner: launch a recipe, wait for it, probe it, tear it down, say what happened.

One run = hardware gate -> launch (argv list, own process session, output streamed to
data/smoke/<run_id>.log) -> readiness polling (checking on every pass whether it died) -> probes
(/v1/models, a temperature-0 known answer, a streamed completion for TTFT and decode tokens/s,
spec-decode accept length) -> teardown (SIGTERM every process group of the session, wait, SIGKILL;
`docker rm -f` the named container) -> leftover check -> classify the log -> result document.
The teardown always runs, also on Ctrl-C or SIGTERM of watcher itself.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from watcher.classify import Classifier, describe, tail
from watcher.config import Config, Recipe
from watcher.errors import ConfigError, WatcherError
from watcher.hardware import GpuReading, check_hardware, read_gpus
from watcher.redact import redact
from watcher.signatures import HANG, all_signatures
from watcher.store import Store, iso, utcnow

log = logging.getLogger("watcher.smoke")

OUTCOMES = ("passed", "failed", "timeout", "error", "skipped", "started", "interrupted")
DECODE_PROMPT = "Count upward from one in English words, one word per number, without stopping."
DECODE_TOKENS = 128
SPEC_BROKEN_BELOW = 1.1  # an accept length this close to 1.0 means no draft token is ever kept
# Thinking models (Qwen3) would spend a short max_tokens inside <think>; templates that do not
# know the flag ignore it.
NO_THINKING = {"enable_thinking": False}
KILL_WAIT = 5.0  # after SIGKILL, how long to wait for the kernel to reap
PORT_IN_USE = "port-in-use"  # the built-in signature for a port another process holds


# ---------------------------------------------------------------- argv


FATAL_GRACE_S = 30.0  # how long a run may still become ready after logging a known failure


def new_run_id(recipe_id: str) -> str:
    """Sortable and unique: <recipe>-<UTC time>-<4 hex>."""
    return f"{recipe_id}-{utcnow().strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(2)}"


def container_name(run_id: str) -> str:
    """A docker container name (letters, digits, _ . -) that says who made it."""
    return re.sub(r"[^a-zA-Z0-9_.-]", "-", f"watcher-{run_id}")[:128]


def is_docker_run(argv: list[str]) -> bool:
    return bool(argv) and Path(argv[0]).name == "docker" and len(argv) > 1 and argv[1] == "run"


def build_argv(recipe: Recipe, name: str) -> list[str]:
    """Substitute {port}, {model}, {name} in each argv element (never through a shell).

    `{port}` is host_port when set (the port watcher probes), else port. A `docker run` without
    `--name` gets one, so teardown can always `docker rm -f` it.
    """
    port = str(recipe.host_port or recipe.port)
    values = {"{port}": port, "{model}": recipe.model, "{name}": name}
    argv = []
    for arg in recipe.command:
        for key, value in values.items():
            arg = arg.replace(key, value)
        argv.append(arg)
    if is_docker_run(argv) and not _docker_name(argv):
        argv[2:2] = ["--name", name]
    return argv


def _docker_name(argv: list[str]) -> str | None:
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


def _children_of_self() -> set[int]:
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
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


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


# ---------------------------------------------------------------- the port


def port_taken(port: int) -> str | None:
    """Why `port` cannot be the engine's (something answers or listens there), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        if s.connect_ex(("127.0.0.1", port)) == 0:
            return f"something already answers on 127.0.0.1:{port}"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError as e:
            return f"port {port} cannot be bound: {e.strerror or e}"
    return None


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on `port` (any address), from /proc/net/tcp{,6}."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                out.add(cols[9])
    return out


def _socket_inodes(pids) -> set[str]:
    out = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    out.add(link[8:-1])
    return out


def served_by(port: int, procs: RunProcesses) -> bool | None:
    """Is the server listening on `port` one of this run's processes? None when /proc can't say."""
    listening = _listening_inodes(port)
    if not listening:
        return None
    return bool(listening & _socket_inodes(pid for pid, _ in procs.pids()))


# ---------------------------------------------------------------- probes


@dataclass
class Probe:
    """What the probes measured and which checks failed."""

    model: str | None = None
    answer: str | None = None
    ttft_s: float | None = None
    decode_tokens_per_s: float | None = None
    accept_length: float | None = None
    engine_version: str | None = None
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _models(client: httpx.Client, p: Probe, fallback: str) -> None:
    r = client.get("/v1/models")
    if r.status_code != 200:
        p.failures.append(f"GET /v1/models answered HTTP {r.status_code}")
        p.model = fallback or None
        return
    data = r.json().get("data") or []
    p.model = data[0].get("id") if data else (fallback or None)
    if not data:
        p.failures.append("GET /v1/models listed no model")


def _known_answer(client: httpx.Client, p: Probe, recipe: Recipe) -> None:
    body = {
        "model": p.model or recipe.model or "default",
        "messages": [{"role": "user", "content": recipe.checks.prompt}],
        "temperature": 0,
        "max_tokens": recipe.checks.max_tokens,
        "chat_template_kwargs": NO_THINKING,
    }
    r = client.post("/v1/chat/completions", json=body)
    if r.status_code != 200:
        p.failures.append(f"chat completion answered HTTP {r.status_code}: {r.text[:200]}")
        return
    msg = (r.json().get("choices") or [{}])[0].get("message") or {}
    p.answer = (msg.get("content") or "").strip()
    if recipe.checks.expect.lower() not in p.answer.lower():
        p.failures.append(
            f"known-answer check: expected {recipe.checks.expect!r}, got {p.answer[:120]!r}"
        )


def _stream(client: httpx.Client, p: Probe, recipe: Recipe) -> None:
    body = {
        "model": p.model or recipe.model or "default",
        "messages": [{"role": "user", "content": DECODE_PROMPT}],
        "temperature": 0,
        "max_tokens": DECODE_TOKENS,
        "ignore_eos": True,
        "chat_template_kwargs": NO_THINKING,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    sent = time.monotonic()
    first = last = None
    chunks, usage_tokens = 0, None
    with client.stream("POST", "/v1/chat/completions", json=body) as r:
        if r.status_code != 200:
            r.read()
            p.failures.append(f"streamed completion answered HTTP {r.status_code}")
            return
        for line in r.iter_lines():
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                break
            try:
                obj = json.loads(payload)
            except json.JSONDecodeError:
                continue
            if (obj.get("usage") or {}).get("completion_tokens"):
                usage_tokens = int(obj["usage"]["completion_tokens"])
            for choice in obj.get("choices") or []:
                text = (choice.get("delta") or {}).get("content") or choice.get("text")
                if text:
                    now = time.monotonic()
                    first = first or now
                    last = now
                    chunks += 1
    if first is None:
        p.failures.append("streamed completion produced no tokens")
        return
    p.ttft_s = round(first - sent, 4)
    tokens = usage_tokens or chunks
    if tokens > 1 and last > first:
        p.decode_tokens_per_s = round((tokens - 1) / (last - first), 2)


_PROM = re.compile(r"^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+([-+0-9.eEinfNa]+)")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> metric name -> value summed over label sets."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _PROM.match(line)
        if m:
            with contextlib.suppress(ValueError):
                out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
    return out


def accept_from_metrics(metrics: dict[str, float]) -> float | None:
    """SGLang's gauge, or vLLM's counters: 1 + accepted tokens per draft."""
    for name in ("sglang:spec_accept_length", "sglang:avg_spec_accept_length"):
        if name in metrics:
            return metrics[name]
    drafts = metrics.get("vllm:spec_decode_num_drafts_total")
    accepted = metrics.get("vllm:spec_decode_num_accepted_tokens_total")
    if drafts and accepted is not None:
        return 1.0 + accepted / drafts
    return None


def _find_key(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            found = _find_key(v, key)
            if found is not None:
                return found
    elif isinstance(obj, list):
        for v in obj:
            found = _find_key(v, key)
            if found is not None:
                return found
    return None


def _engine_info(client: httpx.Client, p: Probe, recipe: Recipe) -> None:
    paths = ["/server_info", "/get_server_info"] if recipe.engine == "sglang" else []
    paths.append("/version")
    for path in paths:
        try:
            r = client.get(path)
        except httpx.HTTPError:
            continue
        if r.status_code != 200:
            continue
        with contextlib.suppress(ValueError):
            info = r.json()
            p.engine_version = p.engine_version or (
                str(info["version"]) if isinstance(info, dict) and info.get("version") else None
            )
            value = _find_key(info, "avg_spec_accept_length")
            if isinstance(value, int | float) and p.accept_length is None:
                p.accept_length = float(value)
        if p.engine_version and (p.accept_length is not None or not recipe.spec_decode):
            return
    if recipe.spec_decode and p.accept_length is None:
        with contextlib.suppress(httpx.HTTPError):
            r = client.get("/metrics")
            if r.status_code == 200:
                p.accept_length = accept_from_metrics(parse_metrics(r.text))


def probe(base_url: str, recipe: Recipe, timeout: float = 120.0) -> Probe:
    """Ask the running engine the questions that make a recipe 'work'."""
    p = Probe()
    with httpx.Client(base_url=base_url, timeout=timeout, trust_env=False) as client:
        try:
            _models(client, p, recipe.model)
            _known_answer(client, p, recipe)
            _stream(client, p, recipe)
            _engine_info(client, p, recipe)
        except httpx.HTTPError as e:
            p.failures.append(f"probe failed: {type(e).__name__}: {e}")
        except ValueError as e:
            p.failures.append(f"probe got a malformed answer: {e}")
    c = recipe.checks
    if c.min_decode_tokens_per_s is not None and p.decode_tokens_per_s is not None:
        if p.decode_tokens_per_s < c.min_decode_tokens_per_s:
            p.failures.append(
                f"decode {p.decode_tokens_per_s:.1f} tok/s is below the required "
                f"{c.min_decode_tokens_per_s:.1f}"
            )
    if recipe.spec_decode:
        a = p.accept_length
        if a is None:
            p.notes.append("spec decode is on but the engine reports no accept length")
        elif a < SPEC_BROKEN_BELOW:
            p.failures.append(
                f"accept length {a:.2f} ≈ 1.0 with spec decode on: no draft token is accepted,"
                " spec decode is silently broken"
            )
        elif c.min_accept_length is not None and a < c.min_accept_length:
            p.failures.append(f"accept length {a:.2f} is below the required {c.min_accept_length}")
    return p


# ---------------------------------------------------------------- the log

LOG_HEAD_BYTES = 1 << 20  # the start of the output, as it came
LOG_TAIL_BYTES = 4 << 20  # the end of the output, as it came
LOG_KEPT_BYTES = 256 << 10  # lines around known failures from the part in between
SCAN_BYTES = 1 << 20  # scan the output in batches of this size at least


class LogPump(threading.Thread):
    """Copies the engine's output into the run's log: redacted, capped, and watched.

    Engines print tokens (an HF_TOKEN in a config dump, a URL with credentials): the log is a
    file watcher writes, so nothing shaped like a token may reach it. A chatty engine can print
    gigabytes: the file keeps the first LOG_HEAD_BYTES and the last LOG_TAIL_BYTES, and from the
    part in between the lines around each known failure, so the classifier's verdict on the file
    is the one it would have given on the whole output. `check()` says (live, for the readiness
    wait) which known failure the output has shown so far: engines often log a fatal error in a
    worker and then hang instead of exiting.
    """

    MAX_LINE = 1 << 20

    def __init__(self, stream, log_path: Path, classifier: Classifier):
        super().__init__(daemon=True, name="smoke-log")
        self.stream, self.log_path, self.classifier = stream, log_path, classifier
        self.head_left = LOG_HEAD_BYTES
        self.tail: collections.deque[bytes] = collections.deque()
        self.tail_bytes = 0
        self.cut_bytes = 0
        self.cut_scan = bytearray()  # cut output not yet scanned
        self.kept: list[bytes] = []
        self.kept_ids: set[str] = set()
        self.kept_bytes = 0
        self._lock = threading.Lock()
        self._unscanned = bytearray()
        self._carry = b""
        self.seen: str | None = None  # the first known failure in the output so far

    def check(self) -> str | None:
        with self._lock:
            if self._unscanned and self.seen is None:
                chunk = self._carry + bytes(self._unscanned)
                self._unscanned.clear()
                self._carry = chunk[-8192:]
                finding = self.classifier.scan_blocks([chunk])
                if finding is not None:
                    self.seen = finding.id
            return self.seen

    def run(self) -> None:
        with open(self.log_path, "ab") as out:
            for raw in iter(lambda: self.stream.readline(self.MAX_LINE), b""):
                data = redact(raw.decode("utf-8", "replace")).encode("utf-8")
                if self.seen is None:  # once a failure is seen, nothing more to watch for
                    with self._lock:
                        self._unscanned += data
                    if len(self._unscanned) >= SCAN_BYTES:
                        self.check()
                if self.head_left >= len(data) and not self.tail:
                    self.head_left -= len(data)
                    out.write(data)
                    out.flush()
                    continue
                self.tail.append(data)
                self.tail_bytes += len(data)
                while self.tail_bytes > LOG_TAIL_BYTES:
                    old = self.tail.popleft()
                    self.tail_bytes -= len(old)
                    self.cut_bytes += len(old)
                    self.cut_scan += old
                    if len(self.cut_scan) >= SCAN_BYTES:
                        self._keep_failures()
            self._keep_failures()
            if self.cut_bytes:
                out.write(
                    f"[watcher: {self.cut_bytes} bytes of output cut here; the lines around "
                    "known failures in them follow]\n".encode()
                )
                out.writelines(self.kept)
                out.write(b"[watcher: end of the cut]\n")
            out.writelines(self.tail)
        self.stream.close()

    def _keep_failures(self) -> None:
        """Keep, from the cut part, the lines around each family's first match."""
        data, self.cut_scan = bytes(self.cut_scan), self.cut_scan[-4096:]
        finding = self.classifier.scan_blocks([data]) if data else None
        if finding is None or finding.id in self.kept_ids:
            return
        lines = data.split(b"\n")
        i = finding.line_no - 1
        block = b"\n".join(lines[max(0, i - 3) : i + 6])[:16384] + b"\n"
        if self.kept_bytes + len(block) <= LOG_KEPT_BYTES:
            self.kept.append(block)
            self.kept_ids.add(finding.id)
            self.kept_bytes += len(block)


# ---------------------------------------------------------------- the run


@dataclass
class _Wait:
    state: str  # ready | died | timeout | fatal | foreign
    startup_s: float
    exit_code: int | None = None
    signature: str | None = None  # fatal: the family seen in the log


def wait_ready(
    proc: subprocess.Popen,
    url: str,
    timeout: float,
    watch: LogPump | None = None,
    fatal_grace: float = 30.0,
    owner: Callable[[], bool | None] | None = None,
) -> _Wait:
    """Poll `url` until it answers 200, the process dies, or the deadline passes.

    With `watch`, a known failure in the log that is not followed by readiness within
    `fatal_grace` seconds ends the wait early (state `fatal`), the engine still running. With
    `owner`, a 200 from a server that is not the run's own (False) ends it as `foreign`.
    """
    started = time.monotonic()
    deadline = started + timeout
    interval = 0.1
    fatal: tuple[str, float] | None = None
    with httpx.Client(timeout=5.0, trust_env=False) as client:
        while True:
            if proc.poll() is not None:
                return _Wait("died", time.monotonic() - started, proc.returncode)
            if watch is not None and fatal is None:
                seen = watch.check()
                if seen:
                    fatal = (seen, time.monotonic() + fatal_grace)
            if fatal is not None and time.monotonic() >= fatal[1]:
                return _Wait("fatal", time.monotonic() - started, signature=fatal[0])
            try:
                r = client.get(url, timeout=max(0.2, min(5.0, deadline - time.monotonic())))
                if r.status_code == 200:
                    if proc.poll() is not None:
                        return _Wait("died", time.monotonic() - started, proc.returncode)
                    if owner is not None and owner() is False:
                        return _Wait("foreign", time.monotonic() - started, signature=PORT_IN_USE)
                    return _Wait("ready", time.monotonic() - started)
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                return _Wait("died", time.monotonic() - started, proc.returncode)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _Wait("timeout", time.monotonic() - started)
            time.sleep(min(interval, remaining))
            interval = min(interval * 1.5, 2.0)


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
    }


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
    failure of the recipe; a failure of the runner itself is outcome `error`)."""
    run_id = run_id or new_run_id(recipe.id)
    started_at = iso(utcnow())
    reading = reading if reading is not None else read_gpus()
    gate = check_hardware(recipe.hardware, reading)
    doc = base_doc(recipe, run_id, started_at)
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
    container = _docker_name(argv) if is_docker_run(argv) else None
    port = recipe.host_port or recipe.port
    base = f"http://127.0.0.1:{port}"
    failures: list[str] = []
    notes: list[str] = []
    wait: _Wait | None = None
    taken = port_taken(port)
    if taken:
        doc["outcome"], doc["signature"] = "error", PORT_IN_USE
        doc["reason"] = (
            f"not launched: {taken}; another process holds the port the recipe serves on"
            " (stop it, or change the recipe's port)"
        )
        return
    doc["launch"] = {"container": container, "pid": None}
    mark_started(cfg, doc, recover=True)
    subreaper = become_subreaper()
    known = _children_of_self()
    with open(log_path, "ab") as logf:
        logf.write(
            redact(
                f"# watcher smoke run {run_id} at {doc['started_at']}\n$ {shlex.join(argv)}\n"
            ).encode()
        )
        logf.flush()
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
    pump = LogPump(proc.stdout, log_path, Classifier(all_signatures(cfg.signatures)))
    pump.start()
    log.info(
        "smoke %s: launched pid %s, log %s%s",
        run_id,
        proc.pid,
        log_path,
        "" if subreaper else " (not a subreaper: a double-forked child could escape teardown)",
    )
    td: Teardown | None = None
    try:
        wait = wait_ready(
            proc,
            base + recipe.ready_path,
            recipe.startup_timeout,
            watch=pump,
            fatal_grace=min(FATAL_GRACE_S, recipe.startup_timeout / 4),
            owner=None if container else (lambda: served_by(port, procs)),
        )
        if wait.state == "ready":
            doc["stage_reached"] = "ready"
            doc["metrics"]["startup_s"] = round(wait.startup_s, 2)
            log.info("smoke %s: ready after %.1f s; probing", run_id, wait.startup_s)
            p = probe(base, recipe)
            doc["engine_version"] = p.engine_version
            doc["metrics"].update(
                ttft_s=p.ttft_s,
                decode_tokens_per_s=p.decode_tokens_per_s,
                accept_length=p.accept_length,
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
    wait: _Wait | None,
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
    elif wait.state == "timeout":
        doc["outcome"] = "timeout"
        doc["reason"] = (
            f"not ready after {recipe.startup_timeout:.0f} s and still running "
            "(hang: neither ready nor dead by the deadline)"
        )
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
    """Store the result and one `smoke` event (subject: the recipe) for the page's change list."""
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
        procs = RunProcesses(-1, run["run_id"], known_children=_children_of_self())
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
