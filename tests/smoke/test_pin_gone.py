"""A recipe whose pinned build is gone is not started (it would fail at pull): a setup problem,
kept waiting with the reason, never a blocker; the cycle finds it through the registry that
WATCHER_REGISTRY_MAP points at."""

from __future__ import annotations

import json
from datetime import timedelta

from kits.triggerkit import NOW
from kits.watchtoml import load_watch

from watcher.core.clock import iso
from watcher.fakes.registry import FakeRegistry
from watcher.github.client import GitHubClient
from watcher.judge.evaluate import evaluate
from watcher.loop.cycle import run_cycle
from watcher.smoke.trigger import run_triggers
from watcher.store.db import Store

IMAGE = "vllm/vllm-openai:v0.23.1"


def _cfg(tmp_path, gh):
    command = ["docker", "run", "--rm", IMAGE, "--model", "m"]
    return load_watch(
        tmp_path,
        f"""
[watcher]
github_api_url = "{gh.url}"
data_dir = "data"
site_dir = "site"

[[blocker]]
id = "b1"
title = "The blocker"

[[recipe]]
id = "r1"
engine = "vllm"
blockers = ["b1"]
command = {json.dumps(command)}
""",
    )


def test_a_purged_pin_starts_no_run_until_it_exists_again(tmp_path, fake_github, monkeypatch):
    with FakeRegistry() as reg:
        reg.add_image("vllm/vllm-openai", "v0.23.1")
        monkeypatch.setenv("WATCHER_REGISTRY_MAP", f"docker.io={reg.url}")
        cfg = _cfg(tmp_path, fake_github)
        with GitHubClient(fake_github.url, token="test-token") as client:
            run_cycle(cfg, now=NOW, client=client, no_smoke=True)
        store = Store(cfg.db_path)
        assert store.pins()["r1"]["liveness"]["exists"] is True
        store.close()

        reg.purge("vllm/vllm-openai", "v0.23.1")
        later = NOW + timedelta(days=1)
        with GitHubClient(fake_github.url, token="test-token") as client:
            run_cycle(cfg, now=later, client=client, no_smoke=True)
        assert [q["status"] for q in reg.requests if q["method"] == "HEAD"][-1] == 404
    published = json.loads((tmp_path / "site" / "status.json").read_text(encoding="utf-8"))
    pin = published["pins"]["r1"]
    assert pin["liveness"]["exists"] is False and "etag" not in pin["liveness"]
    assert pin["ready_on_pin"] is False and "no longer exists" in pin["gone"]
    assert pin["resolved"] == {"why": "no tag v0.23.1 or 0.23.1 in vllm-project/vllm on GitHub"}

    store = Store(cfg.db_path)
    try:
        assert store.pins()["r1"]["liveness"]["gone_since"] == iso(later)
        store.put_trigger("r1", state="waiting", reasons=["asked"], since=iso(later))
        started = []

        def runner(cfg, recipe, run_id):
            started.append(recipe.id)
            return {"run_id": run_id, "recipe": recipe.id, "outcome": "skipped", "reason": "no GPU"}

        ev = evaluate(cfg, store.items(), store.evaluation_runs(), store.statuses(), later)
        docs, _ = run_triggers(
            cfg, store, ev, [], later, cycle_id=None, at=iso(later), runner=runner
        )
        assert started == [] and docs == []
        trigger = store.triggers()["r1"]
        assert trigger["state"] == "waiting"
        assert f"its pinned build {IMAGE} no longer exists" in trigger["note"]
        assert "last seen 2026-11-30T12:00:00Z" in trigger["note"]
        assert ev.blockers["b1"].status == "blocked" and "pin" not in ev.blockers["b1"].reason

        doc = store.pins()["r1"]
        doc["liveness"]["exists"] = True  # the build is back (or the pin moved)
        store.put_pin("r1", doc, iso(later))
        run_triggers(cfg, store, ev, [], later, cycle_id=None, at=iso(later), runner=runner)
        assert started == ["r1"]
    finally:
        store.close()
