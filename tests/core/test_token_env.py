"""The engine cannot read watcher's GITHUB_TOKEN (issue 21 item 4).

The engine's environment is scrubbed, but an engine running as the same user can read
/proc/<watcher's pid>/environ, the environment watcher started with. `watcher.core.token.hold()` (run
by the entry point) moves the token into the process and overwrites it there. A fake engine that
looks (`--peek-parent-env`) must find nothing, and watcher must still send the token to GitHub.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kits.smokekit import engine_command, write_config

from watcher.fakes.github import FakeGitHub
from watcher.fakes.scenarios import load, real_threads

REPO = Path(__file__).resolve().parents[2]
TOKEN = "ghp_" + "S3cr3tT0k3n" * 3


def test_an_engine_finds_no_token_in_watchers_proc_environ(tmp_path):
    peek = tmp_path / "peek.json"
    cfg_path = write_config(tmp_path, engine_command("--peek-parent-env", str(peek)))
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH="/usr/bin:/bin", GITHUB_TOKEN=TOKEN)
    watcher = subprocess.Popen(
        [sys.executable, "-m", "watcher", "smoke", "fake-tp1", "--config", str(cfg_path)]
        + ["--json", "--any-hardware"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    out, err = watcher.communicate(timeout=120)
    assert watcher.returncode == 0, err
    assert json.loads(out)["outcome"] == "passed"
    seen = json.loads(peek.read_text())
    assert seen["ppid"] == watcher.pid  # it did look at watcher itself
    assert not seen["token"], "the engine read GITHUB_TOKEN from /proc/<watcher>/environ"


def as_a_user() -> list[str]:
    """A prefix that runs watcher like an ordinary user: as root, with no capabilities (root's
    CAP_SYS_PTRACE reads any process's memory, dumpable or not)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: cannot drop the capabilities a user lacks")
    return ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]


def test_an_engine_cannot_read_the_token_from_watchers_memory(tmp_path):
    """Issue 32 M1: watcher makes itself non-dumpable (PR_SET_DUMPABLE 0), so an engine of the
    same user cannot open /proc/<watcher>/mem, where the held token lives."""
    peek = tmp_path / "peek.json"
    cfg_path = write_config(tmp_path, engine_command("--peek-parent-env", str(peek)))
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH="/usr/bin:/bin", GITHUB_TOKEN=TOKEN)
    watcher = subprocess.run(
        [*as_a_user(), sys.executable, "-m", "watcher", "smoke", "fake-tp1"]
        + ["--config", str(cfg_path), "--json", "--any-hardware"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert watcher.returncode == 0, watcher.stderr
    seen = json.loads(peek.read_text())
    assert seen["mem_token"] is None, "the engine read GITHUB_TOKEN from /proc/<watcher>/mem"
    assert seen["mem"].startswith("unreadable"), seen["mem"]


def test_watcher_still_sends_the_token_it_holds(tmp_path):
    with FakeGitHub(tokens={TOKEN: "watcher-bot"}) as gh:
        real_threads(gh)
        load(gh, "sglang_code")  # every repository the default list reads: no 404 on a first read
        shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
        env = dict(os.environ, PYTHONPATH=str(REPO), GITHUB_API_URL=gh.url, GITHUB_TOKEN=TOKEN)
        r = subprocess.run(
            [sys.executable, "-m", "watcher", "check-now", "--no-smoke"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        auth = {
            r.headers.get("authorization") or r.headers.get("Authorization") for r in gh.requests
        }
    assert auth == {f"Bearer {TOKEN}"}, auth
