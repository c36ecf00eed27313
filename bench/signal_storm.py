"""SIGTERM/SIGINT at random instants of many smoke runs: does any engine outlive its run?

    python bench/signal_storm.py [--runs 50] [--seed 1] [--src PATH]

Each run is `watcher smoke` (a subprocess) of a fake engine with a child, launched from an argv
list or through compose (tests/kits/composekit.py's fake docker), some engines ignoring SIGTERM.
At a random instant (0.5 to 5 s after watcher starts: before, during and after the launch, the
readiness wait, the probes and the teardown) it gets SIGTERM or SIGINT, and half the time a
second signal up to 0.5 s later (an Actions cancel sends SIGINT, then SIGTERM). After watcher
exits, every process in the engine's pid file must be gone within the teardown bound
(stop_timeout + KILL_WAIT); one still running is a leak (killed here, counted).
--src runs another checkout's watcher (PYTHONPATH), e.g. an export of the previous code.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from kits.composekit import compose_file, fake_compose_docker  # noqa: E402
from kits.smokekit import alive, engine_command, free_port, write_config  # noqa: E402

from watcher.smoke.launch import KILL_WAIT  # noqa: E402

STOP_TIMEOUT = 1.0
BOUND = STOP_TIMEOUT + KILL_WAIT + 1.0  # + one second for the kernel and a loaded host


def compose_config(tmp: Path, pid_file: Path, mode: str, src: Path) -> Path:
    port = free_port()
    compose_file(tmp / "compose.yml", port, "--mode", mode, "--children", "1",
                 "--pid-file", str(pid_file), "--ready-delay", "0.3")  # fmt: skip
    path = tmp / "watch.toml"
    path.write_text(
        f"""
[watcher]
data_dir = "data"
site_dir = "site"

[[recipe]]
id = "storm"
engine = "sglang"
model = "/models/fake"
compose = "compose.yml"
service = "engine"
startup_timeout = 20
stop_timeout = {STOP_TIMEOUT}

[recipe.hardware]
gpu_name = "RTX 3090"
gpu_count = 1

[recipe.checks]
prompt = "What is the capital of France? Answer with one word."
expect = "Paris"

[recipe.env]
PYTHONPATH = "{src}"
FAKE_DOCKER_STATE = "{tmp / "docker-state"}"
""",
        encoding="utf-8",
    )
    return path


def one(rng: random.Random, src: Path, kind: str) -> dict:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        pid_file = tmp / "pids"
        mode = rng.choice(["ready", "ignore-term"]) if kind == "argv" else "ready"
        if kind == "argv":
            cmd = engine_command("--mode", mode, "--children", "1", "--pid-file", str(pid_file),
                                 "--ready-delay", "0.3")  # fmt: skip
            cfg = write_config(tmp, cmd, recipe_id="storm", startup_timeout=20,
                               stop_timeout=STOP_TIMEOUT)  # fmt: skip
            cfg.write_text(cfg.read_text().replace(str(ROOT), str(src)))
        else:
            cfg = compose_config(tmp, pid_file, mode, src)
        bin_dir = tmp / "bin"
        fake_compose_docker(bin_dir)
        env = dict(os.environ, PYTHONPATH=str(src), FAKE_DOCKER_STATE=str(tmp / "docker-state"))
        env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
        at = rng.uniform(0.5, 5.0)
        second = rng.uniform(0.0, 0.5) if rng.random() < 0.5 else None
        sig = rng.choice([signal.SIGTERM, signal.SIGINT])
        started = time.monotonic()
        w = subprocess.Popen(
            [sys.executable, "-m", "watcher", "smoke", "storm", "--config", str(cfg),
             "--any-hardware", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp,
        )  # fmt: skip
        time.sleep(at)
        w.send_signal(sig)
        signalled = time.monotonic()
        if second is not None:
            time.sleep(second)
            w.send_signal(signal.SIGTERM)
        try:
            w.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            w.kill()
            w.communicate()
        exited = time.monotonic()
        pids = [int(x) for x in pid_file.read_text().split()] if pid_file.exists() else []
        while [p for p in pids if alive(p)] and time.monotonic() < exited + BOUND:
            time.sleep(0.02)
        gone = time.monotonic()
        left = [p for p in pids if alive(p)]
        for p in left:  # ours: the engine this run started
            os.kill(p, signal.SIGKILL)
        return {
            "kind": kind,
            "mode": mode,
            "signal_at_s": round(at, 2),
            "signals": [sig.name] + (["SIGTERM"] if second is not None else []),
            "engines": len(pids),
            "signal_to_exit_s": round(exited - signalled, 2),
            "outlived_exit_s": round(gone - exited, 2) if pids and not left else None,
            "leaked": len(left),
            "wall_s": round(exited - started, 2),
        }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--src", type=Path, default=ROOT)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    rows = [one(rng, a.src.resolve(), "argv" if i % 2 == 0 else "compose") for i in range(a.runs)]
    with_engine = [r for r in rows if r["engines"]]
    leaks = [r for r in rows if r["leaked"]]
    outlived = [r["outlived_exit_s"] for r in rows if r["outlived_exit_s"] is not None]
    summary = {
        "runs": len(rows),
        "with_an_engine_started": len(with_engine),
        "runs_leaking": len(leaks),
        "processes_leaked": sum(r["leaked"] for r in rows),
        "teardown_bound_s": BOUND,
        "max_signal_to_exit_s": max(r["signal_to_exit_s"] for r in rows),
        "max_engine_outlived_exit_s": max(outlived, default=None),
        "leaking": leaks,
    }
    print(json.dumps({"summary": summary, "runs": rows} if a.json else summary, indent=1))
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main())
