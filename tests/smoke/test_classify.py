"""The failure classifier: real lines, variants, family order, block edges, excerpts."""

import pytest

from watcher.config.signatures import BUILTIN_IDS, Signature, all_signatures
from watcher.smoke.classify import Classifier, describe, tail

C = Classifier()

# The real line (design.md), and the variants logs really show.
MARLIN = [
    "RuntimeError: size_n = 96 is not divisible by tile_n_size = 64",
    "size_n=96 is not divisible by tile_n_size=64",
    "  size_n   =   96   is  not  divisible  by   tile_n_size  =  64  ",
    "RuntimeError: size_n = 96 is not divisible by\n    tile_n_size = 64",
    "ValueError: size_n = 2568 is not\ndivisible by min_thread_n = 64",
    "size_k = 2568 is not divisible by min_thread_k = 128",
    "Weight output_size_per_partition = 96 is not divisible by min_thread_n = 64. "
    "Consider reducing tensor_parallel_size or running with --quantization gptq.",
]


@pytest.mark.parametrize("line", MARLIN)
def test_marlin_variants(line):
    text = f"INFO loading weights\n{line}\nTraceback follows\n"
    finding = C.scan_text(text)
    assert finding is not None and finding.id == "marlin-tile-n"
    assert "divisible" in finding.line


@pytest.mark.parametrize(
    "line",
    [
        "size_n = 96 is divisible by tile_n_size = 32",
        "tile_n_size = 64",
        "the size_n of 96 is odd",
        "size_x = 96 is not divisible by tile_n_size = 64",
    ],
)
def test_marlin_near_misses_do_not_match(line):
    assert C.scan_text(line + "\n") is None


FAMILIES = {
    "mamba-extra-buffer": "ValueError: Speculative decoding with hybrid GDN models requires "
    "--mamba-scheduler-strategy extra_buffer",
    "spec-decode-hybrid": "NotImplementedError: EAGLE speculative decoding is not supported "
    "for hybrid linear attention (GatedDeltaNet) layers",
    "nccl": "torch.distributed.DistBackendError: NCCL error in: ../ProcessGroupNCCL.cpp:1970, "
    "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
    "kv-cache-memory": "RuntimeError: Not enough memory. Please try to increase "
    "--mem-fraction-static.",
    "cuda-oom": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "port-in-use": "OSError: [Errno 98] error while attempting to bind on address "
    "('0.0.0.0', 30000): address already in use",
    "model-not-found": "OSError: /model is not a local folder and is not a valid model "
    "identifier listed on 'https://huggingface.co/models'",
    "docker-gpu": 'docker: Error response from daemon: could not select device driver "" '
    "with capabilities: [[gpu]].",
    # real vLLM 0.32.0 (CPU build) lines; whole logs in tests/realengine/fixtures
    "unknown-flag": "api_server.py: error: unrecognized arguments: --no-such-flag-xyz",
    "bad-speculative-config": "pydantic_core._pydantic_core.ValidationError: 1 validation error"
    " for SpeculativeConfig",
    "unsupported-attention": "RuntimeError: Unsupported CPU attention configuration: head_dim=16"
    " isa=2 kv_cache_idx=0",
    "quantization-mismatch": "ValueError: Quantization method specified in the model config "
    "(auto-round) does not match the quantization method specified in the `quantization` "
    "argument (awq_marlin).",
}


@pytest.mark.parametrize("family, line", sorted(FAMILIES.items()))
def test_each_family_has_a_real_looking_line(family, line):
    finding = C.scan_text(f"[2026-11-30 12:00:00] starting\n{line}\n")
    assert finding is not None and finding.id == family


def test_every_builtin_family_is_covered():
    assert set(FAMILIES) | {"marlin-tile-n", "hang"} == set(BUILTIN_IDS)


def test_nccl_wrapping_out_of_memory_is_nccl_wherever_it_appears():
    oom_first = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n"
        "NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "Last error:\nCuda failure 'out of memory'\n"
    )
    assert C.scan_text(oom_first).id == "nccl"
    wrapped = "ncclUnhandledCudaError: Call to CUDA function failed.\nCUDA out of memory\n"
    assert C.scan_text(wrapped).id == "nccl"


def test_kv_cache_before_plain_oom():
    text = "CUDA out of memory while profiling\nRuntimeError: Not enough memory for the KV cache\n"
    assert C.scan_text(text).id == "kv-cache-memory"


def test_config_problem_is_told_apart_from_an_upstream_blocker():
    text = (
        "EAGLE speculative decoding is not supported for hybrid mamba layers unless you pass "
        "--mamba-scheduler-strategy=extra_buffer\n"
    )
    finding = C.scan_text(text)
    assert finding.id == "mamba-extra-buffer"
    reason = describe(finding)
    assert "config problem in the recipe, not an upstream blocker" in reason
    upstream = describe(C.scan_text(MARLIN[0]))
    assert "upstream failure" in upstream and "not an upstream blocker" not in upstream


def test_match_across_block_edges_and_line_numbers():
    lines = [f"INFO step {i}" for i in range(2000)]
    lines[1500] = "RuntimeError: size_n = 96 is not"
    lines[1501] = "  divisible by tile_n_size = 64"
    text = "\n".join(lines) + "\n"
    for size in (7, 64, 1000, len(text)):
        data = text.encode()
        blocks = [data[i : i + size] for i in range(0, len(data), size)]
        finding = C.scan_blocks(blocks)
        assert finding is not None and finding.id == "marlin-tile-n", size
        assert finding.line_no == 1501, size


def test_excerpt_is_bounded_and_centered(tmp_path):
    before = [f"line {i}" for i in range(50)]
    after = [f"after {i}" for i in range(50)]
    log = tmp_path / "run.log"
    log.write_text("\n".join([*before, "x" * 5000 + " CUDA out of memory", *after]) + "\n")
    finding = Classifier().scan(log)
    assert finding.id == "cuda-oom" and finding.line_no == 51
    lines = finding.excerpt.split("\n")
    assert lines[:3] == ["line 47", "line 48", "line 49"]
    assert lines[-1] == "after 4" and len(lines) == 9
    assert len(lines[3]) <= 300


def test_config_signatures_come_first_and_can_replace_builtins():
    extra = (
        Signature(id="my-loader", pattern=r"LoaderBug: \w+", kind="upstream"),
        Signature(id="cuda-oom", pattern=r"OOMKilled", kind="environment"),
    )
    c = Classifier(all_signatures(extra))
    assert c.scan_text("LoaderBug: boom\nCUDA out of memory\n").id == "my-loader"
    assert c.scan_text("container OOMKilled\n").id == "cuda-oom"
    assert c.scan_text("CUDA out of memory\n") is None  # the built-in pattern was replaced


def test_binary_garbage_and_no_match(tmp_path):
    log = tmp_path / "run.log"
    log.write_bytes(b"\xff\xfe\x00garbage\n" * 100 + b"all good\n")
    assert Classifier().scan(log) is None
    assert tail(log, lines=1) == "all good"


def test_tail_is_bounded(tmp_path):
    log = tmp_path / "big.log"
    log.write_text("".join(f"line {i}\n" for i in range(100_000)))
    assert tail(log, lines=3) == "line 99997\nline 99998\nline 99999"
