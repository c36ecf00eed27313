"""A site folder that cannot be written (issue 33, item 15): check-now says so in one line and exits
1 without claiming status.json was written, and `doctor` checks what the cycle does (a temp file
in site/ and in each page's folder). A site folder that is a mount point is written in place."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def watcher(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {
        "PYTHONPATH": str(REPO),
        "PATH": "/usr/bin:/bin",
        "HOME": str(cwd),
        "GITHUB_API_URL": "http://127.0.0.1:9",  # doctor's GitHub lines fail fast, offline
    }
    return subprocess.run(
        [sys.executable, "-m", "watcher", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def doctor_line(out: subprocess.CompletedProcess, name: str) -> str:
    (line,) = [ln for ln in out.stdout.splitlines() if ln[5:].startswith(f"{name}:")]
    return line


def one_error(out: subprocess.CompletedProcess, *words: str) -> str:
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("Error: ")]
    assert len(errors) == 1, out.stderr
    for word in words:
        assert word in errors[0], errors[0]
        assert out.stderr.count(word) == 1, out.stderr  # said once
    assert "status: " not in out.stdout and "site: " not in out.stdout  # nothing claimed
    return errors[0]


@contextlib.contextmanager
def tmpfs(where: Path):
    """A small real file system mounted at `where` (root only; skipped where mounting is not
    allowed: then the file-in-the-way test below still runs, as any user)."""
    where.mkdir(parents=True, exist_ok=True)
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_site_mount_is_written_in_place_and_a_read_only_one_is_one_line(tmp_path):
    assert watcher("init", ".", cwd=tmp_path).returncode == 0
    with tmpfs(tmp_path / "site") as site:
        out = watcher("check-now", "--offline", cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert (site / "index.html").is_file() and (site / "status.json").is_file()
        assert f"status: {site / 'status.json'}" in out.stdout
        assert doctor_line(watcher("doctor", cwd=tmp_path), "site folder").startswith("ok")

        subprocess.run(["mount", "-o", "remount,ro", str(site)], check=True)
        before = (site / "status.json").read_bytes()
        out = watcher("check-now", "--offline", cwd=tmp_path)
        one_error(out, "Read-only file system")
        assert str(site) in out.stderr and "site_dir" in out.stderr
        assert (site / "status.json").read_bytes() == before
        assert (tmp_path / "docs" / "engines" / "SGLANG.md").is_file()  # the pages still were

        doc = watcher("doctor", cwd=tmp_path)
        assert doc.returncode == 1
        line = doctor_line(doc, "site folder")
        assert line.startswith("FAIL") and "Read-only file system" in line and str(site) in line


def test_a_file_in_the_way_fails_for_any_user(tmp_path):
    assert watcher("init", ".", cwd=tmp_path).returncode == 0
    (tmp_path / "site").write_text("not a site\n")
    doc = watcher("doctor", cwd=tmp_path)
    line = doctor_line(doc, "site folder")
    assert doc.returncode == 1 and line.startswith("FAIL") and "a file is in the way" in line
    out = watcher("check-now", "--offline", cwd=tmp_path)
    one_error(out, "a file is in the way")
    assert (tmp_path / "site").read_text() == "not a site\n"  # never moved away or deleted

    (tmp_path / "site").unlink()
    shutil.rmtree(tmp_path / "docs" / "engines")  # the pages were written: put a file there
    (tmp_path / "docs" / "engines").write_text("a file where the pages' folder goes\n")
    doc = watcher("doctor", cwd=tmp_path)
    assert doctor_line(doc, "site folder").startswith("ok")
    line = doctor_line(doc, "page folders")
    assert line.startswith("FAIL") and str(tmp_path / "docs" / "engines") in line
    out = watcher("check-now", "--offline", cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert (
        "Not a directory" in out.stderr and "not watcher's files" not in out.stderr
    )  # no false why


def test_doctor_passes_a_writable_site_and_page_folders(tmp_path):
    assert watcher("init", ".", cwd=tmp_path).returncode == 0
    doc = watcher("doctor", cwd=tmp_path)
    assert doctor_line(doc, "site folder").startswith("ok")
    line = doctor_line(doc, "page folders")
    assert line.startswith("ok") and "docs/engines" in line
    assert not list(tmp_path.rglob(".watcher-doctor-*"))  # the probes leave nothing behind
    assert os.access(tmp_path, os.W_OK)
