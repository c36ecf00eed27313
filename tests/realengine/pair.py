"""The known speed pair on the real engine: the tiny model as the baseline and the truly slower one
(vllm.BIG) as the candidate, the same vLLM command, one comparison session of `watcher smoke`.

Shared by tests/smoke/test_real_engine.py and bench/real_pair.py, so the ratio the bench measured
over sessions is the ratio of the pair the test runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from kits.smokekit import free_port

from realengine import vllm

# Floors judged against the stored figures: the tiny-vs-big ratio measured by bench/real_pair.py
# (docs/benchmarks.md) lies inside KNOWN; FAR_BELOW and FAR_ABOVE are 2x or more beyond its edges.
KNOWN = (0.06, 0.2)
FAR_BELOW = (0.01, 0.02, 0.03)
FAR_ABOVE = (0.4, 0.6, 0.95)


def _recipe(rid: str, command: list[str], model: Path, extra: str = "") -> str:
    env = "\n".join(f'{k} = "{v}"' for k, v in vllm.ENV.items())
    return (
        f'\n[[recipe]]\nid = "{rid}"\ntitle = "{rid}"\nengine = "vllm"\nmodel = "{model}"\n'
        f'port = {free_port()}\nstartup_timeout = "10m"\nstop_timeout = 20\n'
        f"command = {json.dumps(command)}\n{extra}"
        f'[recipe.hardware]\ngpu_name = "RTX 3090"\n[recipe.checks]\nexpect = ""\n'
        f"[recipe.env]\n{env}\n"
    )


def config(
    path: Path, python: Path, tiny: Path, big: Path, floor: float = 0.01, rounds: int = 1
) -> Path:
    """watch.toml: `pair-tiny` (the baseline) and `pair-big`, compared in `rounds` rounds."""
    cmd = vllm.command(python)
    text = (
        '[watcher]\ndata_dir = "data"\nsite_dir = "site"\n'
        + _recipe("pair-tiny", cmd, tiny)
        + _recipe(
            "pair-big", cmd, big,
            f'baseline = "pair-tiny"\nmin_speed_vs_baseline = {floor}\n'
            f"compare_rounds = {rounds}\n",
        )
    )  # fmt: skip
    path.write_text(text, encoding="utf-8")
    return path
