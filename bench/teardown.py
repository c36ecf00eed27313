"""Teardown time of a process tree whose children ignore SIGTERM.

    python bench/teardown.py [--children 8] [--grace 1.0] [--rounds 3]

Starts the fake engine in `ignore-term` mode (it and its N children ignore SIGTERM) in its own
session, waits until it is ready, then times `watcher.smoke.launch.teardown`: SIGTERM every group in the
session, wait `grace`, SIGKILL, check nothing is left. Also times a polite tree (children that
exit on SIGTERM) for comparison. Teardown time ≈ grace + kill/reap time for the stubborn tree.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from watcher.smoke.launch import session_pids, teardown  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(mode: str, children: int) -> subprocess.Popen:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "watcher.fakes.engine", "--port", str(port), "--mode", mode,
         "--children", str(children), "--ready-delay", "0"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.05)
    while len(session_pids(proc.pid)) < children + 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    return proc


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--children", type=int, default=8)
    p.add_argument("--grace", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    print(f"{'tree':<34} {'processes':>9} {'grace s':>8} {'teardown s':>11} {'SIGKILL':>8} left")
    for mode, label in (("ignore-term", "children ignore SIGTERM"), ("ready", "polite tree")):
        for _ in range(a.rounds):
            proc = start(mode, a.children)
            n = len(session_pids(proc.pid))
            t = teardown(proc, a.grace)
            print(
                f"{label:<34} {n:>9} {a.grace:>8.1f} {t.seconds:>11.3f} "
                f"{'yes' if t.killed else 'no':>8} {len(t.leftovers)}"
            )


if __name__ == "__main__":
    main()
