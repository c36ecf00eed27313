"""Ctrl-C while bisect checks its builds on the registry stops it at once, even when the kernel
hands the signal to a worker thread mid-read (issue 32's finding in the poller, here too)."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from kits.bisectkit import IMAGE

from watcher.bisect.grid import Point, check_points
from watcher.config.model import Source

HANG_S = 8.0  # each HEAD answers only after this long


def _interrupt_a_worker(registry, done: threading.Event) -> None:
    """Once a HEAD is in flight, SIGINT one of the check's worker threads (not the main one)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not done.is_set():
        workers = [t for t in threading.enumerate() if t.name.startswith("bisect-check")]
        if workers and any(r["method"] == "HEAD" for r in list(registry.requests)):
            signal.pthread_kill(workers[0].ident, signal.SIGINT)
            return
        time.sleep(0.02)


def test_ctrl_c_on_a_worker_thread_stops_the_build_check_at_once(registry):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach Python only in the main thread")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # xdist may ignore it
    registry.hang.add("/manifests/")
    registry.hang_seconds = HANG_S
    points = [Point(i, f"{IMAGE}:v0.1.{i}", f"{i:040x}", None, tag=f"v0.1.{i}") for i in range(4)]
    source = Source(repo="sgl-project/sglang", image=IMAGE, tag="{tag}")
    done = threading.Event()
    helper = threading.Thread(target=_interrupt_a_worker, args=(registry, done), daemon=True)
    helper.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            check_points(source, points)
    finally:
        done.set()
        signal.signal(signal.SIGINT, previous)
    took = time.monotonic() - started
    # before: the main thread slept on the pool until the hung reads ended (≥ HANG_S)
    assert took < HANG_S / 2, f"took {took:.1f} s to stop"
    assert all(p.digest is None for p in points)  # nothing half-judged
