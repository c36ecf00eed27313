"""Real engine failure text -> a named cause. The fixtures are real vLLM 0.32.0 (CPU build) output,
captured by running it wrongly (tests/realengine/fixtures); SGLang's quantization refusal is its
`_verify_quantization` message, read in its code (sglang does not run without a GPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kits.smokekit import engine_command, write_config

from watcher.config.load import load_config
from watcher.config.signatures import all_signatures
from watcher.smoke.classify import Classifier, describe
from watcher.smoke.hardware import Gpu, GpuReading
from watcher.smoke.run import run_recipe

FIXTURES = Path(__file__).parents[1] / "realengine" / "fixtures"
C = Classifier(all_signatures())

CASES = {
    "vllm-0.32.0-unknown-flag.log": ("unknown-flag", "--no-such-flag-xyz"),
    "vllm-0.32.0-model-path.log": ("model-not-found", "/tmp/does-not-exist-model"),
    "vllm-0.32.0-port-in-use.log": ("port-in-use", "Address already in use"),
    "vllm-0.32.0-speculative-config.log": ("bad-speculative-config", "SpeculativeConfig"),
    "vllm-0.32.0-head-dim-16.log": ("unsupported-attention", "head_dim=16"),
    "sglang-quantization-mismatch.log": ("quantization-mismatch", "(auto-round)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_failure_text_is_named(name):
    family, cause = CASES[name]
    finding = C.scan(FIXTURES / name)
    assert finding is not None and finding.id == family
    assert cause in describe(finding)


def test_quantization_mismatch_names_both_methods():
    finding = C.scan(FIXTURES / "sglang-quantization-mismatch.log")
    text = describe(finding)
    assert "auto-round" in text and "awq_marlin" in text and "recipe error" in text


ON_TARGET = GpuReading((Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),), "nvml")


def test_an_unknown_flag_is_a_recipe_error_naming_the_flag_never_a_blocker(tmp_path):
    log = FIXTURES / "vllm-0.32.0-unknown-flag.log"
    cfg_path = write_config(
        tmp_path,
        engine_command("--mode", "crash", "--log-file", str(log), "--exit-code", "2"),
        engine="vllm",
    )
    cfg = load_config(cfg_path)
    doc = run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)
    assert doc["outcome"] == "failed"
    assert doc["signature"] == "unknown-flag"
    assert doc["blockers_reproduced"] == []
    assert "recipe error" in doc["reason"] and "--no-such-flag-xyz" in doc["reason"]
    assert "No known failure signature" not in doc["reason"]
