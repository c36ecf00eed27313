"""`watcher demo` runs the whole loop offline; nothing it starts reaches past 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_demo_offline_in_a_fresh_folder(tmp_path):
    log = tmp_path / "netguard.log"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "HTTP", "HTTPS", "http", "https"))
    }
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO / "tests" / "netguard"), str(REPO)]),
        WATCHER_NETGUARD_LOG=str(log),
    )
    folder = tmp_path / "demo"
    r = subprocess.run(
        [sys.executable, "-m", "watcher", "demo", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert not log.exists(), log.read_text()  # no connection attempted beyond loopback

    assert "cycle 1:" in r.stderr and "page: sglang blocked" in r.stderr
    assert "page: sglang ready-to-test" in r.stderr
    assert "would post — page sglang: blocked → ready-to-test" in r.stderr
    assert "off-target hardware: shown, never validates" in r.stderr
    for what in ("page:", "site:", "status:"):
        assert what in r.stdout
    page = (folder / "docs" / "engines" / "SGLANG.md").read_text()
    assert "fixed by `#45295`, first in v0.24.0" in page  # the reference is inert
    assert "(not an RTX 3090: it proves nothing here)" in page  # the fake engine's pass
    status = json.loads((folder / "site" / "status.json").read_text())
    assert status["pages"][0]["status"] == "ready-to-test"  # a fake engine never validates
    assert status["runs"]["smoke"][0]["outcome"] == "passed"
    assert status["runs"]["smoke"][0]["hardware"]["matches_target"] is False
    assert (folder / "site" / "index.html").exists() and (folder / "site" / "feed.xml").exists()
    config = (folder / "watch.toml").read_text()
    assert "# The demo's own fake GitHub on 127.0.0.1, gone once the demo ended" in config
    # the folder must be fresh: a second demo into it refuses, loses nothing
    r2 = subprocess.run(
        [sys.executable, "-m", "watcher", "demo", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r2.returncode == 1 and "not empty" in r2.stderr


def test_netguard_really_refuses(tmp_path):
    """The guard above is only evidence if it catches a real attempt."""
    log = tmp_path / "netguard.log"
    env = dict(
        os.environ, PYTHONPATH=str(REPO / "tests" / "netguard"), WATCHER_NETGUARD_LOG=str(log)
    )
    code = "import socket\ntry:\n    socket.create_connection(('192.0.2.1', 80), timeout=0.1)\nexcept OSError as e:\n    print(e)"
    r = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30
    )
    assert "netguard" in r.stdout and "192.0.2.1" in log.read_text()
