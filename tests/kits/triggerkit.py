"""The smoke-trigger test config (one pull blocker, one recipe, one page) and a remote runner's
result.json: shared by the trigger, hostile-network and matrix tests."""

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from kits.smokekit import REPO, free_port
from kits.watchtoml import load_watch
from watcher.config.model import recipe_digest
from watcher.core.clock import iso

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def config_text(extra: str = "", page_extra: str = "", command=None, smoke: str = "") -> str:
    command = command or ["true"]
    return f"""
[[item]]
id = "fix-pr"
repo = "up/eng"
kind = "pull"
number = 1

[[item]]
id = "context-issue"
repo = "up/eng"
kind = "issue"
number = 2

[[item]]
id = "other"
repo = "up/other"
kind = "issue"
number = 3

[[item]]
id = "sglang-releases"
repo = "sgl-project/sglang"
kind = "releases"
{extra}

[[blocker]]
id = "b1"
title = "The blocker"
items = ["fix-pr"]
watch = ["context-issue"]
signatures = ["marlin-tile-n"]

[[recipe]]
id = "r1"
engine = "sglang"
port = {free_port()}
startup_timeout = 10
stop_timeout = 2
blockers = ["b1"]
command = {json.dumps(command)}

[recipe.env]
PYTHONPATH = "{REPO}"

[[page]]
id = "p1"
title = "P1"
output = "out/P1.md"
blockers = ["b1"]
recipes = ["r1"]
{page_extra}

[smoke]
max_runs_per_day = 2
validation_max_age = "14d"
poll_interval = 0.01
{smoke}
"""


def make_cfg(tmp_path, **kw):
    return load_watch(tmp_path, config_text(**kw))


def gha_cfg(tmp_path):
    return make_cfg(tmp_path, smoke='backend = "github-actions"\nrepo = "org/guide"')


def digest_of(recipe_id: str) -> str:
    """The recipe digest a runner with the same watch.toml would put in result.json."""
    with tempfile.TemporaryDirectory() as d:
        return recipe_digest(make_cfg(Path(d)).recipe(recipe_id))


def remote_doc(inputs, outcome="passed"):
    return {
        "recipe_digest": digest_of(inputs["recipe"]),
        "run_id": inputs["run_id"],
        "recipe": inputs["recipe"],
        "outcome": outcome,
        "signature": None,
        "blockers_reproduced": [],
        "reason": "passed: ready in 80 s",
        "hardware": {
            "gpus": [{"name": "NVIDIA GeForce RTX 3090", "memory_mib": 24576}],
            "matches_target": True,
        },
        "engine_version": "0.5.9",
        "metrics": {"startup_s": 80.0, "ttft_s": 0.1, "decode_tokens_per_s": 40.0},
        "stage_reached": "passed",
        "excerpt": None,
        "log_path": "/runner/data/smoke/x.log",
        "started_at": iso(NOW),
        "finished_at": iso(NOW),
    }
