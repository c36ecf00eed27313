"""Maintainer controls: hand-written fragments survive regeneration; explain traces every claim."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from watcher.cli import cli
from watcher.config.load import load_config
from watcher.fakes.github import FakeGitHub
from watcher.fakes.scenarios import load, real_threads
from watcher.loop.cycle import run_cycle

REPO = Path(__file__).resolve().parents[2]


def test_fragments_survive_regeneration_byte_for_byte(tmp_path):
    runner = CliRunner()
    assert runner.invoke(cli, ["init", str(tmp_path)]).exit_code == 0
    pros = tmp_path / "fragments" / "sglang" / "pros.md"
    custom = (
        "| Pro | Detail |\n|---|---|\n| Hand-written ✍️ | kept *exactly* — with trailing spaces  |\n"
    )
    pros.write_bytes(custom.encode())
    tuning = tmp_path / "fragments" / "sglang" / "tuning.md"
    tuning.unlink()  # a missing fragment falls back to the packaged default
    cfg = load_config(tmp_path / "watch.toml")
    for _ in range(2):
        run_cycle(cfg, offline=True)
        page = (tmp_path / "docs" / "engines" / "SGLANG.md").read_text()
        assert "Hand-written ✍️ | kept *exactly* — with trailing spaces" in page
        # the packaged tuning default holds only a note to the maintainer: no section for readers
        assert "## Tuning notes" not in page and "watcher only reads this file" not in page
        assert pros.read_bytes() == custom.encode()
    assert not tuning.exists()
    # init again never touches an existing fragment
    (tmp_path / "watch.toml").unlink()
    assert runner.invoke(cli, ["init", str(tmp_path)]).exit_code == 0
    assert pros.read_bytes() == custom.encode()


def test_explain_traces_page_blocker_item(tmp_path):
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    cfg = load_config(tmp_path / "watch.toml")
    with FakeGitHub() as gh:
        real_threads(gh)
        load(gh, "sglang_code")  # the files the code items read
        from watcher.github.client import GitHubClient

        run_cycle(cfg, client=GitHubClient(gh.url))
    runner = CliRunner()
    cfg_arg = ["--config", str(tmp_path / "watch.toml")]
    r = runner.invoke(cli, ["explain", *cfg_arg])
    assert r.exit_code == 0, r.output
    assert "page sglang" in r.output and "blocker marlin-pad" in r.output
    assert "fixed in vLLM #45295, first in v0.24.0; not detected in SGLang" in r.output
    assert "context only (never clears it)" in r.output and "TurboQuant" in r.output
    r = runner.invoke(cli, ["explain", "marlin-pad", "--json", *cfg_arg])
    doc = json.loads(r.output)
    assert doc["type"] == "blocker" and doc["status"] == "blocked"  # a hint never clears it
    assert [i["id"] for i in doc["items"]] == ["sglang-autoround-mapping", "sglang-marlin-guard"]
    assert [h["detail"]["id"] for h in doc["hints"]] == ["vllm-40361"]
    assert doc["hints"][0]["detail"]["url"] == "https://github.com/vllm-project/vllm/pull/40361"
    r = runner.invoke(cli, ["explain", "vllm-39931", *cfg_arg])
    assert "context for: deltanet-rollback" in r.output and "clears: nothing" in r.output
    r = runner.invoke(cli, ["explain", "nope", *cfg_arg])
    assert r.exit_code == 1 and "nothing called 'nope'" in r.output


def test_snoozed_item_changes_are_marked(tmp_path):
    text = (
        (REPO / "watch.toml")
        .read_text()
        .replace(
            'label = "vLLM\'s own Marlin pad-sub-tile-n fix"',
            'label = "vLLM\'s own Marlin pad-sub-tile-n fix"'
            '\n[item.snooze]\nuntil = 2099-01-01\nreason = "noisy"',
        )
    )
    (tmp_path / "watch.toml").write_text(text)
    cfg = load_config(tmp_path / "watch.toml")
    with FakeGitHub() as gh:
        real_threads(gh)
        from watcher.github.client import GitHubClient

        first = run_cycle(cfg, client=GitHubClient(gh.url))
        snoozed = [e for e in first.events if e["subject"] == "vllm-40361"]
        assert snoozed and snoozed[0]["snoozed"] is True
        others = [e for e in first.events if e["kind"] == "item" and e["subject"] != "vllm-40361"]
        assert others and not any(e["snoozed"] for e in others)


def test_transitions_caused_by_snoozed_items_trigger_nothing(tmp_path):
    """Snoozed: polled and shown, but its changes start no smoke run and post no comment."""
    from datetime import UTC, datetime

    from watcher.judge.evaluate import evaluate
    from watcher.notify.plan import worth_a_comment
    from watcher.smoke.trigger import due_recipes
    from watcher.store.db import Store

    cfg = load_config(REPO / "watch.toml")
    page_event = {"kind": "page", "subject": "sglang", "old": "blocked", "new": "ready-to-test"}
    assert worth_a_comment(dict(page_event))
    assert not worth_a_comment(dict(page_event, data={"snoozed": True}))
    now = datetime(2026, 11, 30, tzinfo=UTC)
    items = {
        "sglang-autoround-mapping": {"state": "present"},
        "sglang-offloader-tied-weights": {"state": "present"},
    }
    ev = evaluate(cfg, items, [], {}, now)
    assert ev.pages["sglang"].status == "ready-to-test"
    store = Store(tmp_path / "w.db")
    try:
        assert [d.recipe for d in due_recipes(cfg, store, ev, [dict(page_event)], now)] == [
            "sglang-nospec-tp1"
        ]
        assert due_recipes(cfg, store, ev, [dict(page_event, snoozed=True)], now) == []
    finally:
        store.close()
