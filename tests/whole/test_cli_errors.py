"""Broken surroundings — a damaged database, a full disk, a read-only data folder, a config nested
too deeply — give one line naming the file and an exit code, never a traceback; upstream text never
drives the terminal."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from kits.smokekit import engine_command, write_config

from watcher.config.load import load_config
from watcher.store.db import Store

REPO = Path(__file__).resolve().parents[2]


def watcher(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "watcher", *args],
        cwd=cwd,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_clean_line(out: subprocess.CompletedProcess, *words: str) -> str:
    assert "Traceback" not in out.stderr, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, out.stderr
    for word in words:
        assert word in errors[0], errors[0]
    return errors[0]


@contextlib.contextmanager
def tmpfs(where: Path, size: str):
    """A small real file system (root only; skipped where mounting is not allowed)."""
    where.mkdir(parents=True, exist_ok=True)
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_deeply_nested_toml_is_a_config_error(tmp_path):
    (tmp_path / "watch.toml").write_text("a = " + "[" * 50000 + "]" * 50000 + "\n")
    out = watcher("validate", "--config", "watch.toml", cwd=tmp_path)
    assert out.returncode == 2
    one_clean_line(out, "watch.toml", "nested too deeply")


def test_a_damaged_database_is_one_line(tmp_path):
    assert watcher("init", ".", cwd=tmp_path).returncode == 0
    assert watcher("check-now", "--offline", cwd=tmp_path).returncode == 0
    db = tmp_path / "data" / "watcher.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'items'").fetchone()
    conn.close()
    with open(db, "r+b") as f:  # the schema reads fine; the items table's first page does not
        f.seek((root - 1) * page_size)
        f.write(b"\x0d\x00\x00\xff" * (page_size // 4))
    for name in ("-wal", "-shm"):
        Path(f"{db}{name}").unlink(missing_ok=True)
    for command in (["check-now", "--offline"], ["status"], ["explain"], ["build-site"]):
        out = watcher(*command, cwd=tmp_path)
        assert out.returncode == 1, (command, out.stderr)
        one_clean_line(out, str(db))


def test_a_full_disk_is_one_line(tmp_path):
    assert watcher("init", ".", cwd=tmp_path).returncode == 0
    with tmpfs(tmp_path / "data", "1m"):
        assert watcher("check-now", "--offline", cwd=tmp_path).returncode == 0
        # suppress outermost: the final flush on close can be the write that finds the disk full
        with contextlib.suppress(OSError), open(tmp_path / "data" / "fill", "wb") as f:
            while True:
                f.write(b"\0" * 65536)
        for command in (["check-now", "--offline"], ["status"]):
            out = watcher(*command, cwd=tmp_path)
            assert out.returncode == 1, (command, out.stderr)
            one_clean_line(out, "watcher.db")


def test_a_read_only_data_folder_is_one_line(tmp_path):
    config = write_config(tmp_path, engine_command())
    with tmpfs(tmp_path / "data", "1m") as data:
        subprocess.run(["mount", "-o", "remount,ro", str(data)], check=True)
        assert not os.access(data, os.W_OK) or os.geteuid() == 0
        out = watcher("smoke", "fake-tp1", "--any-hardware", "--config", str(config), cwd=tmp_path)
        assert out.returncode == 1
        one_clean_line(out, str(data), "read-only")
        out = watcher("check-now", "--offline", "--config", str(config), cwd=tmp_path)
        assert out.returncode == 1
        one_clean_line(out, str(data), "Read-only file system")


HOSTILE_TITLE = (
    "Fix \x1b]8;;https://evil.example\x07the loader\x1b]8;;\x07 \x1b[2J\x1b[31mpad"
    "\x1b]0;pwned\x07\r\u202eoverride\x9b"
)


def test_status_and_explain_strip_terminal_escapes(tmp_path):
    assert watcher("init", ".", cwd=tmp_path).returncode == 0
    assert watcher("check-now", "--offline", cwd=tmp_path).returncode == 0
    cfg = load_config(tmp_path / "watch.toml")
    item = cfg.items[0]
    store = Store(cfg.db_path)
    try:
        store.upsert_item(
            {"id": item.id, "repo": item.repo, "kind": item.kind, "number": item.number,
             "title": HOSTILE_TITLE, "state": "open", "stale": 0}
        )  # fmt: skip
    finally:
        store.close()
    for command in (["status"], ["explain", item.id]):
        out = watcher(*command, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert "Fix the loader pad" in out.stdout.replace("  ", " "), out.stdout
        for bad in ("\x1b", "\x07", "\r", "\u202e", "\x9b"):
            assert bad not in out.stdout + out.stderr, (command, bad)
