"""Recipes from compose files: the file read for port and GPUs, the run through a fake `docker
compose` that starts the fake engine, and the project taken down on every exit path."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kits.composekit import DIGEST, calls, compose_file, fake_compose_docker
from kits.smokekit import REPO, alive, engine_command, free_port, with_path, write_config

from watcher.config.composefile import path_labels, read_service, spec_method
from watcher.config.load import load_config
from watcher.core.errors import ConfigError
from watcher.smoke import compose as compose_mod
from watcher.smoke import sequence
from watcher.smoke.hardware import Gpu, GpuReading
from watcher.smoke.run import record_run, run_recipe
from watcher.store.db import Store
from watcher.store.smokerun import BASE_METRICS, PROBED_METRICS

ON_TARGET = GpuReading((Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),) * 2, "nvml")


def write_compose_config(tmp_path: Path, compose: str, *, extra: str = "", checks: str = "",
                         hardware: str = "", startup_timeout: float = 15.0,
                         env: str = "") -> Path:  # fmt: skip
    state = tmp_path / "docker-state"
    text = f"""
[watcher]
data_dir = "data"
site_dir = "site"

[[blocker]]
id = "docker-gpu-b"
title = "docker cannot see the GPU"
signatures = ["docker-gpu"]

[[recipe]]
id = "compose-tp2"
engine = "sglang"
model = "/models/fake"
compose = "{compose}"
service = "engine"
startup_timeout = {startup_timeout}
stop_timeout = 2
blockers = ["docker-gpu-b"]
{extra}
{hardware}

[recipe.checks]
prompt = "What is the capital of France? Answer with one word."
expect = "Paris"
{checks}

[recipe.env]
PYTHONPATH = "{REPO}"
FAKE_DOCKER_STATE = "{state}"
{env}
"""
    path = tmp_path / "watch.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def docker_env(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    fake_compose_docker(bin_dir)
    with_path(monkeypatch, bin_dir)
    state = tmp_path / "docker-state"
    monkeypatch.setenv("FAKE_DOCKER_STATE", str(state))
    return state


def _engine_pids(state: Path) -> list[int]:
    """Processes still running the fake engine for any project of this test."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"watcher.fakes.engine" in cmd and str(state).encode() in b"".join(
                Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            ):
                out.append(int(entry))
    return [p for p in out if alive(p)]


# ---------------------------------------------------------------- the file


def test_compose_file_gives_port_and_gpu_count(tmp_path):
    f = compose_file(tmp_path / "c.yml", 8123, gpus="count: 2")
    svc = read_service(f, "engine")
    assert (svc.host_port, svc.container_port, svc.gpu_count) == (8123, 8123, 2)
    assert svc.image == "fake/sglang:latest" and svc.unknown == ()


@pytest.mark.parametrize(
    ("ports", "gpus", "want"),
    [
        ('["127.0.0.1:${PORT:-8020}:30000/tcp"]', "count: 1", (8020, 30000, 1, False)),
        ('["30000"]', "device_ids: ['0', '1']", (None, 30000, 2, False)),
        ("[{target: 8000, published: 8001}]", "count: all", (8001, 8000, None, True)),
    ],
)
def test_compose_port_and_gpu_forms(tmp_path, ports, gpus, want):
    f = tmp_path / "c.yml"
    f.write_text(
        "services:\n  engine:\n    image: vllm/vllm-openai:v0.24.0\n"
        f"    ports: {ports}\n    deploy:\n      resources:\n        reservations:\n"
        f"          devices:\n            - driver: nvidia\n              {gpus}\n"
        "              capabilities: [gpu]\n"
    )
    svc = read_service(f, "engine", environ={})
    assert (svc.host_port, svc.container_port, svc.gpu_count, svc.gpus_all) == want
    if want[0] is None:
        assert any("docker compose port" in u for u in svc.unknown)
    if want[3]:
        assert any("all GPUs" in u for u in svc.unknown)


def test_compose_file_errors_name_the_problem(tmp_path):
    f = compose_file(tmp_path / "c.yml", 8123)
    with pytest.raises(ConfigError, match=r"has no service 'sglang' \(it has: engine\)"):
        read_service(f, "sglang")
    (tmp_path / "bad.yml").write_text("services: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        read_service(tmp_path / "bad.yml", "engine")
    with pytest.raises(ConfigError, match="cannot read compose file"):
        read_service(tmp_path / "gone.yml", "engine")


def test_path_layout_labels():
    p = Path("models/qwen3.6-27b/sglang/compose/dual/autoround-int4/eagle3-experimental.yml")
    assert path_labels(p) == {
        "model": "qwen3.6-27b",
        "engine_dir": "sglang",
        "topology": "dual",
        "quant": "autoround-int4",
        "variant": "eagle3-experimental",
    }
    assert spec_method("eagle3-experimental") == "eagle3"
    assert spec_method("mtp_n3") == "mtp"
    assert spec_method("baseline") == ""


def test_config_reads_the_compose_for_port_and_gpus(tmp_path):
    port = free_port()
    compose_file(tmp_path / "models" / "c.yml", port, gpus="count: 2")
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml"))
    r = cfg.recipes[0]
    assert (r.compose, r.service, r.host_port, r.port) == ("models/c.yml", "engine", port, port)
    assert r.hardware.gpu_count == 2  # from the device reservation
    assert r.command[:3] == ("docker", "compose", "-f")  # what the page shows a reader
    # the recipe's own [recipe.hardware] wins over the file
    hw = '[recipe.hardware]\ngpu_name = "RTX 3090"\ngpu_count = 1'
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml", hardware=hw))
    assert cfg.recipes[0].hardware.gpu_count == 1


@pytest.mark.parametrize(
    ("extra", "compose", "message"),
    [
        ('command = ["x"]', "models/c.yml", "either `command` or `compose`"),
        ("", "models/nope.yml", "key 'compose': cannot read compose file"),
    ],
)
def test_config_compose_errors(tmp_path, extra, compose, message):
    compose_file(tmp_path / "models" / "c.yml", free_port())
    with pytest.raises(ConfigError, match=message):
        load_config(write_compose_config(tmp_path, compose, extra=extra))


# ---------------------------------------------------------------- runs


def _run(tmp_path, *engine_args, checks="", reading=ON_TARGET, gpus="count: 2", **kw):
    port = free_port()
    compose_file(tmp_path / "models" / "c.yml", port, *engine_args, gpus=gpus)
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml", checks=checks, **kw))
    return cfg, run_recipe(cfg, cfg.recipes[0], reading=reading)


def _project(doc) -> str:
    return compose_mod.project_name(doc["run_id"])


def _assert_taken_down(state: Path, doc) -> None:
    project = _project(doc)
    argvs = calls(state)
    assert ["compose", "-p", project, "down", "-v", "--remove-orphans"] in argvs
    assert argvs[-1] == ["compose", "-p", project, "ps", "-a", "-q"]  # the leftover check
    assert not (state / f"{project}.pid").exists()
    assert _engine_pids(state) == []
    assert doc["teardown"]["leftovers"] == []


def test_compose_recipe_passes_and_is_taken_down(tmp_path, docker_env):
    cfg, doc = _run(tmp_path, "--ready-delay", "0.3", "--version", "0.5.9")
    assert doc["outcome"] == "passed", doc["reason"]
    project = _project(doc)
    compose = str(tmp_path / "models" / "c.yml")
    argvs = calls(docker_env)
    assert argvs[0] == ["compose", "-f", compose, "-p", project, "up", "-d", "engine"]
    assert ["compose", "-f", compose, "-p", project, "logs", "-f", "--no-color", "engine"] in argvs
    _assert_taken_down(docker_env, doc)
    assert doc["engine_version"] == "0.5.9"
    assert doc["image"] == {"ref": "fake/sglang:latest", "digest": DIGEST}
    assert doc["launch"]["compose_project"] == project
    log_text = Path(doc["log_path"]).read_text()
    assert "The server is fired up" in log_text  # `logs -f` streamed into the smoke log
    assert "docker compose -f" in log_text.splitlines()[1]


def test_a_compose_run_keeps_every_figure_an_argv_run_keeps(tmp_path, docker_env):
    """The compose launcher fills the same typed result as the argv one: the decode and TTFT
    spread, the samples, tokens per generation and the timing source all reach the record."""
    checks = "repeats = 3\ndecode_tokens = 32"
    cfg, doc = _run(tmp_path, "--ready-delay", "0.2", "--tokens-per-s", "100", checks=checks)
    assert doc["outcome"] == "passed", doc["reason"]
    m = doc["metrics"]
    assert set(m) == set(BASE_METRICS) | set(PROBED_METRICS)
    assert m["decode_tokens"] == 32 and m["timing_source"] == "client"
    assert len(m["decode_samples"]) == 3 and m["decode_spread"]["n"] == 3
    assert len(m["ttft_samples"]) == 3 and m["ttft_spread"]["n"] == 3
    assert m["decode_spread"]["min"] <= m["decode_tokens_per_s"] <= m["decode_spread"]["max"]
    # the argv path, same engine and checks: the same figures, none missing on either side
    (tmp_path / "argv").mkdir()
    argv_cfg = load_config(
        write_config(
            tmp_path / "argv",
            engine_command("--ready-delay", "0.2", "--tokens-per-s", "100"),
            checks=checks,
        )
    )
    argv_doc = run_recipe(argv_cfg, argv_cfg.recipes[0], reading=ON_TARGET)
    assert argv_doc["outcome"] == "passed", argv_doc["reason"]
    assert set(argv_doc["metrics"]) == set(m)
    assert [k for k, v in m.items() if v is None] == [
        k for k, v in argv_doc["metrics"].items() if v is None
    ]
    store = Store(cfg.db_path)
    try:
        record_run(store, doc)
        (row,) = store.smoke_runs()
    finally:
        store.close()
    assert row == doc and row["metrics"] == m  # stored as measured


def test_an_ephemeral_port_is_asked_of_docker_compose_port(tmp_path, docker_env):
    port = free_port()
    f = compose_file(tmp_path / "models" / "c.yml", port, "--ready-delay", "0.2")
    f.write_text(f.read_text().replace(f'"{port}:{port}"', f'"{port}"'))
    extra = f"port = {port}"
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml", extra=extra))
    assert cfg.recipes[0].host_port is None
    doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert doc["outcome"] == "passed", doc["reason"]
    assert ["compose", "-f", str(f), "-p", _project(doc), "port", "engine", str(port)] in calls(
        docker_env
    )
    assert doc["launch"]["port"] == port


def test_failed_up_is_still_taken_down_and_classified(tmp_path, docker_env):
    cfg, doc = _run(tmp_path, "--mode", "hang", env='FAKE_COMPOSE_UP_FAIL = "1"')
    assert doc["outcome"] == "failed"
    assert "`docker compose up -d engine` exited with code 1" in doc["reason"]
    assert doc["signature"] == "docker-gpu"
    assert doc["blockers_reproduced"] == ["docker-gpu-b"]
    _assert_taken_down(docker_env, doc)  # the half-started project is gone too


def test_crashed_service_is_taken_down(tmp_path, docker_env):
    cfg, doc = _run(tmp_path, "--mode", "crash", "--log-text", "boom: cuda error")
    assert doc["outcome"] == "failed"
    assert doc["reason"].startswith("its container stopped before becoming ready"), doc["reason"]
    assert "boom: cuda error" in Path(doc["log_path"]).read_text()
    _assert_taken_down(docker_env, doc)


def test_a_crash_looping_service_dies_with_its_exit_code_not_a_hang(tmp_path, docker_env):
    # Issue 32 L10: with `restart: on-failure` the container comes back after each crash, so
    # `logs -f` never ends; the run once waited out startup_timeout and read as a hang.
    port = free_port()
    compose_file(tmp_path / "models" / "c.yml", port, "--mode", "crash", "--exit-code", "3",
                 "--log-text", "boom: cuda error", restart="on-failure")  # fmt: skip
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml", startup_timeout=60))
    began = time.monotonic()
    doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert time.monotonic() - began < 30  # far from the 60 s a hang would take
    assert doc["outcome"] == "failed" and doc["signature"] != "hang", doc["reason"]
    # docker shows the exit code while the container waits to restart; once it runs again the
    # code is gone (State.ExitCode resets), so either is right, and neither reads as a hang
    said = "exited with code 3" if doc["exit_code"] == 3 else "crashed"
    assert doc["exit_code"] in (3, None)
    assert doc["reason"].startswith(f"its container {said}, and its restart policy "), doc["reason"]
    assert "boom: cuda error" in Path(doc["log_path"]).read_text()
    _assert_taken_down(docker_env, doc)


def test_a_healthy_service_with_a_restart_policy_passes(tmp_path, docker_env):
    port = free_port()
    compose_file(tmp_path / "models" / "c.yml", port, "--ready-delay", "1.5",
                 restart="unless-stopped")  # fmt: skip
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml"))
    doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert doc["outcome"] == "passed", doc["reason"]
    assert any(c[:1] == ["inspect"] for c in calls(docker_env))  # it was asked, and said no
    _assert_taken_down(docker_env, doc)


def test_hung_service_times_out_and_is_taken_down(tmp_path, docker_env):
    cfg, doc = _run(tmp_path, "--mode", "hang", startup_timeout=1.5)
    assert doc["outcome"] == "timeout"
    _assert_taken_down(docker_env, doc)


def test_runner_error_still_takes_the_project_down(tmp_path, docker_env, monkeypatch):
    def broken(*a, **kw):
        raise RuntimeError("probe exploded")

    monkeypatch.setattr(sequence, "probe", broken)  # the probing both launchers share
    cfg, doc = _run(tmp_path, "--ready-delay", "0.2")
    assert doc["outcome"] == "error"
    assert "runner error: RuntimeError: probe exploded" in doc["reason"]
    _assert_taken_down(docker_env, doc)


def test_sigterm_to_watcher_takes_the_project_down(tmp_path, docker_env):
    port = free_port()
    compose_file(tmp_path / "models" / "c.yml", port, "--mode", "hang")
    cfg_path = write_compose_config(tmp_path, "models/c.yml", startup_timeout=120)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    watcher = subprocess.Popen(
        [sys.executable, "-m", "watcher", "smoke", "compose-tp2", "--config", str(cfg_path)]
        + ["--any-hardware", "--run-id", "r-term"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    project = compose_mod.project_name("r-term")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(c[-3:-1] == ["-f", "--no-color"] or
                                                   "logs" in c for c in calls(docker_env)):  # fmt: skip
        time.sleep(0.05)
    assert _engine_pids(docker_env), "the fake engine never started"
    watcher.send_signal(signal.SIGTERM)
    watcher.wait(timeout=30)
    assert ["compose", "-p", project, "down", "-v", "--remove-orphans"] in calls(docker_env)
    assert not (docker_env / f"{project}.pid").exists()
    assert _engine_pids(docker_env) == []
    store = Store(load_config(cfg_path).db_path)
    try:
        runs = store.smoke_runs()
    finally:
        store.close()
    assert runs and runs[0]["run_id"] == "r-term"


def test_the_next_start_takes_down_a_project_a_killed_watcher_left(tmp_path, docker_env):
    from watcher.smoke.run import recover_interrupted

    port = free_port()
    compose_file(tmp_path / "models" / "c.yml", port, "--mode", "hang")
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml"))
    project = compose_mod.project_name("r-dead")
    # the project a dead watcher started, and the `started` row it left behind
    started = subprocess.run(
        ["docker", "compose", "-f", str(tmp_path / "models" / "c.yml"), "-p", project]
        + ["up", "-d", "engine"],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        check=True,
    )
    assert started.returncode == 0 and (docker_env / f"{project}.pid").exists()
    store = Store(cfg.db_path)
    try:
        store.add_smoke_run(
            {
                "run_id": "r-dead",
                "recipe": "compose-tp2",
                "outcome": "started",
                "hardware": {"gpus": [], "matches_target": False},
                "started_at": "2026-12-01T10:00:00Z",
                "launch": {"container": None, "pid": None, "compose_project": project},
                "watcher": {"pid": 1, "host": os.uname().nodename, "start": "no-such-start"},
            }
        )
        (run,) = recover_interrupted(cfg, store)
    finally:
        store.close()
    assert run["outcome"] == "interrupted"
    assert f"compose project {project} taken down" in run["reason"]
    assert ["compose", "-p", project, "down", "-v", "--remove-orphans"] in calls(docker_env)
    assert not (docker_env / f"{project}.pid").exists()


# ---------------------------------------------------------------- refused before `up`


def _needs_model_dir(path: Path) -> None:
    path.write_text(
        path.read_text().replace(
            "    ports:",
            '    volumes:\n      - "${MODEL_DIR:?MODEL_DIR is required}:/m:ro"\n    ports:',
        )
    )


def test_a_required_variable_unset_is_a_setup_error_before_up(tmp_path, docker_env, monkeypatch):
    """`${MODEL_DIR:?…}` with MODEL_DIR not in the run's environment: refused before `docker
    compose up` (no pull, no model load, no GPU), as a setup error naming the variable — not an
    engine failure, and no blocker's evidence. Set on the host but not passed, it is still
    missing (the run's environment drops it); named in pass_env, the run goes ahead."""
    port = free_port()
    f = compose_file(tmp_path / "models" / "c.yml", port, "--ready-delay", "0.2")
    _needs_model_dir(f)
    monkeypatch.delenv("MODEL_DIR", raising=False)
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml"))
    for host_value in (None, str(tmp_path)):
        if host_value:
            monkeypatch.setenv("MODEL_DIR", host_value)
        doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
        assert doc["outcome"] == "error", doc["reason"]
        assert doc["reason"].startswith("not launched (setup): models/c.yml requires MODEL_DIR")
        assert "'MODEL_DIR is required'" in doc["reason"] and "pass_env" in doc["reason"]
        assert doc["signature"] is None and doc["blockers_reproduced"] == []
        assert calls(docker_env) == []  # no `up`, no `down`: docker was never asked anything
        assert _engine_pids(docker_env) == []
    cfg = load_config(
        write_compose_config(tmp_path, "models/c.yml", extra='pass_env = ["MODEL_DIR"]')
    )
    doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert doc["outcome"] == "passed", doc["reason"]
    assert calls(docker_env)[0][-3:] == ["up", "-d", "engine"]
    _assert_taken_down(docker_env, doc)


def test_no_port_known_is_a_setup_error_before_up(tmp_path, docker_env):
    port = free_port()
    f = compose_file(tmp_path / "models" / "c.yml", port)
    f.write_text(f.read_text().replace(f'    ports:\n      - "{port}:{port}"\n', ""))
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml"))
    assert cfg.recipes[0].host_port is None
    doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert doc["outcome"] == "error" and doc["signature"] is None
    assert doc["reason"] == (
        "not launched (setup): models/c.yml service 'engine' publishes no port and the recipe"
        " gives no host_port; give the recipe `host_port` (and `port`, the container's)"
    )
    assert calls(docker_env) == []


def test_the_run_reads_the_compose_with_its_own_environment(tmp_path, docker_env, monkeypatch):
    """The published port and the image are what `docker compose` will make of the file under
    the run's environment and the `.env` beside it, recorded on the run."""
    port = free_port()
    f = compose_file(tmp_path / "models" / "c.yml", port, "--ready-delay", "0.2")
    text = f.read_text().replace(
        f'"{port}:{port}"', f'"${{BIND_HOST:-0.0.0.0}}:${{ESTATE_PORT:-${{PORT:-1}}}}:{port}"'
    )
    f.write_text(text.replace("fake/sglang:latest", "fake/sglang:${TAG:-v0}"))
    (f.parent / ".env").write_text(f"PORT={port}\nTAG=v1\n")
    monkeypatch.delenv("PORT", raising=False)
    monkeypatch.delenv("ESTATE_PORT", raising=False)
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml", env='TAG = "v2"'))
    assert cfg.recipes[0].host_port == port
    doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert doc["outcome"] == "passed", doc["reason"]
    assert doc["launch"]["port"] == port
    assert doc["image"]["ref"] == "fake/sglang:v2"  # the recipe's env wins over .env


def test_an_image_left_to_the_launcher_is_named_before_up(tmp_path, docker_env):
    """`image: …:nightly-${VLLM_NIGHTLY_SHA}` with nothing setting it would pull a tag that does
    not exist: refused before `up`; named in [recipe.env], the run records that build."""
    port = free_port()
    f = compose_file(tmp_path / "models" / "c.yml", port, "--ready-delay", "0.2")
    f.write_text(f.read_text().replace("fake/sglang:latest", "fake/sglang:nightly-${NIGHTLY_SHA}"))
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml"))
    doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert doc["outcome"] == "error" and calls(docker_env) == []
    assert doc["reason"] == (
        "not launched (setup): the image 'fake/sglang:nightly-' of models/c.yml leaves"
        " NIGHTLY_SHA unset (the guide's launcher fills it); name the build in [recipe.env]"
    )
    cfg = load_config(
        write_compose_config(tmp_path, "models/c.yml", env='NIGHTLY_SHA = "e47c98ef"')
    )
    doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert doc["outcome"] == "passed", doc["reason"]
    assert doc["image"]["ref"] == "fake/sglang:nightly-e47c98ef"


def test_a_malformed_variable_fails_at_load_naming_the_file(tmp_path):
    """What `docker compose` itself would refuse (`${TAG/x/y}`) fails `validate`, not the run."""
    f = compose_file(tmp_path / "models" / "c.yml", free_port())
    f.write_text(f.read_text().replace("fake/sglang:latest", "fake/sglang:${TAG/x/y}"))
    with pytest.raises(ConfigError) as e:
        load_config(write_compose_config(tmp_path, "models/c.yml"))
    message = str(e.value)
    assert "[recipe[0]] key 'compose'" in message and str(f) in message
    assert "invalid interpolation format" in message and "${TAG/x/y}" in message


def test_the_env_beside_the_compose_is_part_of_what_a_run_tested(tmp_path):
    from watcher.config.model import recipe_digest

    compose_file(tmp_path / "models" / "c.yml", free_port())
    cfg = load_config(write_compose_config(tmp_path, "models/c.yml"))
    before = recipe_digest(cfg.recipes[0], cfg.base_dir)
    (tmp_path / "models" / ".env").write_text("CTX=65536\n")
    with_env = recipe_digest(cfg.recipes[0], cfg.base_dir)
    (tmp_path / "models" / ".env").write_text("CTX=131072\n")
    assert len({before, with_env, recipe_digest(cfg.recipes[0], cfg.base_dir)}) == 3
