"""Where the real engine lives for the tests and bench/real_engine.py: vLLM's CPU build, installed
by deploy/install-vllm-cpu into its own venv outside the clone, and a tiny model made locally."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VERSION = os.environ.get("WATCHER_VLLM_CPU_VERSION", "0.32.0")
NGRAM = {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 3}
ENV = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1"}


def venv_dir() -> Path:
    """The same folder deploy/install-vllm-cpu installs into."""
    root = os.environ.get("WATCHER_VLLM_CPU_HOME")
    if not root:
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(cache) / "watcher")
    return Path(root) / f"vllm-cpu-{VERSION}"


def vllm_python() -> Path | None:
    """The venv's python when the install finished, else None."""
    venv = venv_dir()
    py = venv / "bin" / "python"
    return py if (venv / ".installed").exists() and py.exists() else None


# The slower model of the known speed pair: 12 layers, hidden 512 (16 heads of 32), MLP 2048, about
# 50M parameters against the tiny one's 0.6M: ~8x slower a token on vLLM's CPU build.
BIG = {"layers": 12, "heads": 16, "intermediate": 2048}


def make_model(
    python: Path,
    out: Path,
    head_dim: int = 32,
    *,
    layers: int = 2,
    heads: int = 4,
    intermediate: int = 256,
) -> Path:
    """A random Qwen2 (tests/realengine/make_tiny_model.py), made with the venv's torch: the tiny
    one by default, the slower one of the speed pair with **BIG."""
    subprocess.run(
        [str(python), str(REPO / "tests/realengine/make_tiny_model.py"), str(out)]
        + ["--head-dim", str(head_dim), "--layers", str(layers), "--heads", str(heads)]
        + ["--intermediate", str(intermediate)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


def command(
    python: Path, *, spec: bool = False, extra: tuple[str, ...] = (), eager: bool = True
) -> list[str]:
    """vLLM's OpenAI server (`vllm serve` finds no package metadata in this install).

    `eager` (the tests): `--enforce-eager`, no torch.compile warm-up, which builds C++ kernels with
    gcc at every launch of a test run (each logged "saved AOT compiled function"): ~25 s of CPU a
    launch here, more than the rest of a start, and three times that on a loaded
    machine. The tests check watcher's side (launch, readiness, probes, metrics, teardown,
    classification), which eager mode leaves as it is; the head_dim-16 refusal still comes at the
    first generation, after /health answered. bench/real_engine.py times the compiled engine."""
    argv = [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", "{model}", "--served-model-name", "tiny",
        "--host", "127.0.0.1", "--port", "{port}",
        "--gpu-memory-utilization", "0.15", "--max-model-len", "1024",
    ]  # fmt: skip
    if eager:
        argv.append("--enforce-eager")
    if spec:
        argv += ["--speculative-config", json.dumps(NGRAM)]
    return argv + list(extra)
