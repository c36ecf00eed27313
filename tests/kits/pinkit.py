"""The pins' test world: one vLLM page blocked by the Marlin pad fix (vllm#45295), one recipe."""

from __future__ import annotations

import json

VLLM = "vllm-project/vllm"


def marlin_watch(command: list[str], head: str = "") -> str:
    """watch.toml text: the fix item, its blocker, recipe `vllm-tp2` running `command`, page
    `vllm` (written to out/VLLM.md); `head` goes first (a [watcher] table)."""
    return f"""{head}
[[item]]
id = "marlin-fix"
repo = "{VLLM}"
kind = "pull"
number = 45295

[[blocker]]
id = "marlin-pad"
title = "Marlin pad"
items = ["marlin-fix"]

[[recipe]]
id = "vllm-tp2"
engine = "vllm"
blockers = ["marlin-pad"]
command = {json.dumps(command)}

[[page]]
id = "vllm"
title = "vLLM"
output = "out/VLLM.md"
blockers = ["marlin-pad"]
recipes = ["vllm-tp2"]
"""
