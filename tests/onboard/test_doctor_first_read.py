"""`doctor` after an item's number changed since the last good read (issue 33, item 13): the item
is a first read, as on a fresh store, so doctor reads it now; a typo fails with the key to fix,
as check-now's first read would (exit 2), instead of "all checks passed"."""

from __future__ import annotations

from click.testing import CliRunner
from kits.watchtoml import write_watch

from watcher.cli import cli

BASE = """
[watcher]
github_api_url = "{url}"
data_dir = "data"
site_dir = "site"
timeout = "10s"

[[item]]
id = "pr"
repo = "o/engine"
kind = "pull"
number = {number}
label = "The engine's fix"

[[blocker]]
id = "b"
title = "B"
items = ["pr"]

[[page]]
id = "p"
title = "P"
output = "P.md"
blockers = ["b"]
"""

ENV = {"GITHUB_TOKEN": "test-token", "GITHUB_API_URL": None}


def run(*args: str):
    return CliRunner().invoke(cli, list(args), env=ENV)


def item_line(result) -> str | None:
    found = [ln for ln in result.output.splitlines() if ln[5:].startswith("item pr:")]
    return found[0] if found else None


def test_a_number_changed_since_the_last_read_is_checked_as_a_first_read(tmp_path, fake_github):
    fake_github.add_pull("o/engine", 1, title="Fix the engine")
    fake_github.add_pull("o/engine", 3, title="Fix the engine, again")
    path = write_watch(tmp_path, BASE.format(url=fake_github.url, number=1))
    assert run("check-now", "--config", str(path), "--no-smoke").exit_code == 0
    clean = run("doctor", "--config", str(path))
    assert clean.exit_code == 0 and item_line(clean) is None, clean.output  # nothing changed

    write_watch(tmp_path, BASE.format(url=fake_github.url, number=2))  # a typo
    typo = run("doctor", "--config", str(path))
    assert typo.exit_code == 1, typo.output
    line = item_line(typo)
    assert line.startswith("FAIL item pr: now o/engine#2, read before as o/engine#1: a first")
    assert "o/engine has no pull request #2 (GitHub answered 404)" in line
    assert f"fix: fix `repo`/`number` of [[item]] pr in {path}" in typo.output
    assert "all checks passed" not in typo.output

    write_watch(tmp_path, BASE.format(url=fake_github.url, number=3))  # a real other thread
    moved = run("doctor", "--config", str(path))
    assert moved.exit_code == 0, moved.output
    assert item_line(moved).startswith("ok   item pr: now o/engine#3, read before as o/engine#1")

    write_watch(tmp_path, BASE.format(url=fake_github.url, number=2))
    first = run("check-now", "--config", str(path), "--no-smoke")  # check-now agrees: exit 2
    assert first.exit_code == 2 and "has no pull request #2" in first.output
    again = run(
        "doctor", "--config", str(path)
    )  # the old thread's read is gone: still a first read
    assert again.exit_code == 1
    assert item_line(again).startswith("FAIL item pr: o/engine#2 not read yet: a first read;")


def test_an_outage_is_not_blamed_on_the_key(tmp_path, fake_github):
    fake_github.add_pull("o/engine", 1, title="Fix the engine")
    path = write_watch(tmp_path, BASE.format(url=fake_github.url, number=1))
    assert run("check-now", "--config", str(path), "--no-smoke").exit_code == 0
    write_watch(tmp_path, BASE.format(url=fake_github.url, number=2))
    fake_github.fail("GET", r".*/pulls/2$", status=503, times=-1, body={"message": "down"})
    result = run("doctor", "--config", str(path))
    assert result.exit_code == 1
    line = item_line(result)
    assert line.startswith("FAIL item pr:") and "503" in line
    assert "once GitHub answers" in result.output and "fix `repo`" not in result.output


def test_items_never_read_are_read_once_a_store_exists(tmp_path, fake_github):
    fake_github.add_pull("o/engine", 1, title="Fix the engine")
    path = write_watch(tmp_path, BASE.format(url=fake_github.url, number=1))
    assert run("check-now", "--config", str(path), "--offline").exit_code == 0  # nothing read
    result = run("doctor", "--config", str(path))
    assert result.exit_code == 0, result.output
    assert "ok   first reads: pr: not read yet; GitHub has each" in result.output
