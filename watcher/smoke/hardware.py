"""Which GPUs this host has, and whether they are the ones a recipe targets.

NVML (nvidia-ml-py) first, `nvidia-smi` as the fallback. The match is by name: an A10, an RTX A5000
and an RTX 3090 Ti all have 24 GiB and compute capability 8.6, and none of them is an RTX 3090.
Set WATCHER_GPU_SOURCE=nvidia-smi to skip NVML (tests put a fake nvidia-smi on PATH).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass

from watcher.config.model import Hardware

# Words that say who sells the card, not which card it is.
_VENDOR = {"nvidia", "geforce", "tesla", "quadro"}
# Words that name a form factor or memory size of the same chip (H100 SXM5 80GB is an H100).
_FORM = re.compile(r"^(sxm\d*|pcie|nvl|\d+gb|hbm\d*e?|lhr|mig.*)$")


@dataclass(frozen=True)
class Gpu:
    name: str
    memory_mib: int
    compute_capability: str  # "8.6"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class GpuReading:
    """What was seen, how, and why nothing was (when nothing was)."""

    gpus: tuple[Gpu, ...]
    source: str  # nvml | nvidia-smi | none
    error: str | None = None


def _tokens(name: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", name.lower()) if t not in _VENDOR]


def name_matches(target: str, actual: str) -> bool:
    """'RTX 3090' matches 'NVIDIA GeForce RTX 3090' but not '... RTX 3090 Ti' nor 'RTX A5000'.

    Every word of the model must be equal; the actual name may add only vendor and form-factor
    words (GeForce, SXM5, 80GB), never a model word such as Ti or Super.
    """
    want = _tokens(target)
    have = [t for t in _tokens(actual) if not _FORM.match(t) or t in want]
    return bool(want) and have == want


def _read_nvml() -> GpuReading:
    import pynvml  # nvidia-ml-py

    pynvml.nvmlInit()
    try:
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            if isinstance(name, bytes):
                name = name.decode("utf-8", "replace")
            mem = pynvml.nvmlDeviceGetMemoryInfo(h).total // (1024 * 1024)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            gpus.append(Gpu(name, int(mem), f"{major}.{minor}"))
        return GpuReading(tuple(gpus), "nvml")
    finally:
        pynvml.nvmlShutdown()


def parse_nvidia_smi(text: str) -> tuple[Gpu, ...]:
    """`name, memory.total, compute_cap` CSV lines (noheader, nounits) -> GPUs."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.rsplit(",", 2)]
        if len(parts) != 3:
            raise ValueError(f"unexpected nvidia-smi line: {line!r}")
        name, mem, cc = parts
        gpus.append(Gpu(name, int(float(mem)), cc))
    return tuple(gpus)


def _read_smi(timeout: float = 20.0) -> GpuReading:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return GpuReading(
            (), "none", "no NVIDIA driver: NVML unavailable and no nvidia-smi on PATH"
        )
    try:
        out = subprocess.run(
            [
                exe,
                "--query-gpu=name,memory.total,compute_cap",
                "--format=csv,noheader,nounits",
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return GpuReading((), "none", f"nvidia-smi failed: {e}")
    if out.returncode != 0:
        msg = (out.stderr or out.stdout).strip().splitlines()
        return GpuReading(
            (), "none", f"nvidia-smi exited {out.returncode}: {msg[0] if msg else ''}".strip()
        )
    try:
        return GpuReading(parse_nvidia_smi(out.stdout), "nvidia-smi")
    except ValueError as e:
        return GpuReading((), "none", str(e))


def read_gpus() -> GpuReading:
    """Never raises: a host without a driver is an answer (no GPUs), not an error."""
    nvml_error = None
    if os.environ.get("WATCHER_GPU_SOURCE", "").lower() != "nvidia-smi":
        try:
            return _read_nvml()
        except Exception as e:  # NVMLError_LibraryNotFound, DriverNotLoaded, ImportError ...
            nvml_error = f"NVML: {type(e).__name__}: {e}"
    reading = _read_smi()
    if reading.gpus or not nvml_error:
        return reading
    return GpuReading((), "none", f"{nvml_error}; {reading.error}")


@dataclass(frozen=True)
class Gate:
    matches_target: bool
    reason: str


def check_hardware(target: Hardware, reading: GpuReading) -> Gate:
    """Does this host have `gpu_count` GPUs named `gpu_name` with at least `min_memory_mib`?"""
    if not reading.gpus:
        return Gate(False, f"no GPU found ({reading.error or 'none reported'})")
    fitting = [
        g
        for g in reading.gpus
        if name_matches(target.gpu_name, g.name) and g.memory_mib >= target.min_memory_mib
    ]
    seen = ", ".join(
        f"{g.name} ({g.memory_mib} MiB, cc {g.compute_capability})" for g in reading.gpus
    )
    want = f"{target.gpu_count}× {target.gpu_name} with ≥ {target.min_memory_mib} MiB"
    if len(fitting) >= target.gpu_count:
        return Gate(True, f"target hardware: {want}; found {seen}")
    return Gate(False, f"not the target hardware: needs {want}; found {seen}")
