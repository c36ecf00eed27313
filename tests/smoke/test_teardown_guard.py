"""No engine outlives its run: a signal during the launch waits for the teardown to be in place
(issue 32 H1), and a second signal during the teardown hastens it, never abandons it (M3)."""

import dataclasses
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from kits.smokekit import REPO, alive, engine_command, write_config

from watcher.config.load import load_config
from watcher.smoke import run as smoke
from watcher.smoke import sequence
from watcher.smoke.hardware import Gpu, GpuReading
from watcher.smoke.launch import GUARD
from watcher.store.db import Store

ON_TARGET = GpuReading((Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),), "nvml")


def pids_from(path):
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _launch_then(monkeypatch, after):
    """Wrap Popen: once the engine (its own session) exists, call `after(proc)` before Popen
    returns, the instant a signal used to find no teardown in place."""
    real = subprocess.Popen
    engines = []

    def popen(*a, **kw):
        proc = real(*a, **kw)
        if kw.get("start_new_session") and not engines:
            engines.append(proc)
            after(proc)
        return proc

    monkeypatch.setattr(smoke.subprocess, "Popen", popen)
    return engines


def _until(cond, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_as_the_engine_starts_still_tears_it_down(tmp_path, monkeypatch, sig):
    pid_file = tmp_path / "pids"
    cfg = load_config(
        write_config(
            tmp_path,
            engine_command("--mode", "hang", "--children", "1", "--pid-file", str(pid_file)),
            startup_timeout=60,
            stop_timeout=1,
        )
    )

    def signal_now(proc):
        _until(lambda: len(pids_from(pid_file)) == 2)  # the engine and its child run
        signal.raise_signal(sig)  # the handler runs before Popen returns

    engines = _launch_then(monkeypatch, signal_now)
    with pytest.raises((SystemExit, KeyboardInterrupt)):
        smoke.run_result(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert engines and [p for p in pids_from(pid_file) if alive(p)] == []


def test_a_locked_store_does_not_hold_a_signal_back_after_launch(tmp_path, monkeypatch):
    """The second note that the run started waits at most a second for another writer, and a
    signal meanwhile still tears the engine down (it used to wait 30 s outside the `try`)."""
    pid_file = tmp_path / "pids"
    cfg = load_config(
        write_config(
            tmp_path,
            engine_command("--mode", "hang", "--pid-file", str(pid_file)),
            startup_timeout=60,
            stop_timeout=1,
        )
    )
    Store(cfg.db_path).close()
    holder = sqlite3.connect(str(cfg.db_path), isolation_level=None)

    def lock_and_signal(proc):
        holder.execute("BEGIN IMMEDIATE")  # another process holds the database
        threading.Timer(0.3, signal.raise_signal, (signal.SIGTERM,)).start()

    engines = _launch_then(monkeypatch, lock_and_signal)
    started = time.monotonic()
    try:
        with pytest.raises(SystemExit):
            smoke.run_result(cfg, cfg.recipes[0], reading=ON_TARGET)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert time.monotonic() - started < 15
    assert engines and not alive(engines[0].pid)


@pytest.mark.parametrize("first", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_hastens_the_teardown(tmp_path, monkeypatch, first):
    """An Actions cancel: SIGINT, then SIGTERM during the teardown. An engine and children that
    ignore SIGTERM are SIGKILLed at once, not after `stop_timeout`, and none survives."""
    pid_file = tmp_path / "pids"
    cfg = load_config(
        write_config(
            tmp_path,
            engine_command("--mode", "ignore-term", "--children", "2", "--pid-file", str(pid_file)),
            startup_timeout=30,
            stop_timeout=60,
        )
    )
    real = smoke.teardown

    def teardown(*a, **kw):
        def twice():
            signal.raise_signal(first)
            _until(lambda: GUARD.pending is not None)  # the first one was seen
            signal.raise_signal(signal.SIGTERM)

        threading.Thread(target=twice, daemon=True).start()
        return real(*a, **kw)

    monkeypatch.setattr(smoke, "teardown", teardown)
    started = time.monotonic()
    with pytest.raises((SystemExit, KeyboardInterrupt)):
        smoke.run_result(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert time.monotonic() - started < 40  # not the 60 s grace
    pids = pids_from(pid_file)
    assert len(pids) == 3 and [p for p in pids if alive(p)] == []


# ---------------------------------------------------------------- the probes' deadline (H2)


@pytest.mark.parametrize(("endless", "checks"), [("all", ""), ("tools", "stream_tool_call = true")])
def test_a_stream_that_never_ends_is_a_timeout_by_probe_timeout(tmp_path, endless, checks):
    """Ready, then a streamed answer with no [DONE]: the run ends by `probe_timeout` as
    `timeout`/`hang`, torn down, instead of probing forever."""
    pid_file = tmp_path / "pids"
    command = engine_command("--endless-stream", endless, "--tools", "call")
    cfg_path = write_config(
        tmp_path, [*command, "--pid-file", str(pid_file)], startup_timeout=30, checks=checks
    )
    cfg = load_config(cfg_path)
    recipe = dataclasses.replace(cfg.recipes[0], probe_timeout=3.0)
    started = time.monotonic()
    res = smoke.run_result(cfg, recipe, reading=ON_TARGET)
    assert time.monotonic() - started < 30
    assert res.outcome == "timeout" and res.signature == "hang", res.reason
    assert "did not finish within probe_timeout (3 s)" in res.reason
    assert [p for p in pids_from(pid_file) if alive(p)] == []


def test_an_engine_that_keeps_being_slow_ends_by_the_runs_one_deadline(tmp_path):
    """/health answers at once, every generation takes 20 s: the readiness check's generation
    gets what is left of `startup_timeout` (it once got 60 s of its own, then the probes their
    `probe_timeout`), so the run ends as `timeout` within `run_bound`, torn down."""
    pid_file = tmp_path / "pids"
    command = engine_command("--ready-delay", "0.1", "--slow-generation", "20")
    cfg_path = write_config(tmp_path, [*command, "--pid-file", str(pid_file)], startup_timeout=2)
    cfg = load_config(cfg_path)
    recipe = dataclasses.replace(cfg.recipes[0], probe_timeout=3.0)
    bound = sequence.run_bound(recipe)
    assert bound < 20  # the engine's one slow answer would outlast it
    started = time.monotonic()
    res = smoke.run_result(cfg, recipe, reading=ON_TARGET)
    took = time.monotonic() - started
    assert took < bound, f"the run took {took:.1f} s, past its bound of {bound:.0f} s"
    assert res.outcome == "timeout" and res.stage_reached == "launch", res.reason
    assert "not ready after 2 s" in res.reason and "a first generation failed" in res.reason
    assert [p for p in pids_from(pid_file) if alive(p)] == []


# ---------------------------------------------------------------- recovery (L1)

# The engine (it carries the run's marker) starts a helper that drops the marker and ignores
# SIGTERM, then hangs; the engine itself dies on SIGTERM, and its helper is re-parented away.
MARKERLESS_HELPER = """
import os, signal, subprocess, sys, time
env = {k: v for k, v in os.environ.items() if k != "WATCHER_SMOKE_RUN"}
helper = subprocess.Popen(
    [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
     "open(__import__('sys').argv[1], 'a').write('ready\\\\n')\\nwhile True: time.sleep(1)",
     sys.argv[1] + ".ok"], env=env)
open(sys.argv[1], "a").write(f"{os.getpid()}\\n{helper.pid}\\n")
while not os.path.exists(sys.argv[1] + ".ok"):
    time.sleep(0.02)
while True:
    time.sleep(1)
"""

RECOVER = """
import sys
from watcher.config.load import load_config
from watcher.smoke.run import recover_interrupted
from watcher.store.db import Store
cfg = load_config(sys.argv[1])
store = Store(cfg.db_path)
print(recover_interrupted(cfg, store)[0]["reason"])
"""


def test_recovery_kills_what_it_found_even_once_it_left_the_run(tmp_path):
    """Issue 32 L1: the recovery pass signals every process it found at first (their start
    times checked, so a reused pid is spared), not only what it finds again after SIGTERM."""
    pid_file = tmp_path / "pids"
    cfg_path = write_config(
        tmp_path,
        [sys.executable, "-c", MARKERLESS_HELPER, str(pid_file)],
        startup_timeout=120,
        stop_timeout=1,
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH="/usr/bin:/bin")
    watcher = subprocess.Popen(
        [sys.executable, "-m", "watcher", "smoke", "fake-tp1", "--config", str(cfg_path)]
        + ["--any-hardware", "--run-id", "r-killed"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    pids = []
    try:
        _until(lambda: len(pids_from(pid_file)) == 2 and (tmp_path / "pids.ok").exists())
        pids = pids_from(pid_file)
        watcher.kill()  # no teardown: the next start must clean up
        watcher.wait()
        assert all(alive(p) for p in pids)
        out = subprocess.run(
            [sys.executable, "-c", RECOVER, str(cfg_path)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert "stopped 2 process(es)" in out.stdout and "still running" not in out.stdout
        assert [p for p in pids if alive(p)] == []
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
