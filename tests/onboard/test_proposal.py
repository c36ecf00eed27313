"""A proposal is not a verdict (issue 29.6): the scan's recipes appended to the engines page leave
it "not tested yet", never ready-to-test; a scanned SGLang compose carries the SGLang page's
blockers; and no cycle starts a GPU run of a never-tested proposal until the maintainer asks
(`watcher smoke ID`, or `first_run = "auto"`).
"""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from watcher.cli import cli
from watcher.config.load import load_config
from watcher.judge.evaluate import evaluate
from watcher.smoke.trigger import due_recipes

REPO = Path(__file__).resolve().parents[2]
GUIDE = Path(__file__).parent / "guide"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SGLANG = "sglang-qwen3.6-27b-dual-autoround-int4-eagle3"
VLLM = "vllm-qwen3.6-27b-dual-fp8-max"
RELEASES = {"kind": "item", "subject": "sglang-releases", "old": "v0.5.12", "new": "v0.5.13"}
READY = {"kind": "page", "subject": "engines", "old": "blocked", "new": "ready-to-test"}


def _scanned(tmp_path: Path, edit=lambda toml: toml):
    """The shipped watch list in a copy of the guide, the scan's proposals appended as printed
    and every proposal added to the engines page, as the scan's last line says."""
    guide = tmp_path / "guide"
    shutil.copytree(GUIDE, guide)
    (guide / "watch.toml").write_text((REPO / "watch.toml").read_text())
    r = CliRunner().invoke(cli, ["init", str(guide), "--scan-composes", str(guide / "models")])
    assert r.exit_code == 0, r.output
    ids = re.search(r"^# for the engines page: recipes = \[(.*)\]$", r.stdout, re.M).group(1)
    text = (
        (REPO / "watch.toml")
        .read_text()
        .replace(
            'recipes = ["sglang-eagle-tp1", "sglang-nospec-tp1"]\n',
            f'recipes = ["sglang-eagle-tp1", "sglang-nospec-tp1", {ids}]\n',
        )
    )
    (guide / "watch.toml").write_text(edit(text + "\n" + r.stdout))
    return load_config(guide / "watch.toml"), r.stdout


def test_the_scan_proposes_the_engine_pages_blockers_and_a_manual_first_run(tmp_path):
    cfg, out = _scanned(tmp_path)
    sglang = cfg.recipe(SGLANG)
    assert set(sglang.blockers) == {
        "marlin-pad", "deltanet-rollback", "eagle3-layer-capture", "offloader-tied-weights",
    }  # fmt: skip
    assert "# note: the sglang page(s) sglang (marlin-pad" in out
    assert cfg.recipe(VLLM).blockers == ()  # no vLLM page with blockers: none proposed
    assert all(r.first_run == "manual" for r in cfg.recipes if r.compose)


def test_appended_proposals_leave_the_page_not_tested_yet_and_start_nothing(tmp_path, store):
    cfg, _ = _scanned(tmp_path)
    ev = evaluate(cfg, {}, [], {}, NOW)
    page = ev.pages["engines"]
    assert page.status == "untested", page.reason  # never ready-to-test by default
    assert page.reason.startswith("not tested yet: nothing blocks beellama-"), page.reason
    assert re.search(
        r"and \d more, and no smoke run on target hardware has tried them;", page.reason
    )
    assert "; `watcher smoke beellama-qwen3.6-27b-single-q5ks-fast` runs it" in page.reason
    assert ev.pages["sglang"].status == "blocked"
    due = {d.recipe for d in due_recipes(cfg, store, ev, [RELEASES, READY], NOW)}
    scanned = {r.id for r in cfg.recipes if r.compose}
    assert not due & scanned, due
    assert "sglang-eagle-tp1" in due  # a maintainer's recipe still follows its engine's releases


def test_a_first_run_set_to_auto_or_one_run_by_hand_lets_cycles_start_it(tmp_path, store):
    cfg, _ = _scanned(tmp_path, lambda t: t.replace('first_run = "manual"', 'first_run = "auto"'))
    ev = evaluate(cfg, {}, [], {}, NOW)
    assert SGLANG in {d.recipe for d in due_recipes(cfg, store, ev, [RELEASES], NOW)}

    cfg, _ = _scanned(tmp_path / "by-hand")
    store.add_smoke_run(
        {
            "run_id": f"{SGLANG}-1",
            "recipe": SGLANG,
            "outcome": "failed",
            "signature": "hang",
            "reason": "not ready within 900 s",
            "started_at": "2026-11-29T00:00:00Z",
            "stage_reached": "launch",
            "hardware": {
                "gpus": [{"name": "NVIDIA GeForce RTX 3090", "memory_mib": 24576}] * 2,
                "matches_target": True,
            },
            "metrics": {},
        }
    )
    ev = evaluate(cfg, {}, store.evaluation_runs(), {}, NOW)
    assert SGLANG in {d.recipe for d in due_recipes(cfg, store, ev, [RELEASES], NOW)}


def test_a_waiting_trigger_of_a_never_tested_proposal_is_kept_not_run(tmp_path, store):
    """A trigger stored before (an older watcher, a page that was ready) still starts nothing:
    it waits, its note naming the command that starts it."""
    from watcher.core.clock import iso
    from watcher.smoke.trigger import run_triggers

    cfg, _ = _scanned(tmp_path)
    at = iso(NOW)
    store.put_trigger(VLLM, state="waiting", reasons=["old"], since=at, updated_at=at)

    def runner(cfg, recipe, run_id):
        raise AssertionError(f"{recipe.id} was started")

    ev = evaluate(cfg, {}, [], {}, NOW)
    docs, _ = run_triggers(cfg, store, ev, [], NOW, cycle_id=None, at=at, runner=runner)
    assert docs == []
    assert f"`watcher smoke {VLLM}`" in store.triggers()[VLLM]["note"]


def test_readers_see_not_tested_yet(tmp_path):
    """The page of a proposal nothing blocks says "not tested yet", in its headline and beside
    the recipe, and status.json says `untested`."""
    import json

    page = '[[page]]\nid = "vllm"\ntitle = "vLLM"\noutput = "docs/VLLM.md"\nrecipes = ["{}"]\n'
    cfg, _ = _scanned(tmp_path, lambda t: t + "\n" + page.format(VLLM))
    guide = tmp_path / "guide"
    r = CliRunner().invoke(cli, ["check-now", "--offline", "--config", str(guide / "watch.toml")])
    assert r.exit_code in (0, 1), r.output
    text = (guide / "docs/VLLM.md").read_text()
    assert text.startswith("# vLLM — not tested yet on two RTX 3090s: nothing blocks it")
    assert "Not tested yet on two RTX 3090s: nothing blocks it, and no smoke run has" in text
    status = json.loads((cfg.site_dir / "status.json").read_text())
    assert {p["id"]: p["status"] for p in status["pages"]}["vllm"] == "untested"


def test_explain_names_the_recipes_waiting_for_their_first_run(tmp_path):
    """The maintainer's view says which proposals wait for them, and the command that starts one;
    a recipe that names blockers (first_run auto) or that has a run on target hardware does not."""
    from kits.judgekit import run

    from watcher.judge.explain import explain, format_text

    cfg, _ = _scanned(tmp_path)
    ev = evaluate(cfg, {}, [], {}, NOW)
    text = format_text(explain(cfg, "engines", {}, ev, []))
    assert f"first run: never tested on target hardware; waits for `watcher smoke {VLLM}`" in text
    assert f"waits for `watcher smoke {SGLANG}`" in text  # proposed with blockers, still manual
    assert "waits for `watcher smoke sglang-eagle-tp1`" not in text  # shipped: blockers, auto
    runs = [run(VLLM, "passed")]
    doc = explain(cfg, "engines", {}, evaluate(cfg, {}, runs, {}, NOW), runs)
    (page,) = doc["pages"]
    assert {r["id"]: r["first_run"] for r in page["recipes"]}[VLLM] is None  # it has run
