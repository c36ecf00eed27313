"""Failure signatures: the model and the built-in ordered families, specific before generic.

Order matters: an NCCL failure can wrap "out of memory", and SGLang's advice to use
`--mamba-scheduler-strategy extra_buffer` is a config problem, not the upstream rollback blocker.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Signature:
    """A failure family: a regex over log lines, and whether it means upstream, config or host."""

    id: str
    pattern: str
    description: str = ""
    kind: str = "upstream"  # upstream | config | environment


BUILTIN: tuple[Signature, ...] = (
    # recipe mistakes first: the engine refuses the command line before anything else can fail
    Signature(
        id="unknown-flag",
        pattern=r"error:\s+unrecognized\s+arguments?:[ \t]+(?P<detail>[^\s][^\n]*)",
        description="recipe error: the engine does not know a flag the recipe passes",
        kind="config",
    ),
    Signature(
        id="bad-speculative-config",
        pattern=r"(?i)(validation\s+error|invalid|unsupported|unknown)\w*\s+(for\s+)?(?P<detail>SpeculativeConfig\b.*|speculative[-_ ](config|algorithm|method)\b.*)",
        description="recipe error: the engine rejects the speculative-decoding settings",
        kind="config",
    ),
    Signature(
        id="quantization-mismatch",
        pattern=r"Quantization\s+method\s+specified\s+in\s+the\s+model\s+config\s+\((?P<detail>[^)]*\)\s+does\s+not\s+match\s+the\s+quantization\s+method\s+specified\s+in\s+the\s+[`'\"]?quantization[`'\"]?\s+argument\s+\([^)]*)\)",
        description="recipe error: --quantization disagrees with the checkpoint's quantization_config.quant_method (drop the flag)",
        kind="config",
    ),
    Signature(
        id="marlin-tile-n",
        pattern=r"\b(size_[nk]|(?:output|input)_size_per_partition)\s*[=:]\s*\d+\s*,?\s+is\s+not\s+divisible\s+by\s+(tile_[nk]_size|min_thread_[nk])\s*[=:]\s*\d+",
        description="Marlin int4 kernel rejects a weight shard whose size is not a multiple of its tile",
        kind="upstream",
    ),
    Signature(
        id="mamba-extra-buffer",
        pattern=r"(--mamba-scheduler-strategy|mamba_scheduler_strategy)\s*(=\s*|\s+)[`'\"]?extra_buffer\b",
        description="SGLang asks for --mamba-scheduler-strategy extra_buffer: a launch flag to add, not an upstream bug",
        kind="config",
    ),
    Signature(
        id="spec-decode-hybrid",
        pattern=r"(?i)(speculative|spec[-_ ]decod\w*|eagle|mtp)\b.*\b(not\s+supported|unsupported|does\s+not\s+support)\b.*\b(hybrid|linear[-_ ]attention|gated[-_ ]?delta|deltanet|gdn|mamba)|(hybrid|linear[-_ ]attention|gated[-_ ]?delta|deltanet|gdn|mamba)\w*\b.*\b(not\s+supported|unsupported|does\s+not\s+support)\b.*\b(speculative|spec[-_ ]decod\w*|eagle|kv\s+rollback)",
        description="speculative decoding refused or broken on hybrid DeltaNet/GDN layers (no KV rollback)",
        kind="upstream",
    ),
    Signature(
        id="nccl",
        pattern=r"(?i)\bNCCL\s+(error|failure)\b|\bnccl(InternalError|UnhandledCudaError|SystemError|InvalidUsage|RemoteError)\b|NCCL\s+communicator\s+was\s+aborted|ProcessGroupNCCL\W.*\b(timed\s+out|timeout|error)\b|Watchdog\s+caught\s+collective\s+operation\s+timeout",
        description="NCCL communication failure (often wraps an out-of-memory)",
        kind="environment",
    ),
    Signature(
        id="kv-cache-memory",
        pattern=r"(?i)(not\s+enough\s+memory\s+for\s+(the\s+)?kv\s*cache|no\s+available\s+memory\s+for\s+(the\s+)?cache\s+blocks|kv\s*cache\s+(pool\s+)?is\s+too\s+small|max_total_num_tokens\s*=\s*0|Not\s+enough\s+memory\.\s+Please\s+try\s+to\s+increase\s+--mem-fraction-static)",
        description="the model loaded but too little memory is left for the KV cache",
        kind="config",
    ),
    Signature(
        id="cuda-oom",
        pattern=r"(?i)(CUDA\s+out\s+of\s+memory|torch\.(cuda\.)?OutOfMemoryError|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED)",
        description="CUDA out of memory",
        kind="environment",
    ),
    Signature(
        id="unsupported-attention",
        pattern=r"(?i)(?P<detail>Unsupported\s+\S*\s*attention\s+configuration\b.*|head_?(dim|size)\s*[=:]?\s*\d+\s+is\s+not\s+supported\b.*)",
        description="the engine's attention kernels refuse this model's shape (head size)",
        kind="upstream",
    ),
    Signature(
        id="port-in-use",
        pattern=r"(?i)(address\s+already\s+in\s+use|Errno\s+98|port\s+\d+\s+is\s+(already\s+)?in\s+use|bind\(\)\s+failed)",
        description="the port is taken by another process",
        kind="environment",
    ),
    Signature(
        id="model-not-found",
        pattern=r"(?i)(RepositoryNotFoundError|HFValidationError:\s+Repo\s+id\s+must\s+be\s+in\s+the\s+form|(model|repo(sitory)?)\s+(path\s+)?.{0,80}\s+(not\s+found|does\s+not\s+exist)|No\s+such\s+file\s+or\s+directory:\s*'?[^']*(config\.json|\.safetensors)|Can't\s+load\s+the\s+configuration\s+of|is\s+not\s+a\s+local\s+folder\s+and\s+is\s+not\s+a\s+valid\s+model\s+identifier)",
        description="the model path or repository does not exist",
        kind="config",
    ),
    Signature(
        id="docker-gpu",
        pattern=r"(?i)(could\s+not\s+select\s+device\s+driver\s+(?:\"[^\"]*\")?\s*with\s+capabilities:\s*\[\[gpu\]\]|nvidia-container-cli:|Cannot\s+connect\s+to\s+the\s+Docker\s+daemon|docker:\s+Error\s+response\s+from\s+daemon)",
        description="docker cannot hand the GPU to the container (no NVIDIA container toolkit or daemon)",
        kind="environment",
    ),
)

# `hang` is not a log pattern: the runner assigns it when a run neither becomes ready nor dies.
HANG = "hang"
BUILTIN_IDS: tuple[str, ...] = (*(s.id for s in BUILTIN), HANG)


def all_signatures(extra: tuple[Signature, ...] = ()) -> tuple[Signature, ...]:
    """Config signatures first (they are the most specific a maintainer knows), then built-ins.

    A config signature with a built-in's id replaces it.
    """
    extra_ids = {s.id for s in extra}
    return (*extra, *(s for s in BUILTIN if s.id not in extra_ids))
