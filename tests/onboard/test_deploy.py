"""The deploy kits: workflow YAML, systemd units, and the commit step of the Actions workflow."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from watcher.cli import cli
from watcher.config.load import load_config
from watcher.core.errors import LockBusy
from watcher.fakes.github import FakeGitHub
from watcher.onboard import dbchanged as db_changed
from watcher.onboard.scaffold import watch_workflow

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
UNITS = ROOT / "deploy" / "systemd"


def load_workflow(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in doc:  # YAML 1.1 reads the key `on` as a boolean
        doc["on"] = doc.pop(True)
    return doc


def run_steps(doc: dict) -> list[str]:
    return [s["run"] for job in doc["jobs"].values() for s in job.get("steps", []) if "run" in s]


def watcher_invocations(script: str) -> list[list[str]]:
    """Each `watcher ...` command line in a shell script, as tokens after `watcher`."""
    found = []
    for line in script.replace("\\\n", " ").splitlines():
        for segment in re.split(r"&&|\|\||[;|]", line):
            try:
                tokens = shlex.split(segment, comments=True)
            except ValueError:
                tokens = segment.split()
            while tokens and (re.match(r"^[A-Z_][A-Z0-9_]*=", tokens[0]) or tokens[0] == "exec"):
                tokens.pop(0)
            if tokens and Path(tokens[0]).name == "watcher":
                found.append(tokens[1:])
    return found


def unit_sections(path: Path) -> dict[str, dict[str, list[str]]]:
    """A systemd unit file: section -> key -> values (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        key, sep, value = line.partition("=")
        assert sep and current is not None, f"{path.name}: not a unit line: {raw!r}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def unit_invocations() -> list[list[str]]:
    found = []
    for unit in sorted(UNITS.glob("*.service")):
        for cmd in unit_sections(unit)["Service"].get("ExecStart", []):
            found.extend(watcher_invocations(cmd.lstrip("-@:+!")))
    return found


@cache
def help_text(*command: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "watcher", *command, "--help"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=60,
    )
    assert result.returncode == 0, f"watcher {' '.join(command)} --help failed:\n{result.stderr}"
    return result.stdout


def check_invocation(args: list[str], where: str) -> None:
    """Group options, then a command that exists, then options that command knows."""
    group_opts = []
    while args and args[0].startswith("-"):
        group_opts.append(args.pop(0))
    assert args, f"{where}: `watcher` without a command"
    command, rest = args[0], args[1:]
    top = help_text()
    for opt in group_opts:
        assert re.search(rf"(^|[\s,]){re.escape(opt)}\b", top), f"{where}: unknown option {opt}"
    text = help_text(command)
    for opt in rest:
        if opt.startswith("--"):
            name = opt.split("=", 1)[0]
            assert re.search(rf"(^|[\s,]){re.escape(name)}\b", text), (
                f"{where}: `watcher {command}` has no option {name}"
            )


# ---------------------------------------------------------------- the workflow files


def test_workflow_files_parse_and_include_the_watch_workflow():
    names = [p.name for p in WORKFLOWS]
    assert "watch.yml" in names
    for path in WORKFLOWS:
        doc = load_workflow(path)
        assert doc.get("on"), f"{path.name}: no trigger"
        assert doc.get("jobs"), f"{path.name}: no jobs"
        for job_id, job in doc["jobs"].items():
            assert job.get("runs-on"), f"{path.name}: job {job_id} has no runs-on"
            for step in job.get("steps", []):
                assert ("run" in step) != ("uses" in step), f"{path.name}/{job_id}: {step}"


def test_every_watcher_command_the_kits_call_exists():
    calls = [
        (p.name, inv)
        for p in WORKFLOWS
        for s in run_steps(load_workflow(p))
        for inv in watcher_invocations(s)
    ]
    calls += [("systemd", inv) for inv in unit_invocations()]
    commands = {inv[[i for i, t in enumerate(inv) if not t.startswith("-")][0]] for _, inv in calls}
    assert {"check-now", "serve"} <= commands, commands
    for where, inv in calls:
        check_invocation(list(inv), where)


def test_invocation_check_catches_a_typo():
    with pytest.raises(AssertionError, match="no option --no-smok"):
        check_invocation(["check-now", "--no-smok"], "test")
    with pytest.raises(AssertionError, match="--help failed"):
        check_invocation(["chek-now"], "test")
    assert watcher_invocations('git commit -m "watcher: check of now"') == []
    assert watcher_invocations("FOO=1 watcher -v serve --once && echo done") == [
        ["-v", "serve", "--once"]
    ]


def test_watch_workflow_matches_the_config_and_never_overlaps():
    doc = load_workflow(ROOT / ".github" / "workflows" / "watch.yml")
    cfg = load_config(ROOT / "watch.toml")

    assert "workflow_dispatch" in doc["on"]
    (cron,) = [c["cron"] for c in doc["on"]["schedule"]]
    minutes = sorted(int(m) for m in cron.split()[0].split(","))
    gaps = {(b - a) % 60 for a, b in zip(minutes, minutes[1:] + minutes[:1], strict=True)}
    assert cron.split()[1:] == ["*", "*", "*", "*"] and gaps == {cfg.settings.interval / 60}

    assert doc["concurrency"]["group"] and doc["concurrency"]["cancel-in-progress"] is False
    assert doc["permissions"] == {}

    check, deploy = doc["jobs"]["check"], doc["jobs"]["deploy"]
    assert check["permissions"] == {"contents": "write"}
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    # the token only where watcher polls, never to the install step (issue 21)
    (poll,) = [s for s in check["steps"] if "GITHUB_TOKEN" in (s.get("env") or {})]
    assert poll["env"]["GITHUB_TOKEN"] == "${{ secrets.GITHUB_TOKEN }}"
    assert "watcher check-now" in poll["run"] and "GITHUB_TOKEN" not in (check.get("env") or {})
    uses = {s["uses"].split("@")[0]: s for s in check["steps"] if "uses" in s}
    assert uses["actions/setup-python"]["with"]["python-version"] == "3.11"
    assert uses["actions/upload-pages-artifact"]["with"]["path"] == cfg.settings.site_dir
    runs = "\n".join(run_steps(doc))
    assert 'pip install "."' in runs  # this repository installs itself; guides pin a tag
    assert "watcher check-now --config watch.toml" in runs
    assert "git add -f " + cfg.settings.data_dir + "/watcher.db" in runs
    assert f"for page in {' '.join(p.output for p in cfg.pages)}; do" in runs

    assert deploy["needs"] == "check"
    assert deploy["environment"]["name"] == "github-pages"
    (step,) = deploy["steps"]
    assert step["uses"].startswith("actions/deploy-pages@") and step["id"] == "deployment"
    assert deploy["environment"]["url"] == "${{ steps.deployment.outputs.page_url }}"


# ---------------------------------------------------------------- the commit step, for real


def commit_step(config: Path) -> str:
    """The commit step of the workflow `watcher init --github` writes for this config."""
    doc = yaml.safe_load(watch_workflow(load_config(config), config.parent))
    (step,) = [s for s in doc["jobs"]["check"]["steps"] if s.get("name", "").startswith("Commit")]
    return step["run"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


PAGE_CONFIG = """
[watcher]
interval = "30m"

[[item]]
id = "crash"
repo = "acme/engine"
kind = "issue"
number = 7
label = "the crash"

[[blocker]]
id = "crash-fixed"
title = "The crash is fixed"
items = ["crash"]

[[page]]
id = "demo"
title = "Demo"
output = "docs/engines/DEMO.md"
blockers = ["crash-fixed"]
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="the workflow step is bash")
def test_commit_step_commits_real_changes_and_skips_quiet_cycles(tmp_path):
    remote, repo = tmp_path / "origin.git", tmp_path / "repo"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    (repo / "watch.toml").write_text(PAGE_CONFIG, encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    (bin_dir / "watcher").symlink_to(Path(sys.executable).parent / "watcher")
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", RUNNER_TEMP=str(runner_temp))
    script = commit_step(repo / "watch.toml")

    def cycle_then_commit(gh: FakeGitHub) -> str:
        result = CliRunner().invoke(
            cli,
            ["check-now", "--config", str(repo / "watch.toml")],
            env={"GITHUB_API_URL": gh.url, "GITHUB_TOKEN": "test-token"},
        )
        assert result.exit_code == 0, result.output
        step = subprocess.run(
            ["bash", "-c", script], cwd=repo, env=env, capture_output=True, text=True
        )
        assert step.returncode == 0, step.stdout + step.stderr
        return step.stdout

    def pushed() -> list[str]:
        return git(repo, "log", "--format=%s", "origin/main").splitlines()

    with FakeGitHub() as gh:
        gh.add_issue("acme/engine", 7, title="Crash at load")
        cycle_then_commit(gh)
        assert pushed()[0].endswith("(the pages changed)")
        assert git(repo, "ls-files", "data", "docs") == "data/watcher.db\ndocs/engines/DEMO.md"

        out = cycle_then_commit(gh)  # nothing upstream moved: only the check time did
        assert "quiet: only bookkeeping changed" in out and "not committing" in out
        assert len(pushed()) == 2
        assert git(repo, "diff", "--cached", "--name-only") == ""

        gh.update("acme/engine", 7, state="closed", state_reason="completed")
        cycle_then_commit(gh)
        assert len(pushed()) == 3 and pushed()[0].endswith("(the pages changed)")
        committed = git(repo, "show", "origin/main:docs/engines/DEMO.md")
        assert "completed" in committed


def test_db_changed_tells_state_from_bookkeeping(tmp_path):
    db = tmp_path / "new.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        """CREATE TABLE cycles (id INTEGER PRIMARY KEY, finished_at TEXT);
        CREATE TABLE events (id INTEGER PRIMARY KEY, message TEXT);
        CREATE TABLE statuses (key TEXT PRIMARY KEY, status TEXT, updated_at TEXT);
        INSERT INTO cycles (finished_at) VALUES ('2026-11-30T08:00:00Z');
        INSERT INTO statuses VALUES ('page:demo', 'blocked', '2026-11-30T08:00:00Z');"""
    )
    conn.commit()
    conn.close()
    old = tmp_path / "old.db"
    shutil.copy(db, old)

    def edit(sql: str) -> None:
        c = sqlite3.connect(db)
        with c:
            c.executescript(sql)
        c.close()

    edit(
        "INSERT INTO cycles (finished_at) VALUES ('2026-11-30T08:30:00Z');"
        "UPDATE statuses SET updated_at = '2026-11-30T08:30:00Z';"
    )
    assert db_changed.decide(str(old), str(db), 6 * 3600) == (
        False,
        "quiet: only bookkeeping changed (cycles, etags, heartbeats, items, observations)",
    )
    edit("INSERT INTO cycles (finished_at) VALUES ('2026-11-30T14:00:00Z')")
    assert db_changed.decide(str(old), str(db), 6 * 3600) == (
        True,
        "periodic: the stored state's last cycle is 6.0 h old",
    )
    assert db_changed.decide(str(old), str(db), None)[0] is False
    edit("UPDATE statuses SET status = 'fix-merged'")
    assert db_changed.decide(str(old), str(db), None) == (True, "changed: statuses")
    cli_run = CliRunner().invoke(cli, ["db-changed", "--every", "6h", str(old), str(db)])
    assert cli_run.exit_code == 0 and cli_run.output == "changed: statuses\n"
    shutil.copy(db, old)
    quiet = CliRunner().invoke(cli, ["db-changed", str(old), str(db)])
    assert quiet.exit_code == 1 and quiet.output.startswith("quiet: ")
    (tmp_path / "junk.db").write_text("not sqlite")
    broken = CliRunner().invoke(cli, ["db-changed", str(old), str(tmp_path / "junk.db")])
    assert broken.exit_code == 2 and "junk.db" in broken.output
    assert "Traceback" not in broken.output


# ---------------------------------------------------------------- systemd


def test_systemd_units_run_serve_or_a_timed_check_now():
    cfg = load_config(ROOT / "watch.toml")
    service = unit_sections(UNITS / "watcher.service")
    check = unit_sections(UNITS / "watcher-check.service")
    timer = unit_sections(UNITS / "watcher-check.timer")

    (serve_cmd,) = service["Service"]["ExecStart"]
    assert watcher_invocations(serve_cmd) == [["serve", "--config", "/srv/watcher/watch.toml"]]
    # serve alone gets SIGTERM and finishes its cycle; SIGKILL only after the stop timeout.
    assert service["Service"]["KillMode"] == ["mixed"]
    assert service["Service"]["KillSignal"] == ["SIGTERM"]
    assert service["Unit"]["Conflicts"] == ["watcher-check.timer"]
    assert service["Install"]["WantedBy"] == ["multi-user.target"]

    (check_cmd,) = check["Service"]["ExecStart"]
    assert watcher_invocations(check_cmd) == [["check-now", "--config", "/srv/watcher/watch.toml"]]
    assert check["Service"]["Type"] == ["oneshot"]
    assert check["Service"]["SuccessExitStatus"] == [str(LockBusy.exit_code)]

    assert timer["Timer"]["Unit"] == ["watcher-check.service"]
    (calendar,) = timer["Timer"]["OnCalendar"]
    assert calendar == f"*:0/{int(cfg.settings.interval // 60)}"
    assert timer["Install"]["WantedBy"] == ["timers.target"]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_units_verify(tmp_path):
    """systemd's own checker, with ExecStart pointed at a file that exists here."""
    fake = tmp_path / "watcher"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    units = []
    for unit in sorted(UNITS.iterdir()):
        text = unit.read_text(encoding="utf-8").replace("/opt/watcher/venv/bin/watcher", str(fake))
        (tmp_path / unit.name).write_text(text, encoding="utf-8")
        units.append(str(tmp_path / unit.name))
    result = subprocess.run(
        ["systemd-analyze", "verify", *units], capture_output=True, text=True, timeout=60
    )
    complaints = [
        line for line in (result.stdout + result.stderr).splitlines() if str(tmp_path) in line
    ]
    assert result.returncode == 0 and not complaints, result.stdout + result.stderr
