"""Small things people trip on: -v after the command, shell completion, a missing config, a
rebuild that deleted the site folder's tracked files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from watcher.cli import cli

REPO = Path(__file__).resolve().parents[2]

CONFIG = """
[watcher]
github_api_url = "{url}"

[[item]]
id = "marlin-fix"
repo = "o/engine"
kind = "pull"
number = 1

[[blocker]]
id = "marlin-pad"
title = "Marlin pad"
items = ["marlin-fix"]

[[recipe]]
id = "sglang-tp1"
engine = "sglang"
command = ["true"]
blockers = ["marlin-pad"]

[[page]]
id = "sglang"
title = "SGLang"
output = "SGLANG.md"
blockers = ["marlin-pad"]
recipes = ["sglang-tp1"]
"""


def watcher(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    full.pop("GITHUB_API_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "watcher", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_verbose_works_before_and_after_the_command(tmp_path, fake_github):
    fake_github.add_pull("o/engine", 1, title="Marlin pad fix")
    (tmp_path / "watch.toml").write_text(CONFIG.format(url=fake_github.url))
    env = {"GITHUB_TOKEN": "test-token"}
    quiet = watcher("check-now", "--no-smoke", cwd=tmp_path, env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert " DEBUG " not in quiet.stderr
    for args in (["-vv", "check-now", "--no-smoke"], ["check-now", "--no-smoke", "-vv"]):
        loud = watcher(*args, cwd=tmp_path, env=env)
        assert loud.returncode == 0, loud.stderr
        assert " DEBUG " in loud.stderr, args  # -vv: HTTP requests are logged
    # one -v before and one after add up to -vv
    both = watcher("-v", "check-now", "--no-smoke", "-v", cwd=tmp_path, env=env)
    assert " DEBUG " in both.stderr


def complete(words: str, cwd: Path) -> list[str]:
    """What bash completion offers for the last word of `words` (click's protocol)."""
    parts = words.split(" ")
    run = watcher(
        cwd=cwd,
        env={
            "_WATCHER_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(parts) - 1),
        },
    )
    assert run.returncode == 0, run.stderr
    return [line.split(",", 1)[1] for line in run.stdout.splitlines() if line]


def test_completion_offers_ids_from_the_config(tmp_path):
    (tmp_path / "watch.toml").write_text(CONFIG.format(url="http://127.0.0.1:9"))
    assert complete("watcher explain ", tmp_path) == ["sglang", "marlin-pad", "marlin-fix"]
    assert complete("watcher explain marlin-p", tmp_path) == ["marlin-pad"]
    assert complete("watcher smoke s", tmp_path) == ["sglang-tp1"]
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert complete(f"watcher smoke --config {tmp_path / 'watch.toml'} ", other) == ["sglang-tp1"]
    assert complete("watcher smoke ", other) == []  # no config here: nothing, no traceback


def test_a_missing_config_names_the_folder_it_looked_in(tmp_path):
    result = CliRunner().invoke(cli, ["validate", "--config", str(tmp_path / "a" / "watch.toml")])
    assert result.exit_code == 2
    assert f"looked in {tmp_path / 'a'}" in result.output and "watcher init" in result.output


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_check_now_keeps_tracked_files_in_the_site_folder(tmp_path, fake_github):
    fake_github.add_pull("o/engine", 1, title="Marlin pad fix")
    repo = tmp_path / "guide"
    (repo / "site").mkdir(parents=True)
    (repo / "site" / ".gitkeep").write_text("")
    (repo / "watch.toml").write_text(CONFIG.format(url=fake_github.url))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    env = {"GITHUB_TOKEN": "test-token"}
    first = watcher("check-now", "--no-smoke", cwd=repo, env=env)
    assert first.returncode == 0, first.stderr
    assert (repo / "site" / "index.html").is_file() and (repo / "site" / ".gitkeep").is_file()
    (repo / "site" / "robots").mkdir()
    (repo / "site" / "robots" / "robots.txt").write_text("User-agent: *\n")
    git(repo, "add", "-f", "site/robots/robots.txt")
    again = watcher("check-now", "--no-smoke", cwd=repo, env=env)
    assert again.returncode == 0, again.stderr
    assert git(repo, "ls-files", "--deleted") == ""  # nothing git tracks went missing
    assert (repo / "site" / "robots" / "robots.txt").read_text() == "User-agent: *\n"
