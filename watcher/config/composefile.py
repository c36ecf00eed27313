"""A guide's docker compose file, read for what a recipe needs: the service's image, the port it
publishes, the GPUs it reserves, its header's Status, what it runs, and (for `watcher init
--scan-composes`) what the path says.

The file is interpolated as `docker compose` would (interpolate.py) before anything is read.
Anything it cannot tell (a port only known at run time, `count: all` alone) is left None and said
so, never guessed. pyyaml is a run-time dependency for this module alone.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from watcher.core.errors import ConfigError


@dataclass(frozen=True)
class ComposeService:
    """One service of a compose file, as a recipe runs it (read after Compose's interpolation)."""

    file: Path
    shown_as: str  # the path as the config wrote it (for the display command)
    service: str
    image: str = ""
    image_text: str = ""  # as written, before ${VAR} substitution
    container_port: int | None = None
    host_port: int | None = None  # None: ephemeral or unknown; `docker compose port` tells later
    gpu_count: int | None = None  # None: not told by the file (`count: all` alone is no count)
    gpu_source: str = ""  # where gpu_count came from, in words
    gpus_all: bool = False
    unknown: tuple[str, ...] = field(default_factory=tuple)  # what could not be told, in words
    required: tuple[tuple[str, str], ...] = ()  # `${X:?msg}` variables unset: (name, message)
    unset: tuple[str, ...] = ()  # variables with no value and no default (Compose: empty)
    image_vars: tuple[str, ...] = ()  # variables in `image:` that have no default
    status: str = ""  # the header's Status word: production, parked, deprecated, ...
    status_text: str = ""  # the header's whole Status value
    spec_method: str = ""  # from the flags the service runs
    model: str = ""  # from --model / -m
    engine_profile: str = ""  # the header's Engine-profile:
    words: tuple[str, ...] = ()  # what it runs: entrypoint and command as argv words

    @property
    def command(self) -> tuple[str, ...]:
        """What a reader would type (and what the page shows); `{name}` is the run's project."""
        return (
            "docker", "compose", "-f", self.shown_as, "-p", "{name}", "up", "-d", self.service,
        )  # fmt: skip


def load(path: Path) -> dict[str, Any]:
    """The parsed file; ConfigError for a missing file, bad YAML, or no `services:`."""
    return _load(path)[0]


def _load(path: Path) -> tuple[dict[str, Any], str]:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read compose file {path}: {e.strerror or e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"compose file {path} is not valid YAML: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("services"), dict):
        raise ConfigError(f"compose file {path} has no `services:` table")
    return data, text


def _ports(spec: Any) -> list[tuple[int | None, int]]:
    """(published, target) pairs from short (`"8020:30000"`, `"127.0.0.1:8020:30000/tcp"`) and
    long (`{target, published}`) syntax, already interpolated; ranges are skipped."""
    out: list[tuple[int | None, int]] = []
    for entry in spec if isinstance(spec, list) else []:
        if isinstance(entry, dict):
            target, published = str(entry.get("target", "")), str(entry.get("published", ""))
            if target.isdigit():
                out.append((int(published) if published.isdigit() else None, int(target)))
            continue
        parts = str(entry).split("/", 1)[0].rsplit(":", 2)
        if len(parts) == 3:  # ip:published:target (an IPv6 ip keeps its own colons)
            parts = parts[1:]
        if not parts or not all(p.isdigit() for p in parts):
            continue
        if len(parts) == 1:
            out.append((None, int(parts[0])))
        else:
            out.append((int(parts[0]), int(parts[1])))
    return out


def _flat(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _ids(value: Any) -> list[str]:
    """Every GPU id in a device_ids list, several in one string included (`['0,1']`)."""
    return [i.strip() for v in _flat(value) for i in v.split(",") if i.strip()]


def _gpus(svc: dict[str, Any]) -> tuple[int | None, str, bool]:
    """(count, where it came from, all) from deploy.resources.reservations.devices, `gpus:`,
    or NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES ids."""
    deploy = svc.get("deploy") or {}
    reservations = (deploy.get("resources") or {}).get("reservations") or {}
    total, every, source = 0, False, ""
    for d in reservations.get("devices") or []:
        if not isinstance(d, dict):
            continue
        caps = [c for group in (d.get("capabilities") or []) for c in _flat(group)]
        if caps and "gpu" not in caps and d.get("driver") != "nvidia":
            continue
        if d.get("device_ids"):
            ids = _ids(d["device_ids"])
            total, source = total + len(ids), f"device_ids {','.join(ids)}"
        elif str(d.get("count", "all")).lower() == "all" or str(d.get("count")) == "-1":
            every = True
        elif str(d.get("count")).isdigit():
            total, source = total + int(d["count"]), f"count: {d['count']}"
    gpus = svc.get("gpus")
    if gpus == "all":
        every = True
    elif isinstance(gpus, list):
        for d in gpus:
            if isinstance(d, dict) and str(d.get("count", "")).isdigit():
                total, source = total + int(d["count"]), f"gpus count: {d['count']}"
            elif isinstance(d, dict) and d.get("device_ids"):
                ids = _ids(d["device_ids"])
                total, source = total + len(ids), f"gpus device_ids {','.join(ids)}"
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env if isinstance(e, str) and "=" in e)
    for key in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        visible = str(env.get(key) or "")
        if total or not visible:
            continue
        if visible == "all":
            every = True
        elif re.fullmatch(r"\d+(,\d+)*", visible):
            total, source = len(visible.split(",")), f"{key}={visible}"
    return (total or None), source, every


def read_service(
    path: Path, service: str, shown_as: str | None = None, environ: dict | None = None
) -> ComposeService:
    """The service `service` of the compose file at `path`, interpolated as Compose would with
    `environ` (default: this process's) and the `.env` beside the file; ConfigError names what
    is wrong."""
    from watcher.config import composecmd
    from watcher.config.interpolate import Seen, compose_environ, walk

    raw, text = _load(path)
    services = raw["services"]
    if service not in services:
        known = ", ".join(sorted(services)) or "none"
        raise ConfigError(f"compose file {path} has no service {service!r} (it has: {known})")
    if not isinstance(services[service] or {}, dict):
        raise ConfigError(f"compose file {path}: service {service!r} is not a table")
    env = compose_environ(path, os.environ if environ is None else environ)
    seen = Seen()
    try:
        data = walk(raw, env, seen)
    except ConfigError as e:
        raise ConfigError(f"compose file {path}: {e}") from None
    svc = data["services"][service] or {}
    raw_image = str((services[service] or {}).get("image") or "")
    image_seen = Seen()
    image = walk(raw_image, env, image_seen)
    head = composecmd.header(text)
    words = composecmd.runs(svc)
    ports = _ports(svc.get("ports"))
    count, source, every = _gpus(svc)
    if count is None:
        for key in ("requires-min-gpu-count", "tensor-parallel"):
            n = composecmd.header_int(head, key)
            if n:
                count, source = n, f"the header's {key.title()}: {n}"
                break
    if count is None:
        tp = composecmd.tensor_parallel(words)
        if tp:
            count, source = tp, f"the command's tensor-parallel size {tp}"
    unknown = []
    host_port = container_port = None
    if ports:
        host_port, container_port = ports[0]
        if host_port is None:
            unknown.append(
                f"port {container_port} is published on an ephemeral host port:"
                " `docker compose port` tells at run time"
            )
    else:
        unknown.append("no published port (give the recipe `port` and `host_port`)")
    if count is None and every:
        unknown.append("reserves all GPUs (`count: all`): the GPU count is the recipe's to say")
    elif count is None:
        unknown.append("reserves no GPU (no deploy.resources.reservations.devices)")
    if not image:
        unknown.append("no image (built locally?): the engine cannot be told from it")
    status_text = head.get("status", "")
    return ComposeService(
        file=path,
        shown_as=shown_as or str(path),
        service=service,
        image=image,
        image_text=raw_image,
        container_port=container_port,
        host_port=host_port,
        gpu_count=count,
        gpu_source=source,
        gpus_all=every,
        unknown=tuple(unknown),
        required=tuple(seen.required.items()),
        unset=tuple(seen.unset),
        image_vars=tuple(image_seen.unset),
        status=composecmd.status_word(status_text),
        status_text=status_text,
        spec_method=composecmd.spec_method(words),
        model=composecmd.model(words),
        engine_profile=head.get("engine-profile", ""),
        words=tuple(words),
    )


# ---------------------------------------------------------------- guessing, for init

# The guide's engine folders (models/<model>/<engine>/compose/...): forks it runs as engines of
# their own keep their own label. Decided by the folder first, then by the image.
ENGINE_DIRS = {
    "vllm": "vllm",
    "sglang": "sglang",
    "llama-cpp": "llama.cpp",
    "llama_cpp": "llama.cpp",
    "llama.cpp": "llama.cpp",
    "llamacpp": "llama.cpp",
    "ik-llama": "ik_llama.cpp",
    "ik_llama": "ik_llama.cpp",
    "ik-llama-cpp": "ik_llama.cpp",
    "ik_llama.cpp": "ik_llama.cpp",
    "beellama": "beellama",
    "llamacpp-club3090": "llamacpp-club3090",
    "vllm-omni": "vllm-omni",
    "vllm-lmcache": "vllm-lmcache",
}
ENGINE_IMAGES = (  # forks before the engines their names contain
    ("beellama", re.compile(r"beellama", re.I)),
    ("llamacpp-club3090", re.compile(r"llamacpp-club3090", re.I)),
    ("vllm-omni", re.compile(r"vllm[._-]?omni", re.I)),
    ("vllm-lmcache", re.compile(r"lmcache", re.I)),
    ("ik_llama.cpp", re.compile(r"ik[_-]?llama", re.I)),
    ("llama.cpp", re.compile(r"llama[._-]?cpp|ggml-org/llama", re.I)),
    ("sglang", re.compile(r"sglang", re.I)),
    ("vllm", re.compile(r"vllm", re.I)),
)


def guess_engine(text: str) -> str | None:
    """The engine an image reference names, or None."""
    for engine, pattern in ENGINE_IMAGES:
        if pattern.search(text):
            return engine
    return None


def engine_of(engine_dir: str, image: str) -> tuple[str | None, str]:
    """(engine, how it was told): the guide's engine folder first, then the image."""
    if engine_dir.lower() in ENGINE_DIRS:
        return ENGINE_DIRS[engine_dir.lower()], f"the engine folder {engine_dir!r}"
    engine = guess_engine(image)
    return engine, f"the image {image!r}" if engine else ""


ARCHIVE = "_archive"


def path_labels(path: Path) -> dict[str, str]:
    """What a guide's layout `models/<model>/<engine>/compose/<topology>/<quant>/<variant>.yml`
    says (also under `compose/_archive/`, then `archived` is set); keys the path does not hold
    are left out."""
    parts = path.with_suffix("").parts
    out: dict[str, str] = {}
    if "compose" in parts:
        i = len(parts) - 1 - parts[::-1].index("compose")
        if i >= 2:
            out["model"], out["engine_dir"] = parts[i - 2], parts[i - 1]
        rest = parts[i + 1 :]
        if rest[:1] == (ARCHIVE,):
            out["archived"], rest = "yes", rest[1:]
        if rest:
            out["variant"] = rest[-1]
        if len(rest) >= 2:
            out["topology"] = rest[0]
        if len(rest) >= 3:
            out["quant"] = rest[-2]
    return out


TOPOLOGY_GPUS = {"single": 1, "dual": 2, "quad": 4, "multi4": 4, "multi8": 8}
_SPEC_WORDS = re.compile(r"\b(eagle\d*|mtp|ngram|dflash|medusa|draft)\b", re.I)


def spec_method(text: str) -> str:
    """The spec-decode method a variant's name says ('eagle3-experimental' -> 'eagle3'), or ''.
    Only a hint: what the service runs decides (`ComposeService.spec_method`)."""
    m = _SPEC_WORDS.search(re.sub(r"[-_.]", " ", text))
    return m.group(1).lower() if m else ""
