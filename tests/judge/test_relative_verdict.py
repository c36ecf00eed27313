"""The relative verdict: a recipe that runs but decodes slower than its baseline parks the page with
both figures; a later run that clears the floor lifts it. The fake engine runs at chosen speeds."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime

import pytest
from kits.smokekit import REPO, free_port
from kits.watchtoml import load_watch

from watcher.config.load import load_config
from watcher.core.errors import ConfigError
from watcher.judge.compare import BELOW, CLEARS, INSUFFICIENT, compare
from watcher.judge.evaluate import evaluate
from watcher.judge.explain import explain, format_text
from watcher.notify.plan import Bodies
from watcher.publish.context import page_sources
from watcher.publish.page import page_text
from watcher.publish.status import status_document
from watcher.smoke.hardware import Gpu, GpuReading
from watcher.smoke.run import record_run, run_recipe
from watcher.store.db import Store

ON_TARGET = GpuReading((Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),), "nvml")
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_compare_calls_it_only_when_the_interval_is_on_one_side():
    assert compare([16, 16.5], [85, 84], 0.8)["verdict"] == BELOW
    assert compare([90, 91], [85, 84], 0.8)["verdict"] == CLEARS
    noisy = compare([60, 75, 95], [85, 60, 100], 0.8)
    assert noisy["verdict"] == INSUFFICIENT and "spread" in noisy["why"]
    c = compare([16.0, 16.0], [85.0, 85.0], 0.8)
    assert c["speed_ratio"] == pytest.approx(0.188, abs=0.001)
    assert c["decode_tokens_per_s"] == 16 and c["baseline_decode_tokens_per_s"] == 85
    assert compare([], [85], 0.8)["verdict"] == INSUFFICIENT
    # TTFT: lower is better; a ceiling of 1.5x the baseline's
    slow_start = compare([90, 91], [85, 84], 0.8, [0.9, 0.92], [0.2, 0.21], 1.5)
    assert slow_start["verdict"] == BELOW and slow_start["why"] == "ttft"


def _config(tmp_path, slow_speed: float, park: str = "", page: str = "") -> object:
    def cmd(speed):
        return [
            sys.executable, "-m", "watcher.fakes.engine", "--port", "{port}",
            "--ready-delay", "0.2", "--tokens-per-s", str(speed), "--burst", "3",
        ]  # fmt: skip

    def recipe(rid, title, speed, extra=""):
        return f"""
[[recipe]]
id = "{rid}"
title = "{title}"
engine = "vllm"
port = {free_port()}
startup_timeout = 20
stop_timeout = 3
command = {json.dumps(cmd(speed))}
{extra}
[recipe.checks]
repeats = 2
decode_tokens = 24
[recipe.env]
PYTHONPATH = "{REPO}"
"""

    text = (
        '[watcher]\ndata_dir = "data"\nsite_dir = "site"\n'
        + recipe("vllm-mtp", "vLLM MTP", 300)
        + recipe(
            "sglang-eagle",
            "SGLang EAGLE-3",
            slow_speed,
            'baseline = "vllm-mtp"\nmin_speed_vs_baseline = 0.8\n',
        )  # fmt: skip
        + (
            page
            or '\n[[page]]\nid = "sglang"\ntitle = "SGLang"\noutput = "SGLANG.md"\n'
            'template = "sglang.md.j2"\nrecipes = ["sglang-eagle"]\n'
        )
        + park
    )
    return load_watch(tmp_path, text)


def _smoke_and_evaluate(cfg):
    doc = run_recipe(cfg, cfg.recipe("sglang-eagle"), reading=ON_TARGET)
    store = Store(cfg.db_path)
    try:
        record_run(store, doc)
        runs = store.evaluation_runs()
        ev = evaluate(cfg, store.items(), runs, store.statuses(), NOW)
        sources = page_sources(store)
    finally:
        store.close()
    return doc, ev, runs, sources


def test_slower_recipe_parks_the_page_with_both_figures_and_a_faster_run_lifts_it(tmp_path):
    cfg = _config(tmp_path, slow_speed=60)
    doc, ev, runs, sources = _smoke_and_evaluate(cfg)
    assert doc["outcome"] == "passed", doc["reason"]
    c = doc["comparison"]
    assert c["verdict"] == BELOW, c
    assert c["baseline"] == "vllm-mtp" and len(c["baseline_run_ids"]) == 1
    assert c["decode_tokens_per_s"] < c["baseline_decode_tokens_per_s"]
    assert c["speed_ratio"] < 0.5
    # the baseline's run is stored as a run of its own recipe
    assert {r["recipe"] for r in runs} == {"vllm-mtp", "sglang-eagle"}
    page = ev.pages["sglang"]
    assert page.status == "parked" and page.parked["by"] == "floor"
    ratio = f"{c['speed_ratio']:.2f}×"
    assert page.reason.startswith("sglang-eagle runs on NVIDIA GeForce RTX 3090, but decodes at")
    assert f"{ratio} the speed of the vLLM MTP path" in page.reason
    assert (
        f"({c['decode_tokens_per_s']:.0f} vs {c['baseline_decode_tokens_per_s']:.0f} tokens/s, 20"
        in page.reason
    )
    # every surface shows the figures side by side
    md = page_text(cfg, cfg.pages[0], ev, sources, [], None, None, None)
    assert "Parked below the speed floor" in md and "Parked by the maintainers" not in md
    assert "“SGLang EAGLE-3” runs on" in md and "sglang-eagle runs" not in md  # a title, not an id
    assert (
        f"Decode {c['decode_tokens_per_s']} vs {c['baseline_decode_tokens_per_s']} tokens/s" in md
    )
    status = status_document(
        cfg, sources["items"], ev, None, sources["runs"], "2026-12-01T12:00:00Z"
    )
    shown = status["pages"][0]
    assert shown["status"] == "parked" and shown["comparison"]["verdict"] == BELOW
    assert shown["comparison"]["baseline_decode_tokens_per_s"] == c["baseline_decode_tokens_per_s"]
    text = format_text(explain(cfg, None, sources["items"], ev, sources["runs"]))
    assert "speed vs baseline vllm-mtp" in text and "below" in text
    body = Bodies(cfg, ev, sources["items"], sources["runs"], {}).status(cfg.pages[0])
    assert "Parked below the speed floor" in body
    assert f"Decode {c['decode_tokens_per_s']} vs {c['baseline_decode_tokens_per_s']}" in body

    # the same recipe, now fast enough: the page leaves `parked` by itself
    cfg = _config(tmp_path, slow_speed=900)
    doc, ev, _, _ = _smoke_and_evaluate(cfg)
    assert doc["comparison"]["verdict"] == CLEARS, doc["comparison"]
    page = ev.pages["sglang"]
    assert page.status == "validated", page.reason
    assert "the speed of the vLLM MTP path" in page.reason and page.parked is None
    assert page.comparison["speed_ratio"] > 1


def test_a_maintainers_park_stays_apart_from_the_floor(tmp_path):
    cfg = _config(
        tmp_path, slow_speed=900, park='\n[page.park]\nreason = "waiting for a re-test"\n'
    )
    _, ev, _, _ = _smoke_and_evaluate(cfg)
    page = ev.pages["sglang"]
    assert page.status == "parked" and page.parked["by"] == "maintainer"
    assert page.reason == "parked: waiting for a re-test"


def test_a_failing_baseline_gives_insufficient_data_never_validated(tmp_path):
    cfg = _config(tmp_path, slow_speed=900)
    text = cfg.path.read_text().replace('"--tokens-per-s", "300"', '"--mode", "crash"', 1)
    cfg.path.write_text(text)
    cfg = load_config(cfg.path)
    doc, ev, _, _ = _smoke_and_evaluate(cfg)
    assert doc["outcome"] == "passed"
    assert doc["comparison"]["verdict"] == INSUFFICIENT
    assert "the baseline vllm-mtp did not pass" in doc["comparison"]["why"]
    assert ev.pages["sglang"].status == "ready-to-test"
    assert "insufficient data" in ev.pages["sglang"].reason


@pytest.mark.parametrize(
    "extra, message",
    [
        ('baseline = "nope"', "no recipe with id 'nope'"),
        ("min_speed_vs_baseline = 0.8", "needs a 'baseline'"),
        ('baseline = "b"\nmin_speed_vs_baseline = -1', "positive ratio"),
    ],
)
def test_baseline_config_errors_name_the_key(tmp_path, extra, message):
    text = (
        '[[recipe]]\nid = "b"\nengine = "vllm"\ncommand = ["x"]\n'
        f'[[recipe]]\nid = "r"\nengine = "vllm"\ncommand = ["x"]\n{extra}\n'
    )
    (tmp_path / "watch.toml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path / "watch.toml")


def test_a_page_of_the_guides_own_shows_the_comparison_too(tmp_path):
    """Issue 33, item 8: templates/page.md.j2 (any page not using sglang.md.j2) parked by the
    floor shows both speeds and their ratio, as the SGLang page does."""
    own = '\n[[page]]\nid = "guide"\ntitle = "Guide"\noutput = "GUIDE.md"\nrecipes = ["sglang-eagle"]\n'
    cfg = _config(tmp_path, slow_speed=60, page=own)
    doc, ev, _, sources = _smoke_and_evaluate(cfg)
    c = doc["comparison"]
    assert ev.pages["guide"].status == "parked"
    md = page_text(cfg, cfg.pages[0], ev, sources, [], None, None, None)
    assert "Parked below the speed floor" in md
    assert (
        f"⚖️ Decode {c['decode_tokens_per_s']} vs {c['baseline_decode_tokens_per_s']} tokens/s" in md
    )
    assert f"{c['speed_ratio']}×" in md
