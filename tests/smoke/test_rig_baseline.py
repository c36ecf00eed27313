"""A recipe runs on every rig it fits, and its baseline must fit the same rig (issue 33.10).

On a one-GPU host a one-GPU candidate whose baseline needs two GPUs used to be skipped with the
baseline's need quoted as its own. Now it runs: against the first of its `rig_baselines` this
host can run, or alone, its comparison saying plainly that no baseline ran on this rig. The
fake engine runs at set speeds; the GPUs are claimed by a fake nvidia-smi.
"""

from __future__ import annotations

import json

import pytest
from kits.smokekit import REPO, RTX3090, engine_command, fake_nvidia_smi, free_port, with_path
from kits.watchtoml import load_watch

from watcher.core.clock import utcnow
from watcher.core.errors import ConfigError
from watcher.judge.evaluate import evaluate
from watcher.smoke.run import run_results


def _recipe(rid: str, gpus: int, extra: str = "") -> str:
    cmd = engine_command("--ready-delay", "0.1", "--tokens-per-s", "300", "--burst", "3")
    return f"""
[[recipe]]
id = "{rid}"
engine = "sglang"
port = {free_port()}
startup_timeout = 20
stop_timeout = 3
command = {json.dumps(cmd)}
{extra}
[recipe.hardware]
gpu_count = {gpus}
[recipe.checks]
repeats = 3
decode_tokens = 24
[recipe.env]
PYTHONPATH = "{REPO}"
"""


def _config(tmp_path, rig_baselines: str = ""):
    compared = 'baseline = "vllm-tp2"\nmin_speed_vs_baseline = 0.25\n' + rig_baselines
    text = (
        '[watcher]\ndata_dir = "data"\nsite_dir = "site"\n'
        + _recipe("vllm-tp2", 2)
        + _recipe("llamacpp-tp1", 1)
        + _recipe("eagle-tp1", 1, compared)
        + '[[page]]\nid = "eagle"\ntitle = "EAGLE"\noutput = "out/eagle.md"\nrecipes = ["eagle-tp1"]\n'
    )
    return load_watch(tmp_path, text)


@pytest.fixture
def one_gpu(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path / "bin", [RTX3090])
    with_path(monkeypatch, tmp_path / "bin")
    monkeypatch.setenv("WATCHER_GPU_SOURCE", "nvidia-smi")


def test_a_one_gpu_recipe_runs_alone_where_its_baseline_does_not_fit(tmp_path, one_gpu):
    cfg = _config(tmp_path)
    res = run_results(cfg, [cfg.recipe("eagle-tp1")])["eagle-tp1"]
    assert res.outcome == "passed", res.reason  # never skipped for the baseline's need
    c = res.comparison
    assert c["verdict"] == "insufficient data" and c["rounds"] == 0
    assert c["why"].startswith("no baseline ran on this rig (vllm-tp2 needs 2× RTX 3090;")
    assert "no baseline ran on this rig" in res.reason
    assert res.baseline_runs == []


def test_a_rig_baseline_is_run_where_the_main_one_does_not_fit(tmp_path, one_gpu):
    cfg = _config(
        tmp_path, 'rig_baselines = ["llamacpp-tp1"]\n'
    )  # 300 vs 300 tokens/s: 4x from the floor, so load cannot move it
    res = run_results(cfg, [cfg.recipe("eagle-tp1")])["eagle-tp1"]
    assert res.outcome == "passed", res.reason
    assert res.comparison["baseline"] == "llamacpp-tp1"
    assert res.comparison["verdict"] == "clears", res.comparison
    assert [b.recipe for b in res.baseline_runs] == ["llamacpp-tp1"]
    # the judge takes a rig baseline's comparison as the recipe's own, and names that baseline
    page = evaluate(cfg, {}, [res.to_record()], {}, utcnow()).pages["eagle"]
    assert page.status == "validated", page.reason
    assert "llamacpp-tp1" in page.reason


def test_a_candidate_that_does_not_fit_quotes_its_own_need(tmp_path, one_gpu):
    cfg = load_watch(
        tmp_path,
        '[watcher]\ndata_dir = "data"\n'
        + _recipe("vllm-tp2", 2)
        + _recipe("eagle-tp4", 4, 'baseline = "vllm-tp2"\n'),
    )
    res = run_results(cfg, [cfg.recipe("eagle-tp4")])["eagle-tp4"]
    assert res.outcome == "skipped"
    assert "needs 4× RTX 3090" in res.reason and "2×" not in res.reason


def test_rig_baselines_are_checked_at_load(tmp_path):
    with pytest.raises(ConfigError, match=r"key 'rig_baselines': no recipe with id 'nope'"):
        _config(tmp_path, 'rig_baselines = ["nope"]\n')


def test_the_shipped_tp1_recipes_pick_the_single_card_path_on_one_gpu(shipped_cfg):
    """The shipped list: on one 3090 the TP=1 SGLang recipes are compared with the guide's
    llama.cpp MTP single-card path, on two with the vLLM MTP path, as before."""
    from watcher.smoke.hardware import Gpu, GpuReading
    from watcher.smoke.session import pick_baseline

    card = Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6")
    for rid in ("sglang-eagle-tp1", "sglang-mtp-tp1", "sglang-nospec-tp1"):
        recipe = shipped_cfg.recipe(rid)
        assert recipe.hardware.gpu_count == 1
        one, _ = pick_baseline(shipped_cfg, recipe, GpuReading((card,), "nvml"))
        two, _ = pick_baseline(shipped_cfg, recipe, GpuReading((card, card), "nvml"))
        assert (one.id, two.id) == ("llamacpp-mtp-tp1", "vllm-mtp-tp2")
