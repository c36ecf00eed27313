"""Start-up: heavy libraries load only in the commands that use them.

Checked in real subprocesses through `python -X importtime`, which names every module imported.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("github", "jinja2", "httpx")


def imported(*args: str, cwd: Path = REPO) -> set[str]:
    """Top-level package names a `python -X importtime ARGS` process imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *args], cwd=cwd, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    assert "watcher" in names  # the probe works: it sees our own package
    return names


def test_importing_the_cli_loads_no_heavy_library():
    names = imported("-c", "import watcher.cli")
    assert not names & set(HEAVY), names & set(HEAVY)


def test_help_and_validate_load_no_heavy_library(tmp_path):
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    for argv in (["--help"], ["validate"]):
        names = imported("-m", "watcher", *argv, cwd=tmp_path)
        assert not names & {*HEAVY, "sqlite_utils", "markdown"}, (argv, names)


def test_explain_loads_neither_http_nor_templates(tmp_path):
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    names = imported("-m", "watcher", "explain", cwd=tmp_path)
    assert "sqlite_utils" in names  # it reads the store...
    assert not names & set(HEAVY), names & set(HEAVY)  # ...and needs no HTTP client or jinja2


def test_offline_cycle_then_status_load_no_http_client(tmp_path):
    """`check-now --offline` renders (jinja2) but asks GitHub nothing, so it needs no HTTP client;
    `status` afterwards reads the database that cycle wrote and renders nothing."""
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    names = imported("-m", "watcher", "check-now", "--offline", cwd=tmp_path)
    assert "jinja2" in names  # it rendered the pages...
    assert not names & {"github", "httpx", "httpcore", "requests"}, names & {"github", "httpx"}
    assert (tmp_path / "data" / "watcher.db").exists()
    names = imported("-m", "watcher", "status", cwd=tmp_path)
    assert "sqlite_utils" in names  # it read the store...
    assert not names & {*HEAVY, "httpcore", "requests"}, names & set(HEAVY)
