"""What a compose file says beyond its YAML: the header block (Status, GPU count lines) and the
flags the service runs (spec-decode method, model, tensor parallel), and the GPU count's order."""

from __future__ import annotations

import pytest

from watcher.config import composecmd
from watcher.config.composefile import read_service


@pytest.mark.parametrize(
    ("argv", "method"),
    [
        (["--speculative-config", '{"method":"mtp","num_speculative_tokens":3}'], "mtp"),
        (["--speculative-config", '{"method": "eagle3", "model": "/d"}'], "eagle3"),
        (['--speculative-config={"model":"/x/qwen-dflash"}'], "dflash"),
        (["--speculative-config", '{"model":"/x/assistant","num_speculative_tokens":4}'], "draft"),
        (["--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3"], "eagle3"),
        (["--speculative-algorithm", "NEXTN"], "mtp"),
        (["--spec-type", "draft-mtp", "--spec-draft-n-max", "3"], "mtp"),
        (["-m", "/m/x.gguf", "-md", "/m/draft.gguf"], "draft"),
        (["--spec-dflash-cross-ctx", "4096", "--spec-draft-model", "/m/d.gguf"], "dflash"),
        (["-m", "/m/x.gguf", "-mtp"], "mtp"),
        (["--model", "/root/.cache/huggingface/qwen3.6-27b-mtp"], ""),  # a name is no flag
    ],
)
def test_spec_method_from_flags(argv, method):
    assert composecmd.spec_method(argv) == method


def test_runs_reads_entrypoint_scripts_without_their_comments():
    svc = {
        "entrypoint": ["bash", "-c", "# exec vllm serve --speculative-config '{\"method\":\"ngram\"}'\n"
                       "exec python3 -m sglang.launch_server \\\n  --model-path /models/target \\\n"
                       "  --speculative-algorithm EAGLE3 --tp-size 2\n"],
        "command": ["--override", '{"a": 1, "b": 2}'],
    }  # fmt: skip
    words = composecmd.runs(svc)
    assert composecmd.spec_method(words) == "eagle3"
    assert composecmd.tensor_parallel(words) == 2
    assert composecmd.model(words) == ""  # /models/target is a mount point, python's -m no model
    assert '{"a": 1, "b": 2}' in words  # a JSON argument stays one word
    assert composecmd.model(["--host", "h", "-m", "/models/q/Qwen3.6-27B-Q5_K_S.gguf"]) == (
        "Qwen3.6-27B-Q5_K_S.gguf"
    )


def test_header_and_status_words():
    text = (
        "# ==========\n# ⚠ PARKED 2026-05-21 — kept for a re-test\n# Profile (at-a-glance):\n"
        "#   Model:     Q\n#   Status:    ⚠️ Production w/ caveats — see below\n"
        "#              Deprecated mentions in a continuation line are not read\n"
        "# Requires-min-gpu-count: 2\n# Tensor-parallel: 4\n# Engine-profile: vllm-stable\n"
        "services:\n  # Status: not the header\n  x: {}\n"
    )
    head = composecmd.header(text)
    assert composecmd.status_word(head["status"]) == "production"
    assert composecmd.header_int(head, "requires-min-gpu-count") == 2
    assert head["engine-profile"] == "vllm-stable"
    assert composecmd.status_word("🐣 Incubating") == "incubating"
    assert composecmd.status_word("⚠ PARKED 2026-05-21 — boots") == "parked"
    assert composecmd.status_word("🗑️ Deprecated") == "deprecated"


DEVICES = """services:
  e:
    image: vllm/vllm-openai:v0.27.1
    ports: ["${{ESTATE_PORT:-${{PORT:-8020}}}}:8000"]
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              {devices}
              capabilities: [gpu]
    command: ["--tensor-parallel-size", "${{TP:-4}}"]
"""


@pytest.mark.parametrize(
    ("head", "devices", "count", "source"),
    [
        ("", "count: 3", 3, "count: 3"),
        ("", "device_ids: ['${ESTATE_GPUS:-0,1}']", 2, "device_ids 0,1"),
        ("", "device_ids: ['0', '1', '2']", 3, "device_ids 0,1,2"),
        ("# Requires-min-gpu-count: 2\n# Tensor-parallel: 8\n", "count: all", 2, "Requires"),
        ("# Tensor-parallel: 8\n", "count: all", 8, "Tensor-Parallel"),
        ("", "count: all", 4, "tensor-parallel size 4"),  # all alone is no count: the flag is
    ],
)
def test_gpu_count_order(tmp_path, head, devices, count, source):
    f = tmp_path / "c.yml"
    f.write_text(head + DEVICES.format(devices=devices))
    svc = read_service(f, "e", environ={})
    assert svc.gpu_count == count and source in svc.gpu_source
    assert svc.host_port == 8020


def test_count_all_alone_is_no_count(tmp_path):
    f = tmp_path / "c.yml"
    f.write_text(DEVICES.format(devices="count: all").replace(', "${TP:-4}"', ', "x"'))
    svc = read_service(f, "e", environ={})
    assert svc.gpu_count is None and svc.gpus_all
    assert any("count: all" in u for u in svc.unknown)
