"""The five-minute path of README "Use it in your guide", run line by line in a temporary guide
repository: the built wheel installed into a fresh virtual environment, `watcher init --github`,
`watcher doctor` against the fake GitHub, one cycle, the site built, the files committed.

Offline: the README's `pip install` line fetches the pinned git tag; here it installs the wheel
just built, with `--no-deps` into a fresh venv (no system site packages), and the dependencies
come from this test environment's site-packages through a .pth file. A .pth line only appends
its folder to sys.path, so this environment's editable watcher (itself a .pth hook) stays
inactive: `import watcher` must resolve to the wheel, and the test checks that it does.
(`--no-index --find-links` would need wheels of every dependency, which pip does not keep.)
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from kits.readme import readme_path

from watcher.fakes.scenarios import load, real_threads  # the seed of the real upstream threads

ROOT = Path(__file__).resolve().parents[2]


def run(argv, cwd: Path, env: dict, timeout: int = 300) -> subprocess.CompletedProcess:
    out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{argv}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


@pytest.mark.slow(seconds=20)
def test_the_five_minute_path(tmp_path, fake_github):
    steps = readme_path()
    from watcher.onboard.scaffold import install_problem, pinned_install

    # the line a guide really runs: the pinned default, in a form pip resolves to one version
    assert steps[0] == f'pip install "{pinned_install()}"'
    assert install_problem(pinned_install()) is None
    assert [s for s in steps if s.startswith("watcher ")] == [
        "watcher init --github .",
        "watcher doctor",
        "watcher check-now",
    ]

    # the wheel, built from this checkout
    dist = tmp_path / "dist"
    run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["-w", str(dist), str(ROOT)],
        cwd=tmp_path,
        env=dict(os.environ),
    )
    (wheel,) = dist.glob("upstream_blocker_watcher-*.whl")

    # a fresh venv with only the wheel; dependencies visible through a .pth (see the docstring)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)  # pip from ensurepip: offline
    py = env_dir / "bin" / "python"
    site = Path(
        run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            tmp_path,
            {},
        ).stdout.strip()
    )
    (site / "deps-from-the-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    guide = tmp_path / "my-guide"
    guide.mkdir()
    run(["git", "init", "-q", "-b", "main"], guide, dict(os.environ))
    real_threads(fake_github)
    load(fake_github, "sglang_code")  # every repository the default list reads exists
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "PYTHON", "VIRTUAL_ENV"))
    }
    env.update(
        PATH=f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}",
        GITHUB_API_URL=fake_github.url,  # as on GitHub Enterprise: wins over the config
        GIT_AUTHOR_NAME="maintainer",
        GIT_AUTHOR_EMAIL="m@example.com",
        GIT_COMMITTER_NAME="maintainer",
        GIT_COMMITTER_EMAIL="m@example.com",
    )
    remote = tmp_path / "origin.git"
    run(["git", "init", "-q", "--bare", str(remote)], tmp_path, env)
    run(["git", "remote", "add", "origin", str(remote)], guide, env)

    outputs = {}
    for step in steps:
        argv = shlex.split(step)
        if argv[:2] == ["pip", "install"]:  # offline: the wheel, not the git tag
            run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], tmp_path, env)
            where = run([str(py), "-c", "import watcher; print(watcher.__file__)"], tmp_path, env)
            assert where.stdout.startswith(str(site)), where.stdout  # the wheel, not the checkout
        elif argv[0] == "cd":
            continue  # the guide's folder is `guide`
        elif argv[0] == "export":
            name, _, _value = argv[1].partition("=")
            env[name] = "test-token"  # the fake's token for watcher-bot
        elif argv[:2] == ["git", "push"]:
            outputs[step] = run(argv + ["-u", "origin", "main"], guide, env)
        else:
            outputs[step] = run(argv, guide, env)

    doctor = outputs["watcher doctor"].stdout
    assert "accepted as watcher-bot" in doctor and doctor.endswith("all checks passed\n")
    assert "docs/engines/SGLANG.md" in outputs["watcher check-now"].stdout
    assert (guide / "site" / "index.html").is_file()
    assert (guide / "site" / "status.json").is_file()
    assert (guide / "docs" / "engines" / "SGLANG.md").is_file()
    committed = run(["git", "ls-tree", "-r", "--name-only", "origin/main"], guide, env).stdout
    for path in ("watch.toml", ".github/workflows/watch.yml", ".gitignore"):
        assert path in committed.splitlines(), committed
    assert "data/" not in committed and "site/" not in committed
