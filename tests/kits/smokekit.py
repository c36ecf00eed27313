"""Helpers for the smoke tests: a config around the fake engine, fake nvidia-smi, fake docker."""

from __future__ import annotations

import fcntl
import json
import os
import random
import socket
import stat
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

RTX3090 = "NVIDIA GeForce RTX 3090, 24576, 8.6"
A10 = "NVIDIA A10, 23028, 8.6"


_PORT_LOCKS: list = []  # held for the life of the test process
_PORT_LOCK_DIR = Path(tempfile.gettempdir()) / "watcher-smoke-ports"


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A loopback port for an engine to bind later, that nothing else will take meanwhile.

    A port from bind(0) is released before the engine binds it, and bind(0) and every outgoing
    connection on the machine draw from the same ephemeral range, so another process could take
    it in between. So the port comes from below the ephemeral range (only an explicit bind takes
    one there) and is reserved among test processes by a lock file held until this one exits.
    """
    low, _high = _ephemeral_range()
    first = 20000 if low > 21000 else 1024
    span = max(1, low - first)
    _PORT_LOCK_DIR.mkdir(exist_ok=True)
    start = random.randrange(span)
    for i in range(span):
        port = first + (start + i) % span
        lock = open(_PORT_LOCK_DIR / f"{port}.lock", "w")  # noqa: SIM115 (held open)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port))
        except OSError:
            lock.close()
            continue
        _PORT_LOCKS.append(lock)
        return port
    raise RuntimeError("no free loopback port below the ephemeral range")


def toml_list(values: list[str]) -> str:
    return json.dumps(values)


def engine_command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "watcher.fakes.engine", "--port", "{port}", *extra]


def write_config(
    tmp_path: Path,
    command: list[str],
    *,
    recipe_id: str = "fake-tp1",
    engine: str = "sglang",
    startup_timeout: float = 10.0,
    stop_timeout: float = 2.0,
    spec_decode: bool = False,
    checks: str = "",
    extra: str = "",
    port: int | None = None,
    blockers: tuple[str, ...] = ("marlin-pad", "deltanet-rollback"),
    gpu_count: int = 1,
) -> Path:
    """A watch.toml with two blockers and one recipe that runs `command`."""
    port = port or free_port()
    text = f"""
[watcher]
data_dir = "data"
site_dir = "site"

[[blocker]]
id = "marlin-pad"
title = "Marlin pad"
signatures = ["marlin-tile-n"]
fails_at = "startup"

[[blocker]]
id = "deltanet-rollback"
title = "DeltaNet rollback"
signatures = ["spec-decode-hybrid"]
fails_at = "probe"

[[recipe]]
id = "{recipe_id}"
engine = "{engine}"
model = "/models/fake"
port = {port}
startup_timeout = {startup_timeout}
stop_timeout = {stop_timeout}
spec_decode = {"true" if spec_decode else "false"}
blockers = {toml_list(list(blockers))}
command = {toml_list(command)}

[recipe.hardware]
gpu_name = "RTX 3090"
gpu_count = {gpu_count}
min_memory_mib = 24000

[recipe.checks]
prompt = "What is the capital of France? Answer with one word."
expect = "Paris"
{checks}

[recipe.env]
PYTHONPATH = "{REPO}"
{extra}
"""
    path = tmp_path / "watch.toml"
    path.write_text(text, encoding="utf-8")
    return path


def clearing_comparison(baseline: str = "vllm-mtp-tp2", target: bool = True) -> dict:
    """A stored comparison in which a recipe clears its speed floor (90 vs 85 tokens/s)."""
    return {
        "baseline": baseline,
        "baseline_title": "vLLM MTP",
        "verdict": "clears",
        "baseline_passed": True,
        "matches_target": target,
        "decode_tokens_per_s": 90.0,
        "baseline_decode_tokens_per_s": 85.0,
        "speed_ratio": 1.059,
        "speed_ratio_range": [1.02, 1.1],
        "hardware": "NVIDIA GeForce RTX 3090",
        "date": "2026-11-29",
    }


def write_exe(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_nvidia_smi(bin_dir: Path, lines: list[str] | None, exit_code: int = 0) -> Path:
    """An nvidia-smi that prints `lines` (None: the 'no driver' failure, exit 9)."""
    if lines is None:
        body = (
            "import sys\nprint('NVIDIA-SMI has failed because it couldn\\'t communicate with "
            "the NVIDIA driver.')\nsys.exit(9)\n"
        )
    else:
        body = f"import sys\nprint({chr(10).join(lines)!r})\nsys.exit({exit_code})\n"
    return write_exe(bin_dir / "nvidia-smi", f"#!{sys.executable}\n{body}")


FAKE_DOCKER = r'''#!{python}
"""Fake docker: `run` starts the command after the image DETACHED (like a container that outlives
its client), records it by name; `rm -f` kills and forgets it; `ps -a -q --filter name=^/?N$`;
`manifest inspect [--verbose] IMAGE`: known unless listed in $FAKE_DOCKER_GONE (a file, one image a
line). The container's command sees its image as $FAKE_DOCKER_IMAGE."""
import json, os, re, signal, subprocess, sys, time
state = os.environ["FAKE_DOCKER_STATE"]
os.makedirs(state, exist_ok=True)
with open(os.path.join(state, "calls.jsonl"), "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\n")
args = sys.argv[1:]
if args[:1] == ["run"]:
    i, name = 1, None
    with_value = {{"--name", "-p", "-v", "--gpus", "--shm-size", "-e", "--env", "--ipc"}}
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "--name":
            name = args[i + 1]
        i += 2 if args[i] in with_value else 1
    image, cmd = args[i], args[i + 1:]
    if cmd and cmd[0] == "python":
        cmd[0] = sys.executable
    child = subprocess.Popen(cmd, start_new_session=True, env=dict(os.environ, FAKE_DOCKER_IMAGE=image))
    if name:
        with open(os.path.join(state, name), "w") as f:
            f.write(str(child.pid))
    sys.exit(child.wait())
if args[:2] == ["rm", "-f"]:
    path = os.path.join(state, args[2])
    if not os.path.exists(path):
        print(f"Error response from daemon: No such container: {{args[2]}}", file=sys.stderr)
        sys.exit(1)
    pid = int(open(path).read())
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.remove(path)
    print(args[2])
    sys.exit(0)
if args[:2] == ["manifest", "inspect"]:
    image = args[-1]
    gone_file = os.environ.get("FAKE_DOCKER_GONE")
    gone = open(gone_file).read().split() if gone_file and os.path.exists(gone_file) else []
    if image in gone:
        print(f"no such manifest: docker.io/{{image}}", file=sys.stderr)
        sys.exit(1)
    import hashlib
    digest = "sha256:" + hashlib.sha256(image.encode()).hexdigest()
    print(json.dumps({{"Ref": "docker.io/" + image, "Descriptor": {{"digest": digest}}}}))
    sys.exit(0)
if args[:1] == ["ps"]:
    pattern = next(a.split("=", 1)[1] for a in args if a.startswith("name="))
    for n in os.listdir(state):
        if n != "calls.jsonl" and re.search(pattern, "/" + n):
            print("c0ffee" + n[-6:])
    sys.exit(0)
print("fake docker: unsupported " + " ".join(args), file=sys.stderr)
sys.exit(125)
'''


def fake_docker(bin_dir: Path) -> Path:
    return write_exe(bin_dir / "docker", FAKE_DOCKER.format(python=sys.executable))


def with_path(monkeypatch, bin_dir: Path) -> None:
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


def alive(pid: int) -> bool:
    """Running (not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """Running (non-zombie) processes whose process group is `pgid` (zombies hold nothing; an
    init that does not reap can leave them in the table)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                out.append(int(entry))
    return out
