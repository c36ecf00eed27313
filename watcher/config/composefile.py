"""A guide's docker compose file, read for what a recipe needs: the service's image, the port it
publishes, the GPUs it reserves, and (for `watcher init --scan-composes`) what the path says.

Only the parts watcher uses are read; anything it cannot tell (a port only known at run time, a
`count: all` reservation) is left None and said so, never guessed. pyyaml is a run-time
dependency for this module alone.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from watcher.core.errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class ComposeService:
    """One service of a compose file, as a recipe runs it."""

    file: Path
    shown_as: str  # the path as the config wrote it (for the display command)
    service: str
    image: str = ""
    image_text: str = ""  # as written, before ${VAR} substitution
    container_port: int | None = None
    host_port: int | None = None  # None: ephemeral or unknown; `docker compose port` tells later
    gpu_count: int | None = None  # None: none reserved, or `count: all` (unknown until run)
    gpus_all: bool = False
    unknown: tuple[str, ...] = field(default_factory=tuple)  # what could not be told, in words

    @property
    def command(self) -> tuple[str, ...]:
        """What a reader would type (and what the page shows); `{name}` is the run's project."""
        return (
            "docker", "compose", "-f", self.shown_as, "-p", "{name}", "up", "-d", self.service,
        )  # fmt: skip


def interpolate(text: str, environ: dict[str, str] | None = None) -> str | None:
    """Compose's `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `$VAR`; None when one is unset
    and has no default (the value is not knowable here)."""
    environ = os.environ if environ is None else environ
    missing = False

    def sub(m: re.Match) -> str:
        nonlocal missing
        name = m.group(1) or m.group(4)
        op, default = m.group(2), m.group(3)
        value = environ.get(name)
        if value is None or (op == ":-" and value == ""):
            if op is None:
                missing = True
                return ""
            return default or ""
        return value

    out = _VAR.sub(sub, text.replace("$$", "\0")).replace("\0", "$")
    return None if missing else out


def load(path: Path) -> dict[str, Any]:
    """The parsed file; ConfigError for a missing file, bad YAML, or no `services:`."""
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
    return data


def _ports(spec: Any, environ) -> list[tuple[int | None, int]]:
    """(published, target) pairs from short (`"8020:30000"`, `"127.0.0.1:8020:30000/tcp"`) and
    long (`{target, published}`) syntax; ranges and unresolved variables are skipped."""
    out: list[tuple[int | None, int]] = []
    for entry in spec if isinstance(spec, list) else []:
        if isinstance(entry, dict):
            target, published = entry.get("target"), entry.get("published")
            target = interpolate(str(target), environ) if target is not None else None
            published = interpolate(str(published), environ) if published is not None else None
            if target and target.isdigit():
                pub = int(published) if published and published.isdigit() else None
                out.append((pub, int(target)))
            continue
        text = interpolate(str(entry), environ)
        if text is None:
            continue
        parts = text.split("/", 1)[0].split(":")
        if len(parts) == 3:  # ip:published:target
            parts = parts[1:]
        if not parts or not all(p.isdigit() for p in parts) or len(parts) > 2:
            continue
        if len(parts) == 1:
            out.append((None, int(parts[0])))
        else:
            out.append((int(parts[0]), int(parts[1])))
    return out


def _flat(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _gpus(svc: dict[str, Any]) -> tuple[int | None, bool]:
    """(count, all) from deploy.resources.reservations.devices, `gpus:`, or NVIDIA_VISIBLE_DEVICES."""
    deploy = svc.get("deploy") or {}
    reservations = (deploy.get("resources") or {}).get("reservations") or {}
    total, every = 0, False
    for d in reservations.get("devices") or []:
        if not isinstance(d, dict):
            continue
        caps = [c for group in (d.get("capabilities") or []) for c in _flat(group)]
        if caps and "gpu" not in caps and d.get("driver") != "nvidia":
            continue
        if d.get("device_ids"):
            total += len(d["device_ids"])
        elif str(d.get("count", "all")).lower() == "all" or d.get("count") == -1:
            every = True
        elif str(d.get("count")).isdigit():
            total += int(d["count"])
    gpus = svc.get("gpus")
    if gpus == "all":
        every = True
    elif isinstance(gpus, list):
        for d in gpus:
            if isinstance(d, dict) and str(d.get("count", "")).isdigit():
                total += int(d["count"])
            elif isinstance(d, dict) and d.get("device_ids"):
                total += len(d["device_ids"])
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env if isinstance(e, str) and "=" in e)
    visible = str(env.get("NVIDIA_VISIBLE_DEVICES") or env.get("CUDA_VISIBLE_DEVICES") or "")
    if not total and not every and visible:
        if visible == "all":
            every = True
        elif re.fullmatch(r"\d+(,\d+)*", visible):
            total = len(visible.split(","))
    return (total or None), every


def read_service(
    path: Path, service: str, shown_as: str | None = None, environ: dict | None = None
) -> ComposeService:
    """The service `service` of the compose file at `path`; ConfigError names what is wrong."""
    data = load(path)
    services = data["services"]
    if service not in services:
        known = ", ".join(sorted(services)) or "none"
        raise ConfigError(f"compose file {path} has no service {service!r} (it has: {known})")
    svc = services[service] or {}
    if not isinstance(svc, dict):
        raise ConfigError(f"compose file {path}: service {service!r} is not a table")
    image = interpolate(str(svc.get("image") or ""), environ) or ""
    ports = _ports(svc.get("ports"), environ)
    count, every = _gpus(svc)
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
    if every:
        unknown.append("reserves all GPUs (`count: all`): the GPU count is the recipe's to say")
    elif count is None:
        unknown.append("reserves no GPU (no deploy.resources.reservations.devices)")
    if not image:
        unknown.append("no image (built locally?): the engine cannot be told from it")
    return ComposeService(
        file=path,
        shown_as=shown_as or str(path),
        service=service,
        image=image,
        image_text=str(svc.get("image") or ""),
        container_port=container_port,
        host_port=host_port,
        gpu_count=count,
        gpus_all=every,
        unknown=tuple(unknown),
    )


# ---------------------------------------------------------------- guessing, for init


ENGINE_IMAGES = (
    ("ik_llama.cpp", re.compile(r"ik[_-]?llama", re.I)),
    ("llama.cpp", re.compile(r"llama[._-]?cpp|ggml-org/llama", re.I)),
    ("sglang", re.compile(r"sglang", re.I)),
    ("vllm", re.compile(r"vllm", re.I)),
)


def guess_engine(text: str) -> str | None:
    """The engine an image reference (or a path) names, or None."""
    for engine, pattern in ENGINE_IMAGES:
        if pattern.search(text):
            return engine
    return None


def path_labels(path: Path) -> dict[str, str]:
    """What a guide's layout `models/<model>/<engine>/compose/<topology>/<quant>/<variant>.yml`
    says; keys the path does not hold are left out."""
    parts = path.with_suffix("").parts
    out: dict[str, str] = {}
    if "compose" in parts:
        i = len(parts) - 1 - parts[::-1].index("compose")
        if i >= 2:
            out["model"], out["engine_dir"] = parts[i - 2], parts[i - 1]
        rest = parts[i + 1 :]
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
    """The spec-decode method a variant's name says ('eagle3-experimental' -> 'eagle3'), or ''."""
    m = _SPEC_WORDS.search(re.sub(r"[-_.]", " ", text))
    return m.group(1).lower() if m else ""
