"""`watcher doctor`: against the fake GitHub on loopback and fake nvidia-smi/docker on PATH."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from kits.smokekit import A10, RTX3090, fake_nvidia_smi, free_port, with_path, write_exe

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
number = 1

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

NOTIFY = '\n[notify]\nenabled = true\nrepo = "o/guide"\nissue = 1\n'


def config(tmp_path: Path, url: str, extra: str = "") -> Path:
    path = tmp_path / "watch.toml"
    path.write_text(BASE.format(url=url) + extra, encoding="utf-8")
    return path


def doctor(path: Path, *args: str, token: str | None = "test-token"):
    env = {"GITHUB_TOKEN": token or "", "GITHUB_API_URL": None}
    return CliRunner().invoke(cli, ["doctor", "--config", str(path), *args], env=env)


def lines(result) -> dict[str, str]:
    """check name -> its line (with the fix line, if any)."""
    out = {}
    for block in result.output.split("\n"):
        if block.startswith(("ok   ", "FAIL ")):
            name = block[5:].split(":", 1)[0]
            out[name] = block
        elif block.startswith("     fix: "):
            out[name] += "\n" + block
    return out


def test_all_pass_exits_0_and_json_says_so(tmp_path, fake_github):
    path = config(tmp_path, fake_github.url)
    result = doctor(path)
    assert result.exit_code == 0, result.output
    got = lines(result)
    assert list(got) == [
        "python",
        "config",
        "github reachable",
        "token",
        "site folder",
        "page folders",
        "data folder",
    ]
    assert "accepted as watcher-bot; rate limit" in got["token"]
    assert result.output.endswith("all checks passed\n")
    doc = json.loads(doctor(path, "--json").output)
    assert doc["ok"] is True and all(c["ok"] and c["fix"] == "" for c in doc["checks"])


def test_a_rejected_token_fails_with_the_fix(tmp_path, fake_github):
    result = doctor(config(tmp_path, fake_github.url), token="ghp_revoked")
    assert result.exit_code == 1
    token = lines(result)["token"]
    assert token.startswith("FAIL token: GitHub rejected the token (HTTP 401")
    assert "fix: make a new token" in token
    assert "1 of 7 checks failed" in result.output


def test_no_token_and_a_spent_rate_limit_fail(tmp_path, fake_github):
    path = config(tmp_path, fake_github.url)
    result = doctor(path, token=None)
    assert result.exit_code == 1 and "GITHUB_TOKEN is not set" in lines(result)["token"]
    fake_github.rate_remaining = 0
    result = doctor(path)
    assert result.exit_code == 1
    assert "but its rate limit is spent (0 of 5000)" in lines(result)["token"]
    assert "fix: wait until" in lines(result)["token"]


def test_github_unreachable(tmp_path):
    with socket.socket() as s:  # a port nobody listens on: connection refused at once
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    result = doctor(config(tmp_path, url))
    assert result.exit_code == 1
    reach = lines(result)["github reachable"]
    assert reach.startswith(f"FAIL github reachable: {url}: connection failed")
    assert "fix: check the network" in reach


def test_an_invalid_or_missing_config_stops_after_the_config_line(tmp_path):
    (tmp_path / "watch.toml").write_text("[watcher]\nintervall = '30m'\n")
    result = doctor(tmp_path / "watch.toml")
    assert result.exit_code == 1 and list(lines(result)) == ["python", "config"]
    assert "intervall" in lines(result)["config"] and "Traceback" not in result.output
    missing = doctor(tmp_path / "nowhere" / "watch.toml")
    assert missing.exit_code == 1
    assert f"looked in {tmp_path / 'nowhere'}" in lines(missing)["config"]


def test_folders_that_cannot_hold_the_site_or_the_data(tmp_path, fake_github):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "notes.txt").write_text("mine")
    (tmp_path / "data").write_text("a file where the data folder should be")
    result = doctor(config(tmp_path, fake_github.url))
    assert result.exit_code == 1
    got = lines(result)
    assert "holds files that are not a watcher site" in got["site folder"]
    assert got["data folder"].startswith("FAIL data folder:")
    assert "fix: move the file" in got["data folder"]  # a file in the way: no chmod helps


def test_notify_issue_must_exist(tmp_path, fake_github):
    path = config(tmp_path, fake_github.url, NOTIFY)
    result = doctor(path)
    assert result.exit_code == 1
    assert "cannot read it (HTTP 404" in lines(result)["notify issue o/guide#1"]
    fake_github.add_pull("o/guide", 1, title="not the tracking issue")
    result = doctor(path)
    assert result.exit_code == 1
    assert "is a pull request" in lines(result)["notify issue o/guide#1"]


def test_notify_permission_comes_from_the_api(tmp_path, fake_github):
    path = config(tmp_path, fake_github.url, NOTIFY)
    fake_github.add_issue("o/guide", 1, title="SGLang tracking", state="open")
    fake_github.set_permission("o/guide", "watcher-bot", "write")
    result = doctor(path)
    assert result.exit_code == 0, result.output
    assert "watcher-bot may comment (write)" in lines(result)["notify issue o/guide#1"]
    fake_github.set_permission("o/guide", "watcher-bot", "none")
    result = doctor(path)
    assert result.exit_code == 1
    line = lines(result)["notify issue o/guide#1"]
    assert "watcher-bot cannot comment: permission 'none'" in line
    assert "fix: give watcher-bot write access to o/guide" in line


# ---------------------------------------------------------------- --gpu


def fake_docker_info(bin_dir: Path, runtimes: str | None, error: str = "") -> None:
    """A docker whose `info --format {{json .Runtimes}}` prints `runtimes` (None: fails)."""
    if runtimes is None:
        body = f"import sys\nprint({error!r}, file=sys.stderr)\nsys.exit(1)\n"
    else:
        body = f"import sys\nassert sys.argv[1] == 'info'\nprint({runtimes!r})\n"
    write_exe(bin_dir / "docker", f"#!{sys.executable}\n{body}")


GPU_RECIPE = """
[[recipe]]
id = "docker-tp1"
engine = "sglang"
model = "/models/qwen"
port = {port}
command = ["docker", "run", "--gpus", "all", "-v", "{models}:/models", "-p", "{{port}}:30000",
           "lmsysorg/sglang", "python3", "-m", "sglang.launch_server", "--model-path", "{{model}}"]
[recipe.hardware]
gpu_name = "RTX 3090"
"""


@pytest.fixture
def gpu_host(tmp_path, monkeypatch, fake_github):
    bin_dir = tmp_path / "bin"
    fake_nvidia_smi(bin_dir, [RTX3090])
    fake_docker_info(
        bin_dir, '{"nvidia":{"path":"nvidia-container-runtime"},"runc":{"path":"runc"}}'
    )
    with_path(monkeypatch, bin_dir)
    monkeypatch.setenv("WATCHER_GPU_SOURCE", "nvidia-smi")
    models = tmp_path / "models"
    (models / "qwen").mkdir(parents=True)
    port = free_port()
    path = config(tmp_path, fake_github.url, GPU_RECIPE.format(port=port, models=models))
    return path, bin_dir, models, port


def test_gpu_host_ready(gpu_host):
    path, _bin, models, port = gpu_host
    result = doctor(path, "--gpu")
    assert result.exit_code == 0, result.output
    got = lines(result)
    assert "nvidia-smi: target hardware" in got["gpu 1× RTX 3090"]
    assert got["docker"] == "ok   docker: runs, with the NVIDIA runtime"
    assert f"{models / 'qwen'} exists" in got["model of docker-tp1"]
    assert got[f"port {port} of docker-tp1"].endswith(": free")
    assert "MiB free for logs" in got["disk"]


def test_gpu_host_problems_each_with_a_fix(gpu_host):
    path, bin_dir, models, port = gpu_host
    fake_nvidia_smi(bin_dir, [A10])
    fake_docker_info(bin_dir, '{"runc":{"path":"runc"}}')
    (models / "qwen").rmdir()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        result = doctor(path, "--gpu")
    assert result.exit_code == 1
    got = lines(result)
    assert "not the target hardware" in got["gpu 1× RTX 3090"] and "fix: " in got["gpu 1× RTX 3090"]
    assert "no NVIDIA runtime" in got["docker"] and "nvidia-ctk runtime configure" in got["docker"]
    assert "does not exist" in got["model of docker-tp1"]
    assert "in use" in got[f"port {port} of docker-tp1"]
    assert "4 of 12 checks failed" in result.output


def test_docker_permission_denied_points_at_the_docker_group(gpu_host):
    path, bin_dir, _models, _port = gpu_host
    fake_docker_info(
        bin_dir,
        None,
        "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock",
    )
    fake_nvidia_smi(bin_dir, None)
    result = doctor(path, "--gpu")
    got = lines(result)
    assert "docker group" in got["docker"]
    assert (
        "no GPU found" in got["gpu 1× RTX 3090"]
        and "install the NVIDIA driver" in got["gpu 1× RTX 3090"]
    )


def test_the_workflow_must_grant_what_the_config_uses(tmp_path, fake_github):
    """A config switched to comments after `init --github` needs `issues: write` in watch.yml."""
    from watcher.config.load import load_config
    from watcher.onboard.scaffold import watch_workflow

    path = config(tmp_path, fake_github.url)
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "watch.yml").write_text(watch_workflow(load_config(path), tmp_path))
    assert lines(doctor(path))["workflow permissions"].startswith("ok   workflow permissions")
    path.write_text(path.read_text() + NOTIFY)
    fake_github.add_issue("o/guide", 1, title="tracking", state="open")
    result = doctor(path)
    line = lines(result)["workflow permissions"]
    assert "lacks issues: write (for [notify] enabled)" in line
    assert "fix: add `issues: write` under `permissions:`" in line
    (workflows / "watch.yml").write_text(watch_workflow(load_config(path), tmp_path))
    assert "issues: write" in lines(doctor(path))["workflow permissions"]


def test_install_source_must_name_one_resolvable_version(tmp_path):
    from watcher.onboard.doctor import check_install
    from watcher.onboard.scaffold import install_problem, pinned_install

    assert install_problem(pinned_install()) is None
    assert install_problem("upstream-blocker-watcher==0.1.0") is None
    assert install_problem("x @ git+https://github.com/o/r@0123abcd") is None
    assert "branch" in install_problem("x @ git+https://github.com/o/r@main")
    assert "no @tag" in install_problem("x @ git+https://github.com/o/r")
    assert "not pinned" in install_problem("watcher")
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "watch.yml").write_text(f'run: python -m pip install "{pinned_install()}"\n')
    assert check_install(folder).ok
    (folder / "smoke.yml").write_text('run: python -m pip install "watcher"\n')
    bad = check_install(folder)
    assert not bad.ok and "different watchers" in bad.detail
    (folder / "smoke.yml").unlink()
    (folder / "watch.yml").write_text('run: pip install "x @ git+https://github.com/o/r@main"\n')
    bad = check_install(folder)
    assert not bad.ok and "branch" in bad.detail and "--install" in bad.fix


def test_init_refuses_an_unpinned_install(tmp_path):
    from click.testing import CliRunner

    from watcher.cli import cli

    r = CliRunner().invoke(cli, ["init", "--github", "--install", "watcher", str(tmp_path)])
    assert r.exit_code == 2 and "not pinned" in r.output
    assert not (tmp_path / ".github").exists()


def test_gpu_host_quantization_that_the_checkpoint_contradicts(gpu_host):
    path, _bin, models, _port = gpu_host
    (models / "qwen" / "config.json").write_text(
        '{"quantization_config": {"quant_method": "auto-round", "bits": 4}}'
    )
    text = path.read_text().replace(
        '"--model-path", "{model}"]', '"--model-path", "{model}", "--quantization", "awq_marlin"]'
    )
    path.write_text(text)
    result = doctor(path, "--gpu")
    assert result.exit_code == 1
    line = lines(result)["quantization of docker-tp1"]
    assert "--quantization awq_marlin" in line and "quant_method = auto-round" in line
    assert "fix: drop --quantization from recipe docker-tp1" in line
