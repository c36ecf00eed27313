"""The smoke runner against the fake engine: outcomes, signatures, metrics, nothing left behind."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest
from click.testing import CliRunner
from kits.smokekit import (
    REPO,
    RTX3090,
    alive,
    engine_command,
    fake_docker,
    fake_nvidia_smi,
    free_port,
    group_members,
    with_path,
    write_config,
)
from test_classify import FAMILIES, MARLIN

from watcher.cli import cli
from watcher.config.load import load_config
from watcher.core.errors import ConfigError
from watcher.loop.schedule import locked_cycle
from watcher.smoke import log as smokelog
from watcher.smoke import run as smoke
from watcher.smoke.hardware import Gpu, GpuReading
from watcher.smoke.launch import build_argv, engine_env
from watcher.smoke.probes import accept_from_metrics, parse_metrics
from watcher.smoke.run import run_recipe
from watcher.store.db import Store
from watcher.store.smokerun import BASE_METRICS, SmokeResult

ON_TARGET = GpuReading((Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),), "nvml")
OFF_TARGET = GpuReading((), "none", "no GPU")


def run(cfg_path, reading=ON_TARGET, **kw):
    cfg = load_config(cfg_path)
    return cfg, run_recipe(cfg, cfg.recipes[0], reading=reading, **kw)


def pids_from(path):
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def test_ready_engine_passes_with_metrics(tmp_path):
    cfg_path = write_config(
        tmp_path,
        engine_command("--ready-delay", "0.5", "--accept-length", "2.4", "--version", "0.5.9"),
        spec_decode=True,
        checks="min_decode_tokens_per_s = 5.0\nmin_accept_length = 1.5",
    )
    cfg, doc = run(cfg_path)
    assert doc["outcome"] == "passed", doc["reason"]
    assert doc["stage_reached"] == "passed"
    assert doc["signature"] is None and doc["blockers_reproduced"] == []
    assert doc["hardware"]["matches_target"] is True
    assert doc["engine_version"] == "0.5.9"
    m = doc["metrics"]
    assert 0.4 < m["startup_s"] < 10
    assert 0 < m["ttft_s"] < 5
    assert m["decode_tokens_per_s"] > 5
    assert m["accept_length"] == 2.4
    assert doc["teardown"]["leftovers"] == [] and doc["teardown"]["killed"] is False
    log = open(doc["log_path"]).read()
    assert "fired up and ready to roll" in log and "GET /v1/models" in log
    assert doc["log_path"] == str(cfg.data_dir / "smoke" / f"{doc['run_id']}.log")
    assert set(doc) >= {
        "run_id",
        "recipe",
        "outcome",
        "signature",
        "blockers_reproduced",
        "reason",
        "hardware",
        "engine_version",
        "metrics",
        "log_path",
        "started_at",
        "finished_at",
        "stage_reached",
        "excerpt",
    }


CRASH_LOGS = {
    **FAMILIES,
    "marlin-tile-n": "\n".join(
        [
            "[2026-11-30 12:00:01 TP0] Load weight begin. avail mem=23.12 GB",
            "Traceback (most recent call last):",
            '  File "marlin_utils.py", line 120, in check_marlin_supports_shape',
            MARLIN[0],
        ]
    ),
}


@pytest.mark.parametrize("family", sorted(CRASH_LOGS))
def test_crash_is_classified(tmp_path, family):
    log_file = tmp_path / "failure.log"
    log_file.write_text(CRASH_LOGS[family] + "\n")
    cfg_path = write_config(
        tmp_path, engine_command("--mode", "crash", "--log-file", str(log_file), "--exit-code", "3")
    )
    cfg, doc = run(cfg_path)
    assert doc["outcome"] == "failed"
    assert doc["signature"] == family
    assert doc["stage_reached"] == "launch"
    assert doc["exit_code"] == 3
    assert "exited with code 3 before becoming ready" in doc["reason"]
    assert CRASH_LOGS[family].splitlines()[-1][:60] in doc["excerpt"]
    expected = {"marlin-tile-n": ["marlin-pad"], "spec-decode-hybrid": ["deltanet-rollback"]}
    assert doc["blockers_reproduced"] == expected.get(family, [])
    if family == "mamba-extra-buffer":
        assert "config problem in the recipe, not an upstream blocker" in doc["reason"]


def test_crash_without_signature_keeps_the_tail_and_redacts_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "s3cr3t-token-value")
    text = (
        "loading\nusing HF_TOKEN hf_abcdefghijklmnopqrstuvwxyz0123\nsaw s3cr3t-token-value\nbye\n"
    )
    cfg_path = write_config(tmp_path, engine_command("--mode", "crash", "--log-text", text))
    _, doc = run(cfg_path)
    assert doc["outcome"] == "failed" and doc["signature"] is None
    assert "No known failure signature" in doc["reason"]
    assert "bye" in doc["excerpt"] and "[redacted]" in doc["excerpt"]
    assert "hf_abc" not in doc["excerpt"] and "s3cr3t" not in doc["excerpt"]
    # the log file watcher writes is redacted too, not only the excerpt
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "watch.toml"]
    assert any(p.suffix == ".log" for p in written)
    for path in written:
        data = path.read_bytes()
        assert b"hf_abcdefghij" not in data and b"s3cr3t-token-value" not in data, path


def test_hang_times_out_as_hang(tmp_path):
    cfg_path = write_config(
        tmp_path, engine_command("--mode", "hang", "--children", "1"), startup_timeout=1.5
    )
    _, doc = run(cfg_path)
    assert doc["outcome"] == "timeout"
    assert doc["signature"] == "hang"
    assert doc["stage_reached"] == "launch"
    assert "neither ready nor dead" in doc["reason"]
    assert doc["teardown"]["leftovers"] == []


def test_fatal_line_then_hang_stops_early_with_its_signature(tmp_path):
    """A scheduler that died while the server process waits forever: no 20-s wait, named failure."""
    line = "RuntimeError: size_n = 96 is not divisible by tile_n_size = 64"
    cfg_path = write_config(
        tmp_path, engine_command("--mode", "hang", "--log-text", line), startup_timeout=20.0
    )
    started = time.monotonic()
    _, doc = run(cfg_path)
    took = time.monotonic() - started
    assert doc["outcome"] == "failed" and doc["signature"] == "marlin-tile-n"
    assert doc["blockers_reproduced"] == ["marlin-pad"]
    assert "stopped early" in doc["reason"]
    assert took < 18, took  # did not sit out the 20 s startup timeout (grace: a quarter of it)
    assert doc["teardown"]["leftovers"] == []


def test_children_ignoring_sigterm_are_killed_and_nothing_is_left(tmp_path):
    pid_file = tmp_path / "pids"
    cfg_path = write_config(
        tmp_path,
        engine_command(
            "--mode", "ignore-term", "--children", "3", "--ready-delay", "0.3",
            "--pid-file", str(pid_file),
        ),
        stop_timeout=0.5,
    )  # fmt: skip
    _, doc = run(cfg_path)
    pids = pids_from(pid_file)
    assert len(pids) == 4  # the engine and its three children
    assert doc["outcome"] == "passed", doc["reason"]
    assert doc["teardown"]["killed"] is True
    assert doc["teardown"]["leftovers"] == []
    assert "Needed SIGKILL" in doc["reason"]
    assert [p for p in pids if alive(p)] == []
    assert group_members(pids[0]) == []  # the engine's whole process group is gone, too


def test_health_200_is_not_ready_until_a_generation_answers(tmp_path):
    """vLLM's CPU build answers /health 200, then fails the first request and exits.

    The run ends when the engine dies, not by a clock: with the default 10 s startup_timeout a
    known failure in the log ended the wait as `fatal` after startup_timeout / 4 = 2.5 s when a
    loaded machine had not yet seen the engine exit (issue 32); a 60 s timeout leaves 15 s."""
    cfg_path = write_config(
        tmp_path,
        engine_command("--ready-delay", "0.2", "--generation-fails"),
        engine="vllm",
        startup_timeout=60,
    )
    _, doc = run(cfg_path)
    assert doc["outcome"] == "failed" and doc["stage_reached"] == "launch"
    assert "its ready path answered, but a first generation answered HTTP 500" in doc["reason"]
    assert doc["signature"] == "unsupported-attention"
    assert doc["teardown"]["leftovers"] == []


def test_decode_rate_counts_usage_tokens_over_the_whole_stream(tmp_path):
    """Bursts of tokens per chunk (as real engines send) must not inflate decode tokens/s."""
    cfg_path = write_config(
        tmp_path,
        engine_command("--ready-delay", "0.2", "--tokens-per-s", "100", "--burst", "8"),
        checks="repeats = 3\ndecode_tokens = 32",
    )
    _, doc = run(cfg_path)
    assert doc["outcome"] == "passed", doc["reason"]
    m = doc["metrics"]
    assert m["decode_tokens"] == 32 and m["timing_source"] == "client"
    assert 40 < m["decode_tokens_per_s"] <= 110  # 100 tok/s, never the chunk-gap explosion
    assert len(m["decode_samples"]) == 3 and m["decode_spread"]["n"] == 3
    assert m["decode_spread"]["min"] <= m["decode_tokens_per_s"] <= m["decode_spread"]["max"]


def test_the_typed_result_reads_back_as_the_record_it_wrote(tmp_path):
    """The store keeps the record; the typed result reads it back and writes the same document
    (a run that never got probed carries only the four base figures; an old record reads)."""
    cfg_path = write_config(
        tmp_path, engine_command("--ready-delay", "0.2"), checks="repeats = 2\ndecode_tokens = 16"
    )
    _, doc = run(cfg_path)
    assert doc["outcome"] == "passed", doc["reason"]
    res = SmokeResult.from_record(doc)
    assert res.metrics.probed and len(res.metrics.decode_samples) == 2
    assert res.to_record() == doc
    assert json.dumps(res.to_record(), sort_keys=True) == json.dumps(doc, sort_keys=True)
    unprobed = smoke.base_doc(load_config(cfg_path).recipes[0], "r-x").to_record()
    assert list(unprobed["metrics"]) == list(BASE_METRICS)
    assert "exit_code" not in unprobed and "launch" not in unprobed
    old = SmokeResult.from_record({"run_id": "r-old", "recipe": "x", "metrics": "?", "bisect": 1})
    assert old.outcome is None and old.metrics.decode_tokens_per_s is None
    assert old.extra == {"bisect": 1} and not old.matches_target


def test_decode_rate_and_ttft_come_from_the_engines_own_clocks_when_it_has_them(tmp_path):
    """vLLM times each request's decode itself; a client on a busy host may read a whole
    stream at once (seen: 129,924 tok/s from one repeat on a loaded 2-core machine)."""
    cfg_path = write_config(
        tmp_path,
        engine_command(
            "--ready-delay", "0.2", "--metrics-style", "vllm", "--tokens-per-s", "100",
            "--burst", "8", "--ttft", "0.05",
        ),
        engine="vllm",
        checks="repeats = 2\ndecode_tokens = 32",
    )  # fmt: skip
    _, doc = run(cfg_path)
    assert doc["outcome"] == "passed", doc["reason"]
    m = doc["metrics"]
    assert m["timing_source"] == "engine"
    assert 40 < m["decode_tokens_per_s"] <= 110
    assert 0.04 <= m["ttft_s"] < 1.0


@pytest.mark.parametrize("answer, outcome", [(" ", "passed"), ("", "failed")])
def test_empty_expect_still_needs_a_token(tmp_path, answer, outcome):
    """A model that knows nothing (the tiny test model answers whitespace): `expect = ""` turns
    the known-answer check off, but at least one token must come back."""
    cfg_path = write_config(tmp_path, engine_command("--ready-delay", "0.2", "--answer", answer))
    cfg_path.write_text(cfg_path.read_text().replace('expect = "Paris"', 'expect = ""'))
    _, doc = run(cfg_path)
    assert doc["outcome"] == outcome, doc["reason"]
    if outcome == "failed":
        assert "generated no token" in doc["reason"]


def test_thinking_model_is_asked_not_to_think(tmp_path):
    cfg_path = write_config(tmp_path, engine_command("--thinking", "--ready-delay", "0.3"))
    _, doc = run(cfg_path)
    assert doc["outcome"] == "passed", doc["reason"]


def test_broken_spec_decode_accept_length_one_fails(tmp_path):
    cfg_path = write_config(
        tmp_path,
        engine_command("--accept-length", "1.0", "--ready-delay", "0.3"),
        spec_decode=True,
    )
    _, doc = run(cfg_path)
    assert doc["outcome"] == "failed"
    assert doc["stage_reached"] == "ready"
    assert "silently broken" in doc["reason"]
    assert doc["metrics"]["accept_length"] == 1.0


def test_wrong_answer_and_slow_decode_fail_the_checks(tmp_path):
    cfg_path = write_config(
        tmp_path,
        engine_command("--answer", "Lyon", "--tokens-per-s", "200", "--ready-delay", "0.3"),
        checks="min_decode_tokens_per_s = 100000.0",
    )
    _, doc = run(cfg_path)
    assert doc["outcome"] == "failed" and doc["stage_reached"] == "ready"
    assert "expected 'Paris', got 'Lyon'" in doc["reason"]
    assert "below the required 100000.0" in doc["reason"]


def test_vllm_engine_reads_accept_length_from_spec_decode_counters(tmp_path):
    cfg_path = write_config(
        tmp_path,
        engine_command(
            "--metrics-style", "vllm", "--accept-length", "2.5", "--version", "0.24.0",
            "--ready-delay", "0.3",
        ),
        engine="vllm",
        spec_decode=True,
    )  # fmt: skip
    _, doc = run(cfg_path)
    assert doc["outcome"] == "passed", doc["reason"]
    assert doc["metrics"]["accept_length"] == 2.5
    assert doc["engine_version"] == "0.24.0"


def test_metrics_parsing():
    sg = parse_metrics('sglang:spec_accept_length{model_name="m"} 3.25\n# HELP x\n')
    assert accept_from_metrics(sg) == 3.25
    vl = parse_metrics(
        'vllm:spec_decode_num_drafts_total{a="1"} 50\n'
        'vllm:spec_decode_num_drafts_total{a="2"} 50\n'
        "vllm:spec_decode_num_accepted_tokens_total 150\n"
    )
    assert accept_from_metrics(vl) == 2.5
    assert accept_from_metrics({}) is None


def test_command_that_cannot_start_is_an_error(tmp_path):
    cfg_path = write_config(tmp_path, ["/nonexistent/engine", "--port", "{port}"])
    _, doc = run(cfg_path)
    assert doc["outcome"] == "error"
    assert "cannot start '/nonexistent/engine'" in doc["reason"]


def test_placeholders_are_substituted_per_argv_element(tmp_path):
    cfg_path = write_config(
        tmp_path,
        ["docker", "run", "-p", "{port}:30000", "-v", "{model}:/model", "img", "--x", "{ a }"],
        port=8100,
    )
    recipe = load_config(cfg_path).recipes[0]
    argv = build_argv(recipe, "watcher-r1")
    assert argv == [
        "docker", "run", "--name", "watcher-r1", "-p", "8100:30000",
        "-v", "/models/fake:/model", "img", "--x", "{ a }",
    ]  # fmt: skip


def test_docker_container_is_named_and_removed(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    fake_docker(bin_dir)
    with_path(monkeypatch, bin_dir)
    state = tmp_path / "docker-state"
    monkeypatch.setenv("FAKE_DOCKER_STATE", str(state))
    pid_file = tmp_path / "pids"
    cfg_path = write_config(
        tmp_path,
        [
            "docker", "run", "--rm", "--gpus", "all", "-p", "{port}:{port}", "fake/sglang:latest",
            "python", "-m", "watcher.fakes.engine", "--port", "{port}", "--ready-delay", "0.3",
            "--pid-file", str(pid_file),
        ],
        extra=f'FAKE_DOCKER_STATE = "{state}"',  # the engine's environment is scrubbed
    )  # fmt: skip
    _, doc = run(cfg_path)
    assert doc["outcome"] == "passed", doc["reason"]
    name = f"watcher-{doc['run_id']}"
    calls = [json.loads(x) for x in (state / "calls.jsonl").read_text().splitlines()]
    assert calls[0][:3] == ["run", "--name", name]
    assert ["rm", "-f", name] in calls
    assert calls[-1][:2] == ["ps", "-a"]  # the leftover check asked docker
    assert not (state / name).exists()
    assert doc["teardown"]["container_removed"] is True
    assert doc["teardown"]["leftovers"] == []
    assert [p for p in pids_from(pid_file) if alive(p)] == []  # the "container" is gone


def test_cli_smoke_stores_the_run_and_exits_by_outcome(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    fake_nvidia_smi(bin_dir, [RTX3090])
    with_path(monkeypatch, bin_dir)
    monkeypatch.setenv("WATCHER_GPU_SOURCE", "nvidia-smi")
    log_file = tmp_path / "failure.log"
    log_file.write_text(CRASH_LOGS["marlin-tile-n"])
    cfg_path = write_config(
        tmp_path, engine_command("--mode", "crash", "--log-file", str(log_file))
    )
    result = CliRunner().invoke(
        cli, ["smoke", "fake-tp1", "--config", str(cfg_path), "--json", "--run-id", "r-1"]
    )
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["run_id"] == "r-1" and doc["signature"] == "marlin-tile-n"
    store = Store(tmp_path / "data" / "watcher.db")
    try:
        assert store.smoke_runs() == [doc]
        (event,) = store.events()
        assert event["kind"] == "smoke" and event["subject"] == "fake-tp1"
    finally:
        store.close()
    bad = CliRunner().invoke(cli, ["smoke", "nope", "--config", str(cfg_path)])
    assert bad.exit_code == 2 and "no recipe 'nope'" in bad.output
    bad_id = CliRunner().invoke(
        cli, ["smoke", "fake-tp1", "--config", str(cfg_path), "--run-id", "../x"]
    )
    assert bad_id.exit_code == 2 and "--run-id" in bad_id.output


def test_cli_smoke_as_a_subprocess_passes_off_target(tmp_path):
    cfg_path = write_config(tmp_path, engine_command("--ready-delay", "0.3"))
    env = dict(os.environ, PYTHONPATH=str(REPO), WATCHER_GPU_SOURCE="nvidia-smi")
    env["PATH"] = "/usr/bin:/bin"  # no nvidia-smi: no GPU
    out = subprocess.run(
        [sys.executable, "-m", "watcher", "smoke", "fake-tp1", "--config", str(cfg_path)]
        + ["--json", "--any-hardware"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["outcome"] == "passed"
    assert doc["hardware"]["matches_target"] is False


def test_sigterm_to_watcher_still_tears_the_run_down(tmp_path):
    pid_file = tmp_path / "pids"
    cfg_path = write_config(
        tmp_path,
        engine_command("--mode", "hang", "--children", "2", "--pid-file", str(pid_file)),
        startup_timeout=60,
        stop_timeout=1,
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH="/usr/bin:/bin")
    watcher = subprocess.Popen(
        [sys.executable, "-m", "watcher", "smoke", "fake-tp1", "--config", str(cfg_path)]
        + ["--any-hardware", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 30
    while len(pids_from(pid_file)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = pids_from(pid_file)
    assert len(pids) == 3 and all(alive(p) for p in pids)
    watcher.send_signal(signal.SIGTERM)
    out, err = watcher.communicate(timeout=30)
    assert watcher.returncode != 0
    assert [p for p in pids if alive(p)] == [], err


# ---------------------------------------------------------------- hardening (issue 12)


def _dump_env_then_serve(env_file):
    """An engine that writes its whole environment to `env_file`, then serves (exec)."""
    code = (
        "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'));"
        "os.execv(sys.executable, [sys.executable, '-m', 'watcher.fakes.engine', '--port',"
        " sys.argv[2], '--ready-delay', '0.2'])"
    )
    return [sys.executable, "-c", code, str(env_file), "{port}"]


def test_engine_gets_a_scrubbed_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "s" * 36)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("NVIDIA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("NVIDIA_API_KEY", "nvapi-secret")
    env_file = tmp_path / "env.json"
    cfg_path = write_config(tmp_path, _dump_env_then_serve(env_file), extra='MY_FLAG = "1"')
    _, doc = run(cfg_path)
    assert doc["outcome"] == "passed", doc["reason"]
    env = json.loads(env_file.read_text())
    for secret in ("GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "NVIDIA_API_KEY"):
        assert secret not in env
    assert env["MY_FLAG"] == "1" and env["PYTHONPATH"] == str(REPO)  # the recipe's env table
    assert env["PATH"] == os.environ["PATH"] and env["NVIDIA_VISIBLE_DEVICES"] == "0"
    assert env["WATCHER_SMOKE_RUN"] == doc["run_id"]


def test_pass_env_names_what_the_engine_may_inherit(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_passed_on_purpose")
    monkeypatch.setenv("OTHER_TOKEN", "not-passed")
    cfg_path = write_config(tmp_path, engine_command())
    text = cfg_path.read_text().replace(
        "[recipe.hardware]", 'pass_env = ["HF_TOKEN", "UNSET_NAME"]\n\n[recipe.hardware]'
    )
    cfg_path.write_text(text)
    recipe = load_config(cfg_path).recipes[0]
    env = engine_env(recipe, "r-1")
    assert env["HF_TOKEN"] == "hf_passed_on_purpose"
    assert "OTHER_TOKEN" not in env and "UNSET_NAME" not in env
    cfg_path.write_text(text.replace('"UNSET_NAME"', '"BAD NAME"'))
    with pytest.raises(ConfigError, match=r"key 'pass_env': 'BAD NAME' is not"):
        load_config(cfg_path)


def _serve_foreign(port):
    """Another process's engine on `port` (answers every probe, would pass)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "watcher.fakes.engine", "--port", str(port), "--ready-delay", "0"],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("the foreign server did not start")


def test_port_in_use_is_not_launched_and_never_passes(tmp_path):
    port = free_port()
    pid_file = tmp_path / "pids"
    cfg_path = write_config(
        tmp_path, engine_command("--ready-delay", "0.2", "--pid-file", str(pid_file)), port=port
    )
    foreign = _serve_foreign(port)
    try:
        _, doc = run(cfg_path)
    finally:
        foreign.kill()
        foreign.wait()
    assert doc["outcome"] == "error", doc["reason"]
    assert doc["signature"] == "port-in-use"
    assert "not launched" in doc["reason"] and f"127.0.0.1:{port}" in doc["reason"]
    assert not pid_file.exists()  # the engine never started


def test_a_server_that_is_not_ours_is_never_probed(tmp_path):
    """The port was free at launch; then another process took it while ours never bound."""
    port = free_port()
    pid_file = tmp_path / "pids"
    cfg_path = write_config(
        tmp_path,
        engine_command("--mode", "hang", "--pid-file", str(pid_file)),
        port=port,
        startup_timeout=30,
    )
    foreign = []

    def take_the_port():
        deadline = time.monotonic() + 20
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        foreign.append(_serve_foreign(port))

    thread = threading.Thread(target=take_the_port)
    thread.start()
    try:
        _, doc = run(cfg_path)
    finally:
        thread.join()
        for p in foreign:
            p.kill()
            p.wait()
    assert doc["outcome"] == "error", doc["reason"]
    assert doc["signature"] == "port-in-use"
    assert "not the engine watcher launched" in doc["reason"]
    assert doc["metrics"]["ttft_s"] is None  # not probed


DAEMONIZE = """
import os, sys, time
pid_file, port = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        fd = os.open(os.devnull, os.O_RDWR)
        for n in (0, 1, 2):
            os.dup2(fd, n)
        with open(pid_file, "a") as f:
            f.write(f"{os.getpid()}\\n")
        # a clean environment: not even watcher's run marker survives, only the subreaper finds it
        os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)"], {})
    os._exit(0)
os.execv(sys.executable, [sys.executable, "-m", "watcher.fakes.engine", "--port", port,
                          "--ready-delay", "0.5"])
"""


def test_a_double_forked_setsid_survivor_is_found_and_killed(tmp_path):
    pid_file = tmp_path / "daemon.pid"
    cfg_path = write_config(
        tmp_path, [sys.executable, "-c", DAEMONIZE, str(pid_file), "{port}"], stop_timeout=1
    )
    _, doc = run(cfg_path)
    daemons = pids_from(pid_file)
    try:
        assert len(daemons) == 1
        assert doc["outcome"] == "passed", doc["reason"]
        assert not alive(daemons[0])
        assert doc["teardown"]["escaped"] == [f"pid {daemons[0]}"]
        assert doc["teardown"]["leftovers"] == []
        assert "had left the run's session" in doc["reason"]
    finally:
        for pid in daemons:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_killed_watcher_leaves_a_started_run_that_the_next_start_cleans_up(tmp_path):
    pid_file = tmp_path / "pids"
    cfg_path = write_config(
        tmp_path,
        engine_command("--mode", "hang", "--children", "2", "--pid-file", str(pid_file)),
        startup_timeout=120,
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH="/usr/bin:/bin")
    watcher = subprocess.Popen(
        [sys.executable, "-m", "watcher", "smoke", "fake-tp1", "--config", str(cfg_path)]
        + ["--any-hardware", "--run-id", "r-killed"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 30
    while len(pids_from(pid_file)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = pids_from(pid_file)
    try:
        assert len(pids) == 3
        watcher.kill()
        watcher.wait()
        assert all(alive(p) for p in pids)  # SIGKILL: no teardown ran
        cfg = load_config(cfg_path)
        store = Store(cfg.db_path)
        try:
            (row,) = store.smoke_runs()
            assert row["outcome"] == "started" and row["run_id"] == "r-killed"
            assert store.count_smoke_runs_since("2000-01-01T00:00:00Z") == 1  # charged
            locked_cycle(cfg, "check-now", cycle=lambda cfg, **kw: "cycle ran")
            (row,) = store.smoke_runs()
            assert row["outcome"] == "interrupted", row
            assert "stopped 3 process(es)" in row["reason"]
            assert row["hardware"]["matches_target"] is False  # validates nothing
            assert store.count_smoke_runs_since("2000-01-01T00:00:00Z") == 1
            (event,) = store.events()
            assert event["kind"] == "smoke" and event["new"] == "interrupted"
        finally:
            store.close()
        assert [p for p in pids if alive(p)] == []
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_live_run_is_not_taken_for_an_interrupted_one(tmp_path):
    cfg_path = write_config(tmp_path, engine_command())
    cfg = load_config(cfg_path)
    doc = smoke.base_doc(cfg.recipes[0], "r-live")
    smoke.mark_started(cfg, doc)  # by this very process, which is alive
    store = Store(cfg.db_path)
    try:
        assert smoke.recover_interrupted(cfg, store) == []
        assert store.smoke_runs()[0]["outcome"] == "started"
    finally:
        store.close()


FLOOD = """
import sys
junk = ("x" * 99 + "\\n") * 10000  # 1 MB
for _ in range(3):
    sys.stdout.write(junk)
print("RuntimeError: size_n = 96 is not divisible by tile_n_size = 64", flush=True)
for _ in range(3):
    sys.stdout.write(junk)
sys.stdout.flush()
sys.exit(1)
"""


def test_a_flood_of_output_is_capped_and_the_failure_still_named(tmp_path, monkeypatch):
    monkeypatch.setattr(smokelog, "LOG_HEAD_BYTES", 64 << 10)
    monkeypatch.setattr(smokelog, "LOG_TAIL_BYTES", 128 << 10)
    cfg_path = write_config(tmp_path, [sys.executable, "-c", FLOOD, "{port}"])
    _, doc = run(cfg_path)
    log_file = tmp_path / "data" / "smoke" / f"{doc['run_id']}.log"
    size = log_file.stat().st_size
    assert size < 300 << 10, size  # 6 MB of output, a few hundred KB kept
    text = log_file.read_text()
    assert text.startswith(f"# watcher smoke run {doc['run_id']}")
    assert "bytes of output cut here" in text
    assert text.rstrip().endswith("x" * 99)  # the tail is the output's end
    assert doc["outcome"] == "failed"
    assert doc["signature"] == "marlin-tile-n", doc["reason"]
    assert doc["blockers_reproduced"] == ["marlin-pad"]


def test_the_next_start_removes_the_container_a_killed_watcher_left(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    fake_docker(bin_dir)
    state = tmp_path / "docker-state"
    pid_file = tmp_path / "pids"
    cfg_path = write_config(
        tmp_path,
        [
            "docker", "run", "--rm", "-p", "{port}:{port}", "fake/sglang:latest",
            "python", "-m", "watcher.fakes.engine", "--port", "{port}", "--mode", "hang",
            "--pid-file", str(pid_file),
        ],
        startup_timeout=120,
        extra=f'FAKE_DOCKER_STATE = "{state}"',
    )  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH=f"{bin_dir}:/usr/bin:/bin")
    env["FAKE_DOCKER_STATE"] = str(state)
    watcher = subprocess.Popen(
        [sys.executable, "-m", "watcher", "smoke", "fake-tp1", "--config", str(cfg_path)]
        + ["--any-hardware", "--run-id", "r-docker"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 30
    while not pids_from(pid_file) and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = pids_from(pid_file)
    try:
        assert len(pids) == 1
        watcher.kill()
        watcher.wait()
        assert (state / "watcher-r-docker").exists()  # the "container" outlived watcher
        with_path(monkeypatch, bin_dir)
        monkeypatch.setenv("FAKE_DOCKER_STATE", str(state))
        cfg = load_config(cfg_path)
        locked_cycle(cfg, "check-now", cycle=lambda cfg, **kw: None)
        calls = [json.loads(x) for x in (state / "calls.jsonl").read_text().splitlines()]
        assert ["rm", "-f", "watcher-r-docker"] in calls
        assert not (state / "watcher-r-docker").exists()
        store = Store(cfg.db_path)
        try:
            (row,) = store.smoke_runs()
        finally:
            store.close()
        assert row["outcome"] == "interrupted"
        assert "container watcher-r-docker removed" in row["reason"], row["reason"]
        assert [p for p in pids if alive(p)] == []
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
