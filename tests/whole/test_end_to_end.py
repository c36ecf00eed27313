"""`watcher check-now` as a subprocess against the fake GitHub seeded like the real threads."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from watcher.fakes.github import FakeGitHub
from watcher.fakes.scenarios import load, real_threads

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def world(tmp_path):
    with FakeGitHub() as gh:
        real_threads(gh)
        load(gh, "sglang_code")  # the files the code items read, as they stood in April 2026
        shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
        yield gh, tmp_path


def unreachable_url() -> str:
    """A loopback port nobody listens on: connections are refused at once, like a dead GitHub."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def watcher(args, cwd: Path, gh: FakeGitHub, **env):
    full_env = dict(
        os.environ, PYTHONPATH=str(REPO), GITHUB_API_URL=gh.url, GITHUB_TOKEN="test-token", **env
    )
    return subprocess.run(
        [sys.executable, "-m", "watcher", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def tip_of(gh: FakeGitHub, repo: str = "sgl-project/sglang") -> str:
    return httpx.get(f"{gh.url}/repos/{repo}/branches/main").json()["commit"]["sha"][:7]


def test_check_now_renders_the_truth(world):
    gh, folder = world
    r = watcher(["check-now", "--no-smoke"], folder, gh)
    assert r.returncode == 0, r.stderr
    page = (folder / "docs" / "engines" / "SGLANG.md").read_text()
    status = json.loads((folder / "site" / "status.json").read_text())

    items = {i["id"]: i for i in status["items"]}
    pr = items["vllm-40361"]
    assert pr["kind"] == "pull" and pr["state"] == "closed"
    assert pr["superseded_by"] == 45295 and pr["in_release"] == "v0.24.0"
    assert items["vllm-39931"]["state"] == "merged"
    assert "turboquant" in items["vllm-39931"]["title"].lower()
    assert items["vllm-40124"]["state"] == "open"
    assert items["fla-rollback"]["state"] == "matched"
    assert all(not i["stale"] for i in status["items"])
    assert set(status) >= {"generated_at", "pages", "blockers", "items", "runs"}
    # SGLang's own code decides; vLLM's merged fix is a hint and clears nothing.
    assert items["sglang-autoround-mapping"]["state"] == "absent"
    assert items["sglang-gdn-spec-state"]["state"] == "present"
    # the AOT Marlin file is gone at main on purpose (retired_paths): no warning, forever
    assert items["sglang-marlin"]["warnings"] == []
    blockers = {b["id"]: b for b in status["blockers"]}
    assert blockers["marlin-pad"]["status"] == "blocked"
    assert blockers["deltanet-rollback"]["status"] == "fix-merged"
    assert status["pages"][0]["id"] == "sglang" and status["pages"][0]["status"] == "blocked"

    assert page.startswith("# SGLang — ")
    # the reference is inert (inline code), the evidence beyond one line is the site's
    assert (
        "Marlin pad-sub-tile-n fix](https://github.com/vllm-project/vllm/pull/40361): closed;"
        in page
    )
    assert "closed; fixed by `#45295`, first in v0.24.0\n" in page
    assert "TurboQuant" in page  # the real title beside the mislabel
    assert "## TL;DR" in page and "## Watch list" in page and "## When to revisit" in page
    assert "## What changed since the previous version" in page
    assert "First check: 13 tracked items read; the page starts as blocked" in page
    assert "first read" not in page

    # second cycle, nothing changed upstream: only conditional requests, all 304, no rate-limit spend
    gh.reset_requests()
    before = gh.rate_remaining
    r = watcher(["check-now", "--no-smoke", "--json"], folder, gh)
    assert r.returncode == 0, r.stderr
    assert gh.requests and all(req.status == 304 for req in gh.requests)
    assert all("if-none-match" in req.headers for req in gh.requests)
    assert gh.rate_remaining == before
    doc = json.loads(r.stdout)
    assert doc["runs"]["last_cycle"]["requests"] == doc["runs"]["last_cycle"]["not_modified"] > 0
    again = (folder / "docs" / "engines" / "SGLANG.md").read_text()
    assert again.split("Last read from GitHub")[1:] == page.split("Last read from GitHub")[1:]


def test_unreachable_github_renders_last_known_state(world):
    gh, folder = world
    assert watcher(["check-now", "--no-smoke"], folder, gh).returncode == 0
    env = dict(os.environ, PYTHONPATH=str(REPO), GITHUB_API_URL=unreachable_url())
    r = subprocess.run(
        [sys.executable, "-m", "watcher", "check-now", "--no-smoke"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "GitHub could not be read" in r.stderr
    status = json.loads((folder / "site" / "status.json").read_text())
    items = {i["id"]: i for i in status["items"]}
    assert items["vllm-40361"]["state"] == "closed" and items["vllm-40361"]["stale"] is True
    page = (folder / "docs" / "engines" / "SGLANG.md").read_text()
    assert "could not read GitHub, so this may be out of date" in page
    assert "fixed by `#45295`" in page  # the last known state (reference made inert)


def test_dry_run_writes_nothing(world):
    gh, folder = world
    r = watcher(["check-now", "--dry-run"], folder, gh)
    assert r.returncode == 0, r.stderr
    assert "would record: now tracking vllm-project/vllm#40361" in r.stdout
    assert "would be created" in r.stdout
    assert not (folder / "docs").exists() and not (folder / "site" / "status.json").exists()
    assert not (folder / "data" / "watcher.db").exists()


def test_offline_and_status_commands(world):
    gh, folder = world
    assert watcher(["check-now", "--no-smoke"], folder, gh).returncode == 0
    r = watcher(["check-now", "--offline"], folder, gh)
    assert r.returncode == 0 and "Rendered offline" in r.stderr
    r = watcher(["status"], folder, gh)
    assert r.returncode == 0
    assert "marlin-pad" in r.stdout and "superseded by #45295" in r.stdout


def test_first_run_without_network_is_useful(tmp_path):
    """A fresh clone with no network: a clear message and a readable page, never a traceback."""
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    env = dict(os.environ, PYTHONPATH=str(REPO), GITHUB_API_URL=unreachable_url())
    r = subprocess.run(
        [sys.executable, "-m", "watcher", "check-now"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert "GitHub could not be read" in r.stderr and "nothing has been read yet" in r.stderr
    assert "sglang: not checked yet — wrote" in r.stdout
    page = (tmp_path / "docs" / "engines" / "SGLANG.md").read_text()
    assert page.startswith("# SGLang — not checked yet") and "could not reach GitHub" in page
    assert "## Watch list" in page and "vllm/pull/40361" in page and "docker run" in page
    assert "auto_round.py" in page and "vllm/pull/40361): not read yet" in page
