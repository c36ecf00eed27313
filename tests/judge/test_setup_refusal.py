"""A setup refusal ("not launched (setup): …") never launched the engine: it gives no verdict.

The recipe here has no baseline and no speed floor, so a pass validates by the rule itself and
nothing but the setup rule keeps the refusal from regressing the page.
"""

from __future__ import annotations

from datetime import UTC, datetime

from kits.watchtoml import load_watch

from watcher.judge.evaluate import evaluate, latest_target_runs

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
WATCH = """
[[recipe]]
id = "llama-solo"
engine = "llama.cpp"
command = ["llama-server", "--port", "30000"]

[[page]]
id = "llama"
title = "llama.cpp"
output = "out/llama.md"
recipes = ["llama-solo"]
"""
TARGET = {
    "gpus": [{"name": "NVIDIA GeForce RTX 3090", "memory_mib": 24576, "compute_capability": "8.6"}],
    "matches_target": True,
}


def _run(outcome: str, reason: str, started: str) -> dict:
    return {
        "run_id": f"llama-solo-{started}",
        "recipe": "llama-solo",
        "outcome": outcome,
        "signature": None,
        "reason": reason,
        "started_at": started,
        "stage_reached": "passed" if outcome == "passed" else "launch",
        "hardware": TARGET,
        "metrics": {},
    }


PASSED = _run("passed", "all checks passed", "2026-11-20T00:00:00Z")
REFUSED = _run(
    "error",
    "not launched (setup): models/c.yml requires MODEL_DIR ('MODEL_DIR is required') and the"
    " run's environment does not set it",
    "2026-11-29T00:00:00Z",
)
CRASHED = _run("error", "the engine exited with code 1 before it was ready", "2026-11-29T00:00:00Z")


def test_a_setup_refusal_does_not_regress_a_validated_page(tmp_path, store):
    cfg = load_watch(tmp_path, WATCH)
    previous = {"page:llama": {"status": "validated"}}
    ev = evaluate(cfg, {}, [PASSED, REFUSED], previous, NOW)
    assert ev.pages["llama"].status == "validated"
    assert latest_target_runs([PASSED, REFUSED])["llama-solo"]["run_id"] == PASSED["run_id"]
    for doc in (PASSED, REFUSED):
        store.add_smoke_run(doc)
    assert [r["run_id"] for r in store.evaluation_runs()] == [PASSED["run_id"]]


def test_an_engine_error_still_regresses_it(tmp_path, store):
    cfg = load_watch(tmp_path, WATCH)
    previous = {"page:llama": {"status": "validated"}}
    ev = evaluate(cfg, {}, [PASSED, CRASHED], previous, NOW)
    assert ev.pages["llama"].status == "regressed"
    for doc in (PASSED, CRASHED):
        store.add_smoke_run(doc)
    assert [r["run_id"] for r in store.evaluation_runs()] == [CRASHED["run_id"]]


def test_the_event_says_it_is_a_setup_problem():
    from watcher.smoke.run import run_message

    assert run_message(REFUSED).endswith(": error (a setup problem, not launched: no verdict)")
    assert run_message(CRASHED).endswith(": error")


def test_readers_see_a_setup_problem_not_a_test_result(tmp_path):
    from watcher.publish.prose import run_sentence

    cfg = load_watch(tmp_path, WATCH)
    said = run_sentence(cfg, REFUSED, "an RTX 3090")
    assert said.startswith("Last tried on 2026-11-29 on an NVIDIA GeForce RTX 3090: not launched,")
    assert "a setup problem on the test host" in said and "could not run" not in said
    assert "could not run" in run_sentence(cfg, CRASHED, "an RTX 3090")
