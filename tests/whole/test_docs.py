"""The README stays short and every command in it runs in a test; the manual in docs/ builds with
`mkdocs build --strict` and its command reference matches `--help` (cog), so neither can drift."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from kits.readme import readme_path

from watcher.cli import cli
from watcher.fakes.scenarios import load, real_threads

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
COMMANDS = ROOT / "docs" / "commands.md"

# README commands that another test (or CI) runs, with the words in that file that show it does.
# Everything else in the README's shell blocks is run by test_the_readme_commands_run below.
RUN_ELSEWHERE = {
    "pip install .": (
        "tests/onboard/test_adopt.py",
        '"pip", "wheel"',
    ),  # the checkout's wheel, installed
    "watcher demo /tmp/watcher-demo": ("tests/onboard/test_demo.py", '"watcher", "demo"'),
    'pip install -e ".[test]"': (".ci/run", 'python -m pip install -q -e ".[test]"'),
    "python -m pytest": (".ci/run", "python -m pytest"),
}
RUN_HERE = {"watcher check-now"}


def shell_blocks(text: str) -> list[tuple[str, str]]:
    """(section heading, block) for each ```bash block of a Markdown text."""
    found, heading, block, lines = [], "", None, text.splitlines()
    for line in lines:
        if block is None and line.startswith("## "):
            heading = line[3:]
        elif block is None and line.strip() == "```bash":
            block = []
        elif block is not None and line.strip() == "```":
            found.append((heading, "\n".join(block)))
            block = None
        elif block is not None:
            block.append(line)
    return found


def commands(block: str) -> list[str]:
    """The commands of a shell block: comments dropped, `a && b` counted as two."""
    out = []
    for line in block.splitlines():
        line = line.split("  #")[0].strip()
        if line and not line.startswith("#"):
            out += [part.strip() for part in line.split(" && ")]
    return out


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines: move reference material into docs/"


def test_every_readme_command_runs_in_a_test():
    text = README.read_text(encoding="utf-8")
    adopt_block = set(readme_path())  # tests/onboard/test_adopt.py runs this block line by line
    seen = set()
    for heading, block in shell_blocks(text):
        for command in commands(block):
            seen.add(command)
            if heading == "Use it in your guide":
                assert command in adopt_block, f"{command!r}: test_adopt.readme_path() misses it"
                continue
            assert command in RUN_ELSEWHERE or command in RUN_HERE, (
                f"README command {command!r} (section {heading!r}) runs in no test: run it in "
                "tests/whole/test_docs.py, or name the test that does in RUN_ELSEWHERE"
            )
    assert adopt_block and adopt_block <= seen
    for command, (path, evidence) in RUN_ELSEWHERE.items():
        assert command in seen, f"RUN_ELSEWHERE names {command!r}, which the README no longer has"
        assert evidence in (ROOT / path).read_text(encoding="utf-8"), (command, path)
    assert RUN_HERE <= seen


def test_the_readme_commands_run(tmp_path, fake_github):
    """`watcher check-now` of "Set up and run": from a clone (its watch.toml), against the fake
    GitHub seeded like the real threads; it writes the page and status.json, as the README says."""
    real_threads(fake_github)
    load(fake_github, "sglang_code")  # every repository the default list reads exists
    shutil.copy(ROOT / "watch.toml", tmp_path / "watch.toml")
    exe = Path(sys.executable).parent / "watcher"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update(GITHUB_API_URL=fake_github.url, GITHUB_TOKEN="test-token")
    for command in sorted(RUN_HERE):
        argv = shlex.split(command)
        assert argv[0] == "watcher"
        out = subprocess.run(
            [str(exe), *argv[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, f"{command}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    assert (tmp_path / "docs" / "engines" / "SGLANG.md").is_file()
    assert (tmp_path / "site" / "status.json").is_file()


def test_the_manual_has_the_readme_five_minute_path():
    """docs/adopting.md repeats the README's block: the two must say the same lines."""
    readme = dict(shell_blocks(README.read_text(encoding="utf-8")))["Use it in your guide"]
    adopting = shell_blocks((ROOT / "docs" / "adopting.md").read_text(encoding="utf-8"))
    assert adopting and adopting[0][1] == readme


def cog_check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cogapp", "--check", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_command_reference_matches_help():
    out = cog_check(COMMANDS)
    assert out.returncode == 0, (
        "docs/commands.md differs from `watcher COMMAND --help`: run `cog -r docs/commands.md`\n"
        + out.stdout
        + out.stderr
    )


def test_cog_check_catches_a_stale_help_text(tmp_path):
    """The check above can fail: one changed word in the generated part is caught."""
    text = COMMANDS.read_text(encoding="utf-8")
    generated = text.split("]]] -->", 1)[1]
    assert "Show this message and exit." in generated
    stale = tmp_path / "commands.md"
    stale.write_text(text.replace("Show this message and exit.", "Show this message.", 1))
    assert cog_check(stale).returncode != 0


def test_command_table_names_every_command_and_only_real_options():
    text = COMMANDS.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `watcher ([a-z-]+)([^`]*)` \|", text, re.M)
    assert sorted(name for name, _ in rows) == sorted(cli.commands), "one table row per command"
    for name, usage in rows:
        command = cli.commands[name]
        options = {opt for param in command.params for opt in param.opts + param.secondary_opts}
        for option in re.findall(r"(?<![\w-])--?[a-z][a-z-]*", usage):
            assert option in options, f"docs/commands.md: `watcher {name}` has no {option}"


def test_the_manual_builds_strict(tmp_path):
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    # built away from the project's own site/ folder, somewhere git ignores
    assert config["site_dir"] == "build/docs"
    assert "build/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert config["theme"]["name"] == "material"
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "b")],
        cwd=ROOT,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    for page in ("index", "commands", "configuration", "smoke-runs", "security", "layout"):
        path = tmp_path / "b" / ("index.html" if page == "index" else f"{page}/index.html")
        assert path.is_file(), path
