"""Long waits say where they are (a smoke run's readiness, a backtest over many dates), and the
recorded history replays offline through `watcher backtest --replay`."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from watcher.cli import cli
from watcher.core.progress import Progress, clock

REPO = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_off_a_terminal_a_line_every_30_seconds():
    now, out = Clock(), io.StringIO()
    p = Progress("smoke r", deadline_s=900, stream=out, tty=False, now=now)
    said = []
    for _ in range(200):  # 100 s of updates, one every half second
        now.t += 0.5
        said.append(p.update("waiting for the engine", "Loading safetensors shard 3/9"))
    assert sum(said) == 3  # at 30, 60 and 90 s
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        "smoke r: waiting for the engine, 0:30 of 15:00 — Loading safetensors shard 3/9"
    )
    assert lines[2].startswith("smoke r: waiting for the engine, 1:30 of 15:00")


def test_on_a_terminal_one_line_rewritten_in_place():
    now, out = Clock(), io.StringIO()
    p = Progress("backtest", stream=out, tty=True, now=now)
    now.t += 1
    assert p.update("3 of 40 replays", None)
    now.t += 0.1
    assert not p.update("4 of 40 replays", None)  # not more than twice a second
    now.t += 1
    assert p.update("5 of 40", None)
    p.done()
    text = out.getvalue()
    assert text.startswith("\rbacktest: 3 of 40 replays, 0:01") and text.endswith("\n")
    assert "\rbacktest: 5 of 40, 0:02" in text and text.count("\n") == 1
    assert clock(3725) == "1:02:05"


def test_backtest_replays_the_default_list_over_the_recorded_history(tmp_path):
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    args = ["backtest", "--replay", str(REPO / "tests" / "history")]
    args += ["--config", str(tmp_path / "watch.toml")]
    r = CliRunner().invoke(cli, [*args, "--json"], env={"GITHUB_API_URL": "http://192.0.2.1"})
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["replay"]["recorded_until"].startswith("2026-04-30")
    assert doc["as_of"][-1].startswith("2026-04-30") and len(doc["as_of"]) >= 3
    states = {i["id"]: [d["state"] for d in i["dates"]] for i in doc["items"]}
    assert states["sglang-gdn-spec-state"][-1] == "present"
    assert states["sglang-autoround-mapping"][-1] == "absent"
    assert "matched" in states["sglang-gdn"]
    assert any("vllm-40361" in s for s in doc["skipped"])
    assert not (tmp_path / "data").exists()  # the real store is never touched
    r = CliRunner().invoke(cli, ["backtest", "--config", str(tmp_path / "watch.toml")])
    assert r.exit_code == 2 and "--replay" in r.output


def test_the_readiness_wait_reports_while_it_waits():
    import subprocess
    import sys

    from watcher.smoke.probes import wait_ready

    calls = []
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        # port 9 (discard) on loopback: nothing answers, so the wait runs to its deadline
        wait = wait_ready(proc, "http://127.0.0.1:9/health", 1.0, progress=lambda: calls.append(1))
    finally:
        proc.kill()
        proc.wait()
    assert wait.state == "timeout" and len(calls) >= 3
