"""Flag-gated paths: a blocker whose code runs only behind a launch flag that none of its
recipes passes (SGLang builds OffloaderV1 only with `--cpu-offload-gb` above 0) can neither
reproduce nor clear in a smoke run.

A small table of known gates, read from what the blocker names (its description, its code
items' labels, paths and regexes) and what its recipes run; a recipe whose command cannot be
read (a compose file gone) is not warned about. A table rather than a per-blocker key: the
maintainer who did not know the gate is the one who would not have written the key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from watcher.config import composecmd
from watcher.config.model import Blocker, Config, Recipe
from watcher.core.errors import ConfigError


def _number(value: str | None) -> float:
    try:
        return float(value or 0)
    except ValueError:
        return 0.0


@dataclass(frozen=True)
class Gate:
    """A path an engine takes only when a launch flag turns it on."""

    what: str  # the path, in words
    names: re.Pattern[str]  # how a blocker or its code item names it
    flag: str  # what turns it on, as the warning says it
    on: Callable[[list[str]], bool]  # does this argv turn it on?


GATES = (
    Gate(
        "CPU offload (SGLang's OffloaderV1, vLLM's CPU offloader)",
        re.compile(r"(?i)\boffload\w*|\bcpu[-_ ]offload\w*"),
        "--cpu-offload-gb above 0",
        lambda w: _number(composecmd.flag_value(w, "--cpu-offload-gb")) > 0,
    ),
    Gate(
        "speculative decoding",
        re.compile(
            r"(?i)\b(?:spec(?:ulative)?[-_ ]?decod\w*|speculat\w*|eagle\d*|mtp|nextn|draft(?:s|ing)?)\b"
        ),
        "a spec-decode method (--speculative-algorithm, --speculative-config, a draft model)",
        lambda w: bool(composecmd.spec_method(w)),
    ),
    Gate(
        "the extra_buffer mamba scheduler strategy",
        re.compile(r"(?i)\bextra[-_]buffer\b"),
        "--mamba-scheduler-strategy extra_buffer",
        lambda w: composecmd.flag_value(w, "--mamba-scheduler-strategy") == "extra_buffer",
    ),
)


def named_text(cfg: Config, blocker: Blocker) -> list[tuple[str, str]]:
    """(where, text) the blocker names its paths in: its description and its code items."""
    out = [("its description", blocker.description)]
    for item_id in blocker.items:
        item = cfg.item(item_id)
        if item.kind == "code":
            for text in (item.label, *item.paths, *item.present, *item.absent):
                out.append((f"its code item {item.id}", text))
    return out


def recipe_words(cfg: Config, recipe: Recipe) -> list[str] | None:
    """What a recipe runs, as argv words (a compose service's entrypoint and command); None when
    that cannot be told."""
    if not recipe.compose or not recipe.service:
        return list(recipe.command)
    from watcher.config.composefile import read_service

    try:
        svc = read_service(
            cfg.resolve(recipe.compose),
            recipe.service,
            environ={**os.environ, **dict(recipe.env)},
        )
    except (ConfigError, OSError):
        return None
    return list(svc.words)


def unexercised(cfg: Config) -> list[str]:
    """One sentence per blocker and gate: it names the gated path, none of its recipes turns it
    on (a recipe whose command cannot be read counts as turning it on: it cannot be told)."""
    out = []
    for b in cfg.blockers:
        recipes = [r for r in cfg.recipes if b.id in r.blockers]
        if not recipes:
            continue
        words = [recipe_words(cfg, r) for r in recipes]
        for gate in GATES:
            where = next((w for w, text in named_text(cfg, b) if gate.names.search(text)), None)
            if where is None or any(w is None or gate.on(w) for w in words):
                continue
            ids = ", ".join(r.id for r in recipes)
            out.append(
                f"{cfg.path}: [blocker.{b.id}] {where} names {gate.what}, which only runs with"
                f" {gate.flag}, and none of its recipes ({ids}) has it: a smoke run can neither"
                f" reproduce nor clear it\n  fix: add it to a recipe that carries this blocker,"
                " as the guide's compose file does, or take the blocker off recipes that cannot"
                " reach it"
            )
    return out
