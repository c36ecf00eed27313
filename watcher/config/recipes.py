"""`[[recipe]]` tables: the launch (an argv `command`, or a compose file's `service`), hardware,
checks, environment, ports, the baseline it is compared with, and [recipe.source] (the engine's
published builds, for `watcher bisect`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from watcher.config.model import (
    DEFAULT_READY_PATH,
    ENGINES,
    TEMPLATE_KEYS,
    Checks,
    Hardware,
    Recipe,
    Source,
)
from watcher.config.reader import TableReader
from watcher.core.errors import ConfigError

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# A recipe in a comparison (it has a baseline, or is one) times more and longer repeats by
# default: the relative verdict's interval must resolve 5% on a quiet host (docs/smoke-runs.md).
COMPARED_CHECKS = Checks(repeats=10, decode_tokens=256)

# a run's timed generations, and a comparison's launches: bounded, so one trigger cannot hold
# the GPU for days
MAX_REPEATS = 50
MAX_COMPARE_ROUNDS = 10


FIRST_RUN = ("auto", "manual")  # who starts a recipe's first GPU run: a cycle, or the maintainer


def read_recipe(r: TableReader, baselines: frozenset[str] = frozenset()) -> Recipe:
    """One [[recipe]] table; `baselines`: the ids other recipes name as their baseline."""
    recipe_id = r.ident()
    engine = r.choice("engine", ENGINES, required=True)
    command = r.str_list("command")
    compose_file, service = r.get("compose", str), r.get("service", str)
    compared = recipe_id in baselines or r.table.get("baseline") is not None
    ch = COMPARED_CHECKS if compared else Checks()
    cr = r.sub("checks")
    if cr is not None:
        ch = Checks(
            prompt=cr.get("prompt", str, ch.prompt),
            expect=cr.get("expect", str, ch.expect),
            max_tokens=cr.get("max_tokens", int, ch.max_tokens),
            min_decode_tokens_per_s=cr.get("min_decode_tokens_per_s", float),
            min_accept_length=cr.get("min_accept_length", float),
            tool_call=cr.get("tool_call", bool, False),
            stream_tool_call=cr.get("stream_tool_call", bool, False),
            long_output_tokens=cr.get("long_output_tokens", int),
            repeats=cr.get("repeats", int, ch.repeats),
            decode_tokens=cr.get("decode_tokens", int, ch.decode_tokens),
        )
        if ch.long_output_tokens is not None and not 50 <= ch.long_output_tokens <= 32768:
            cr.fail("long_output_tokens", "must be between 50 and 32768")
        if ch.decode_tokens < 8:
            cr.fail("decode_tokens", f"must be at least 8 to time decode, got {ch.decode_tokens}")
        if not 1 <= ch.repeats <= MAX_REPEATS:
            cr.fail("repeats", f"must be between 1 and {MAX_REPEATS}, got {ch.repeats}")
        cr.done()
    env_r = r.sub("env")
    env: tuple[tuple[str, str], ...] = ()
    if env_r is not None:
        for k in env_r.table:
            if not _ENV_NAME.match(k):
                env_r.fail(k, "is not an environment variable name")
            env = (*env, (k, env_r.get(k, str)))
        env_r.done()
    pass_env = r.str_list("pass_env")
    for name in pass_env:
        if not _ENV_NAME.match(name):
            r.fail("pass_env", f"{name!r} is not an environment variable name")
    from_compose = None
    if compose_file is not None or service is not None:
        # read as the run will interpolate it: this environment, then the recipe's own `env`
        from_compose = _compose_recipe(
            r, command, compose_file, service, {**os.environ, **dict(env)}
        )
        command = from_compose.command
    if not command:
        r.fail(
            "command",
            "must be a non-empty list of strings (an argv list, never a shell string);"
            " or give `compose` and `service` instead",
        )
    hw = Hardware()
    if from_compose is not None and from_compose.gpu_count is not None:
        hw = Hardware(gpu_count=from_compose.gpu_count)
    hr = r.sub("hardware")
    if hr is not None:
        hw = Hardware(
            gpu_name=hr.get("gpu_name", str, hw.gpu_name),
            gpu_count=hr.get("gpu_count", int, hw.gpu_count),
            min_memory_mib=hr.get("min_memory_mib", int, hw.min_memory_mib),
        )
        hr.done()
    port = r.get("port", int, None)
    host_port = r.get("host_port", int)
    if from_compose is not None:
        port = port or from_compose.container_port
        host_port = host_port or from_compose.host_port
    port = port or 30000
    rec = Recipe(
        id=recipe_id,
        engine=engine,
        command=command,
        title=r.get("title", str, ""),
        model=r.get("model", str, ""),
        port=port,
        host_port=host_port,
        ready_path=r.get("ready_path", str, DEFAULT_READY_PATH[engine]),
        startup_timeout=r.duration("startup_timeout", 900.0),
        stop_timeout=r.duration("stop_timeout", 30.0),
        probe_timeout=r.duration("probe_timeout", 600.0),
        spec_decode=r.get("spec_decode", bool, False),
        hardware=hw,
        checks=ch,
        blockers=r.str_list("blockers"),
        env=env,
        pass_env=pass_env,
        notes=r.get("notes", str, ""),
        compose=compose_file,
        service=service,
        quant=r.get("quant", str, ""),
        spec_method=r.get("spec_method", str, ""),
        baseline=r.get("baseline", str),
        min_speed_vs_baseline=r.get("min_speed_vs_baseline", float),
        max_ttft_vs_baseline=r.get("max_ttft_vs_baseline", float),
        compare_rounds=r.get("compare_rounds", int, 1),
        rig_baselines=r.str_list("rig_baselines"),
        first_run=r.choice("first_run", FIRST_RUN),
        source=_source(r.sub("source"), engine),
        image_written=_image_written(from_compose),
    )
    for key in ("min_speed_vs_baseline", "max_ttft_vs_baseline"):
        value = getattr(rec, key)
        if value is not None and value <= 0:
            r.fail(key, f"must be a positive ratio, got {value}")
        if value is not None and not rec.baseline:
            r.fail(key, "needs a 'baseline' recipe to compare with")
    if rec.rig_baselines and not rec.baseline:
        r.fail("rig_baselines", "needs a 'baseline' recipe first (the one for the target rig)")
    if not 1 <= rec.compare_rounds <= MAX_COMPARE_ROUNDS:
        r.fail(
            "compare_rounds",
            f"must be between 1 and {MAX_COMPARE_ROUNDS}, got {rec.compare_rounds}"
            " (each round launches the recipe and its baseline once)",
        )
    r.done()
    return rec


def _compose_recipe(r: TableReader, command, compose_file, service, environ):
    """`compose` + `service` instead of `command`: the file is read now, so a wrong path or
    service name fails at load time with the recipe's name."""
    from watcher.config.composefile import read_service

    if command:
        r.fail("command", "a recipe has either `command` or `compose` + `service`, not both")
    if compose_file is None or service is None:
        missing = "compose" if compose_file is None else "service"
        r.fail(missing, "is required with `compose`/`service` (the file and the service to run)")
    path = Path(compose_file)
    if not path.is_absolute():
        path = r.file.parent / path
    try:
        return read_service(path, service, shown_as=compose_file, environ=environ)
    except ConfigError as e:
        r.fail("compose", str(e))


SOURCE_EVERY = ("release", "commit", "day")
_ENGINE_REPOS = {"sglang": "sgl-project/sglang", "vllm": "vllm-project/vllm"}


def _source(r: TableReader | None, engine: str) -> Source | None:
    if r is None:
        return None
    repo = r.get("repo", str, _ENGINE_REPOS.get(engine))
    if not repo or not re.match(r"^[\w.-]+/[\w.-]+$", repo):
        r.fail("repo", "must name the engine's GitHub repository (owner/name)")
    s = Source(
        repo=repo,
        every=r.choice("every", SOURCE_EVERY, "release"),
        image=r.get("image", str),
        tag=r.get("tag", str),
        requirement=r.get("requirement", str),
        index=r.get("index", str),
    )
    if bool(s.image) == bool(s.requirement):
        r.fail("image", "give either 'image' (with 'tag') or 'requirement', not both or neither")
    if s.tag and not s.image:
        r.fail("tag", "goes with 'image'")
    if s.index and not s.requirement:
        r.fail("index", "goes with 'requirement'")
    for key in ("tag", "requirement"):
        text = getattr(s, key) or ""
        unknown = set(re.findall(r"\{(\w+)\}", text)) - set(TEMPLATE_KEYS)
        if unknown:
            r.fail(
                key,
                f"unknown placeholder {{{sorted(unknown)[0]}}} (known: {', '.join(TEMPLATE_KEYS)})",
            )
    if s.every != "release" and not re.search(
        r"\{(sha|sha8)\}", (s.tag or "") + (s.requirement or "")
    ):
        r.fail(
            "every",
            f"'{s.every}' builds are named by commit: the template needs {{sha}} or {{sha8}}",
        )
    r.done()
    return s


def _image_written(service) -> str:
    """The compose image a pin is read from: interpolated where every variable is known, else as
    written (a tag left to a variable the launcher fills, `nightly-${VLLM_NIGHTLY_SHA}`, is said
    to be unknowable, not read as the empty tag `nightly-`)."""
    if service is None:
        return ""
    if service.image_vars or not service.image:
        return service.image_text
    return service.image
