"""A guide with five engines (vLLM, SGLang, llama.cpp, ik_llama.cpp, llamacpp-club3090), written
for these tests in the guide's shape: an engines README with an At-a-glance table and prose, an
upstream tracker, one hand-made [[page]] (SGLang) and [engines] making the rest; the fake GitHub
seeded for every item; smoke runs for two of the engines."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from watcher.core.clock import iso

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
VLLM = "vllm-project/vllm"
SGLANG = "sgl-project/sglang"
GPU = {"name": "NVIDIA GeForce RTX 3090", "memory_mib": 24576, "compute_capability": "8.6"}

README = """# Engines for the 27B on 3090s

Our main road is **vLLM**; the others trade features for footprint. Each engine has its own
page with the recipes and the gotchas.

## At a glance

| Engine | Status on this stack | Per-stream TPS (1× 3090) | Max ctx (1× 3090) | Vision | Tool calls | Spec-decode | OpenAI API parity |
|---|---|---|---|---|---|---|---|
| **[vLLM](VLLM.md)** ⭐ | **Production** (our main road) | 50-55 prose / 65-70 code | 48K safe | ✅ | ✅ | ✅ MTP n=3 | ✅ Full |
| **[llama.cpp](LLAMA_CPP.md)** | Works on mainline | 35-60 (by quant) | **262K** (q4_0 KV) | ✅ (mmproj) | ⚠️ Limited | ⚠️ draft model only | ⚠️ Partial |
| **[SGLang](SGLANG.md)** | Re-test pending (May 2026) | n/a | n/a | ✅ | ✅ | ⚠️ EAGLE-3 slow | ✅ Full |
| **[ExLlamaV3](EXL3.md)** | Not tried here | — | — | ❌ | ⚠️ | ❌ | ⚠️ Partial |

---

## Which one

Pick vLLM unless you need the longest context on one card; then llama.cpp.
"""

TRACKER = f"""# Upstream tracker

## vLLM (`{VLLM}`)

| Issue / PR | Status | Why it matters | Workaround |
|---|---|---|---|
| [#45295](https://github.com/{VLLM}/pull/45295) — Marlin sub-tile fix | 🟡 Open | Dual-card recipes mount a patched kernel. | Mount `patches/marlin/`. |
| [#40807](https://github.com/{VLLM}/issues/40807) — `.tolist()` in a captured graph | ⚫ Local workaround | Single-card spec decode needs it. | `patch_tolist.py`. |

## SGLang (`{SGLANG}`)

| Issue / PR | Status | Why it matters | Workaround |
|---|---|---|---|
| [#19406](https://github.com/{SGLANG}/issues/19406) — AutoRound loader drops a mapping | 🔴 Not filed, same kernel-line fix | The dual recipe crashes at load. | None. |
"""


def config(gh_url: str) -> str:
    """watch.toml: every engine with a recipe, SGLang's page by hand, the rest by [engines]."""
    cmd = lambda image: json.dumps(["docker", "run", "--rm", image, "--port", "8000"])  # noqa: E731
    return f"""
[watcher]
github_api_url = "{gh_url}"
data_dir = "data"
site_dir = "site"

[[item]]
id = "vllm-45295"
repo = "{VLLM}"
kind = "pull"
number = 45295

[[item]]
id = "vllm-40807"
repo = "{VLLM}"
kind = "issue"
number = 40807

[[item]]
id = "sglang-19406"
repo = "{SGLANG}"
kind = "issue"
number = 19406

[[blocker]]
id = "marlin-pad"
title = "Marlin sub-tile fix"
items = ["vllm-45295"]

[[blocker]]
id = "autoround-loader"
title = "SGLang's AutoRound loader"
items = ["sglang-19406"]

[[recipe]]
id = "vllm-dual-mtp"
title = "vLLM, two cards, MTP"
engine = "vllm"
command = {cmd("vllm/vllm-openai:v0.27.1")}
spec_decode = true
spec_method = "mtp"
hardware = {{ gpu_count = 2 }}
checks = {{ tool_call = true }}

[[recipe]]
id = "vllm-single"
title = "vLLM, one card"
engine = "vllm"
command = {cmd("vllm/vllm-openai:v0.27.1")}

[[recipe]]
id = "sglang-dual"
title = "SGLang, two cards, EAGLE-3"
engine = "sglang"
command = {cmd("lmsysorg/sglang:v0.5.12")}
blockers = ["autoround-loader"]
hardware = {{ gpu_count = 2 }}

[[recipe]]
id = "llama-single"
title = "llama.cpp, one card"
engine = "llama.cpp"
command = {cmd("ghcr.io/ggml-org/llama.cpp:server-b6000")}

[[recipe]]
id = "ik-single"
title = "ik_llama.cpp, one card"
engine = "ik_llama.cpp"
command = {cmd("ghcr.io/ikawrakow/ik_llama.cpp:server-b4100")}
blockers = ["marlin-pad"]

[[recipe]]
id = "club-single"
title = "llamacpp-club3090, one card"
engine = "llamacpp-club3090"
command = {cmd("ghcr.io/club-3090/llamacpp:club-1")}

[[page]]
id = "sglang"
title = "SGLang"
output = "docs/engines/SGLANG.md"
blockers = ["autoround-loader"]
recipes = ["sglang-dual"]

[engines]
hand = "fragments/engines-readme.md"

[tracker]
source = "docs/UPSTREAM.md"
"""


def seed_github(gh) -> None:
    """The tracked threads: the Marlin fix merged, the workaround issue open, SGLang's open."""
    fix = gh.add_commit(VLLM, message="Fix Marlin pad (#45295)", date="2026-06-30T00:00:00Z")
    gh.add_pull(
        VLLM,
        45295,
        title="[Kernel] Marlin sub-tile",
        merged=True,
        merge_commit_sha=fix["sha"],
        merged_at="2026-06-30T10:00:00Z",
    )
    gh.add_issue(VLLM, 40807, title="tolist in captured graph")
    gh.add_issue(SGLANG, 19406, title="AutoRound loader drops packed_modules_mapping")


def run_doc(run_id, recipe, at, gpus=1, **over):
    """A stored smoke run in the shape the runner records."""
    d = {
        "run_id": run_id,
        "recipe": recipe,
        "backend": "local",
        "outcome": "passed",
        "signature": None,
        "blockers_reproduced": [],
        "reason": "passed",
        "hardware": {"gpus": [GPU] * gpus, "matches_target": True},
        "engine_version": "0.27.1",
        "metrics": {"decode_tokens_per_s": None, "accept_length": None},
        "started_at": iso(at - timedelta(minutes=10)),
        "finished_at": iso(at),
        "host": "box-a",
    }
    d.update(over)
    return d


RUNS = [
    run_doc("r-vllm", "vllm-dual-mtp", NOW - timedelta(days=1), gpus=2,
            metrics={"decode_tokens_per_s": 85.1, "accept_length": 3.12},
            checks=[{"name": "tool-call", "ok": True, "detail": "get_weather"}]),
    run_doc("r-llama", "llama-single", NOW - timedelta(days=2),
            metrics={"decode_tokens_per_s": 41.7, "accept_length": None}),
]  # fmt: skip


def write_guide(folder: Path, gh_url: str) -> Path:
    """The guide's files and watch.toml in `folder`; the watch.toml path."""
    (folder / "docs" / "engines").mkdir(parents=True, exist_ok=True)
    (folder / "fragments").mkdir(exist_ok=True)
    (folder / "fragments" / "engines-readme.md").write_text(README, encoding="utf-8")
    (folder / "docs" / "UPSTREAM.md").write_text(TRACKER, encoding="utf-8")
    path = folder / "watch.toml"
    path.write_text(config(gh_url), encoding="utf-8")
    return path
