"""A blocker behind a launch flag none of its recipes passes: `validate` warns (issue 33, item 2).

SGLang builds OffloaderV1 only when --cpu-offload-gb is above 0; the shipped TP=1 recipes now
offload like the guide's single-card compose, and a list whose recipes cannot reach a blocker's
path says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kits.watchtoml import load_watch

from watcher.config.gates import unexercised
from watcher.config.load import load_config

REPO = Path(__file__).resolve().parents[2]

OFFLOADER = """
[[item]]
id = "offloader"
repo = "sgl-project/sglang"
kind = "code"
label = "OffloaderV1 handles tied weights"
paths = ["python/sglang/srt/utils/offloader.py"]
present = ['tie_weights\\s*=\\s*False']

[[blocker]]
id = "tied"
title = "Tied weights on one card"
description = "The model loads on one card only with part of it kept in host memory."
items = ["offloader"]
"""


def recipe(rid: str, *flags: str, blockers: str = '"tied"') -> str:
    argv = ["python", "-m", "sglang.launch_server", "--model-path", "/m", *flags]
    quoted = ", ".join(f'"{a}"' for a in argv)
    return f'[[recipe]]\nid = "{rid}"\nengine = "sglang"\nblockers = [{blockers}]\ncommand = [{quoted}]\n'


def test_the_shipped_tp1_recipes_offload_like_the_guides_single_card_compose():
    cfg = load_config(REPO / "watch.toml")
    assert unexercised(cfg) == []
    carrying = [r for r in cfg.recipes if "offloader-tied-weights" in r.blockers]
    assert {r.hardware.gpu_count for r in carrying} == {1} and len(carrying) == 3
    for r in carrying:
        argv = list(r.command)
        assert float(argv[argv.index("--cpu-offload-gb") + 1]) > 0, r.id


def test_a_code_item_naming_the_offloader_warns_until_a_recipe_offloads(tmp_path):
    cfg = load_watch(tmp_path, OFFLOADER + recipe("a") + recipe("b", "--cpu-offload-gb", "0"))
    (warning,) = unexercised(cfg)
    assert "[blocker.tied] its code item offloader names CPU offload" in warning
    assert "--cpu-offload-gb above 0" in warning and "(a, b)" in warning
    assert warning.startswith(f"{cfg.path}: ") and "\n  fix: " in warning
    for flags in (("--cpu-offload-gb", "2"), ("--cpu-offload-gb=4",)):
        cfg = load_watch(tmp_path, OFFLOADER + recipe("a") + recipe("b", *flags))
        assert unexercised(cfg) == [], flags


def test_spec_decode_and_extra_buffer_are_gates_too(tmp_path):
    body = (
        '[[item]]\nid = "c"\nrepo = "o/r"\nkind = "issue"\nnumber = 1\n'
        '[[blocker]]\nid = "gdn"\ntitle = "GDN state"\nitems = ["c"]\n'
        'description = "Spec-decode on the hybrid layers needs --mamba-scheduler-strategy'
        ' extra_buffer."\n'
    )
    cfg = load_watch(tmp_path, body + recipe("plain", blockers='"gdn"'))
    warnings = unexercised(cfg)
    assert len(warnings) == 2
    assert "speculative decoding" in warnings[0] and "extra_buffer mamba" in warnings[1]
    flags = ("--speculative-algorithm", "NEXTN", "--mamba-scheduler-strategy", "extra_buffer")
    cfg = load_watch(
        tmp_path,
        body + recipe("plain", blockers='"gdn"') + recipe("spec", *flags, blockers='"gdn"'),
    )
    assert unexercised(cfg) == []


def test_a_compose_recipe_is_read_for_its_flags(tmp_path):
    (tmp_path / "single.yml").write_text(
        "# Status:    🧪 Experimental\n"
        "services:\n"
        "  sglang:\n"
        "    image: lmsysorg/sglang:v0.5.12\n"
        '    ports:\n      - "${BIND_HOST:-0.0.0.0}:${PORT:-8040}:30000"\n'
        '    entrypoint: ["/bin/bash", "-c"]\n'
        "    command:\n"
        "      - |\n"
        "        exec python3 -m sglang.launch_server \\\n"
        "          --model-path /models/target \\\n"
        "          --cpu-offload-gb ${OFFLOAD_GB:-2} \\\n"
        "          --port 30000\n"
    )
    compose = '[[recipe]]\nid = "c"\nengine = "sglang"\nblockers = ["tied"]\ncompose = "single.yml"\nservice = "sglang"\n'
    assert unexercised(load_watch(tmp_path, OFFLOADER + compose)) == []
    off = compose + '[recipe.env]\nOFFLOAD_GB = "0"\n'
    assert len(unexercised(load_watch(tmp_path, OFFLOADER + off))) == 1


@pytest.mark.parametrize("offload", [False, True])
def test_validate_prints_the_warning_and_still_exits_0(tmp_path, offload):
    flags = ("--cpu-offload-gb", "2") if offload else ()
    (tmp_path / "watch.toml").write_text(OFFLOADER + recipe("a", *flags))
    out = subprocess.run(
        [sys.executable, "-m", "watcher", "validate", "--config", "watch.toml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert ("warning: " in out.stderr) is not offload, out.stderr
    if not offload:
        assert "[blocker.tied]" in out.stderr and "Traceback" not in out.stderr
