"""The page says "fixed upstream, not in our pin" until the pin moves past the fix, and "in our
pin" after; a cycle reads GitHub (tags, compare) and the registry (WATCHER_REGISTRY_MAP) for it."""

from __future__ import annotations

import json
from datetime import timedelta

from kits.triggerkit import NOW
from kits.watchtoml import write_watch

from watcher.config.load import load_config
from watcher.fakes.registry import FakeRegistry
from watcher.github.client import GitHubClient
from watcher.loop.cycle import run_cycle

VLLM = "vllm-project/vllm"


def _watch(tmp_path, gh, image: str):
    command = ["docker", "run", "--rm", image, "--model", "m"]
    write_watch(
        tmp_path,
        f"""
[watcher]
github_api_url = "{gh.url}"
data_dir = "data"
site_dir = "site"

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
""",
    )
    return load_config(tmp_path / "watch.toml")


def _page(tmp_path) -> str:
    """The page's text (references are code spans, so GitHub does not link them elsewhere)."""
    return (tmp_path / "out" / "VLLM.md").read_text(encoding="utf-8")


def _sticky(cfg) -> str:
    """The sticky status comment's body, as notify would post it."""
    from watcher.judge.evaluate import evaluate
    from watcher.notify.plan import Bodies
    from watcher.store.db import Store

    store = Store(cfg.db_path)
    try:
        ev = evaluate(cfg, store.items(), store.evaluation_runs(), store.statuses(), NOW)
        bodies = Bodies(cfg, ev, store.items(), [], store.statuses(), pins=store.pins())
        return bodies.status(cfg.pages[0])
    finally:
        store.close()


def _started(cfg) -> list[str]:
    """The recipes a waiting trigger starts now (a runner that records and runs nothing)."""
    from watcher.core.clock import iso
    from watcher.judge.evaluate import evaluate
    from watcher.smoke.trigger import run_triggers
    from watcher.store.db import Store

    started = []

    def runner(cfg, recipe, run_id):
        started.append(recipe.id)
        return {"run_id": run_id, "recipe": recipe.id, "outcome": "skipped", "reason": "no GPU"}

    store = Store(cfg.db_path)
    try:
        store.put_trigger("vllm-tp2", state="waiting", reasons=["asked"], since=iso(NOW))
        ev = evaluate(cfg, store.items(), store.evaluation_runs(), store.statuses(), NOW)
        run_triggers(cfg, store, ev, [], NOW, cycle_id=None, at=iso(NOW), runner=runner)
        note = store.triggers()["vllm-tp2"]["note"] or ""
        if not started:
            assert note == (
                "not ready to test on its pin vllm/vllm-openai:v0.23.1: the fix for marlin-pad is"
                " upstream but not in it; v0.24.0 would carry it"
            )
    finally:
        store.close()
    return started


def test_page_says_not_in_our_pin_until_the_pin_moves_past_the_fix(
    tmp_path, fake_github, monkeypatch
):
    gh = fake_github
    base = gh.add_commit(VLLM, message="base", date="2026-06-01T00:00:00Z")
    gh.add_tag(VLLM, "v0.23.1", base["sha"])
    fix = gh.add_commit(VLLM, message="Fix Marlin pad (#45295)", date="2026-06-30T00:00:00Z")
    gh.add_pull(
        VLLM,
        45295,
        title="[Kernel] Marlin pad",
        merged=True,
        merge_commit_sha=fix["sha"],
        merged_at="2026-06-30T10:00:00Z",
    )
    rel = gh.add_commit(VLLM, message="v0.24.0", date="2026-07-02T00:00:00Z")
    gh.add_tag(VLLM, "v0.24.0", rel["sha"])
    gh.add_release(VLLM, "v0.23.1", published_at="2026-06-01T00:00:00Z")
    gh.add_release(VLLM, "v0.24.0", published_at="2026-07-02T00:00:00Z")
    with FakeRegistry() as reg:
        reg.add_image("vllm/vllm-openai", "v0.23.1")
        reg.add_image("vllm/vllm-openai", "v0.24.0")
        monkeypatch.setenv("WATCHER_REGISTRY_MAP", f"docker.io={reg.url}")
        cfg = _watch(tmp_path, gh, "vllm/vllm-openai:v0.23.1")
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(cfg, now=NOW, client=client, no_smoke=True)
        page = _page(tmp_path)
        assert (
            "Fixed upstream in `vllm#45295` (2026-06-30); not in our pin v0.23.1; first in v0.24.0."
            in page
        )
        assert "Not ready to test on its pin v0.23.1: v0.24.0 would carry the fix." in page
        assert "not in our pin v0.23.1; first in v0.24.0." in _sticky(cfg)
        assert _started(cfg) == []  # a run on v0.23.1 would test a build without the fix

        cfg = _watch(tmp_path, gh, "vllm/vllm-openai:v0.24.0")  # a maintainer bumps the pin
        with GitHubClient(gh.url, token="test-token") as client:
            run_cycle(cfg, now=NOW + timedelta(minutes=5), client=client, no_smoke=True)
    page = _page(tmp_path)
    assert "Fixed upstream in `vllm#45295` (2026-06-30); in our pin v0.24.0." in page
    assert "not in our pin" not in page and "Not ready to test on its pin" not in page
    assert _started(cfg) == ["vllm-tp2"]
