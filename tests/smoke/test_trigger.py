"""Smoke triggers, the daily budget, the github-actions backend, and the check-now hook."""

import json
from datetime import timedelta

from click.testing import CliRunner
from kits.smokekit import (
    REPO,
    RTX3090,
    clearing_comparison,
    engine_command,
    fake_nvidia_smi,
    with_path,
)
from kits.triggerkit import NOW, config_text, gha_cfg, make_cfg, remote_doc
from kits.watchtoml import load_watch

from watcher.cli import cli
from watcher.config.load import parse_config
from watcher.core.clock import iso
from watcher.github.client import GitHubClient
from watcher.judge.evaluate import evaluate
from watcher.loop.cycle import run_cycle
from watcher.smoke import dispatch
from watcher.smoke.dispatch import dispatch_and_wait
from watcher.smoke.run import record_run
from watcher.smoke.trigger import due_recipes, run_triggers
from watcher.store.db import Store


def item_event(subject, old="open", new="merged"):
    return {"kind": "item", "subject": subject, "old": old, "new": new}


def run_doc(run_id, outcome="passed", started=NOW, target=True):
    return {
        "run_id": run_id,
        "recipe": "r1",
        "outcome": outcome,
        "signature": None,
        "hardware": {"gpus": [], "matches_target": target},
        "started_at": iso(started),
        "stage_reached": "passed" if outcome == "passed" else "launch",
    }


def due(cfg, store, events, items=None):
    ev = evaluate(cfg, items or {}, store.smoke_runs(), store.statuses(), NOW)
    return [(d.recipe, d.reasons) for d in due_recipes(cfg, store, ev, events, NOW)]


def test_blocker_item_or_watch_change_triggers(tmp_path, store):
    cfg = make_cfg(tmp_path)
    assert due(cfg, store, [item_event("fix-pr")]) == [
        ("r1", ["item fix-pr of blocker b1 changed"])
    ]
    assert due(cfg, store, [item_event("context-issue", "open", "completed")]) == [
        ("r1", ["item context-issue of blocker b1 changed"])
    ]


def test_unrelated_items_and_first_sightings_trigger_nothing(tmp_path, store):
    cfg = make_cfg(tmp_path)
    assert due(cfg, store, [item_event("other")]) == []
    assert due(cfg, store, [item_event("fix-pr", old=None, new="open")]) == []
    assert due(cfg, store, []) == []


def test_snoozed_item_triggers_nothing(tmp_path, store):
    cfg = make_cfg(tmp_path)
    path = tmp_path / "watch.toml"
    text = config_text().replace(
        "number = 1\n", 'number = 1\n[item.snooze]\nuntil = "2026-12-31"\nreason = "noisy"\n', 1
    )
    cfg = parse_config(text, path)
    assert due(cfg, store, [item_event("fix-pr")]) == []


def test_engine_release_change_triggers(tmp_path, store):
    cfg = make_cfg(tmp_path)
    assert due(cfg, store, [item_event("sglang-releases", "v0.5.8", "v0.5.9")]) == [
        ("r1", ["sglang release changed (sglang-releases)"])
    ]


def test_page_becoming_ready_to_test_triggers(tmp_path, store):
    cfg = make_cfg(tmp_path)
    items = {"fix-pr": {"state": "merged"}}
    events = [{"kind": "page", "subject": "p1", "old": "blocked", "new": "ready-to-test"}]
    assert due(cfg, store, events, items) == [("r1", ["page p1 became ready-to-test"])]
    assert due(cfg, store, events, {}) == []  # the page is not ready any more


def test_validation_expires(tmp_path, store):
    cfg = make_cfg(tmp_path)
    store.add_smoke_run(run_doc("old", started=NOW - timedelta(days=20)))
    assert due(cfg, store, []) == [("r1", ["validation from 2026-11-10 expired"])]
    store.add_smoke_run(run_doc("fresh", started=NOW - timedelta(days=3)))
    assert due(cfg, store, []) == []


def test_off_target_pass_never_counts_as_validation(tmp_path, store):
    cfg = make_cfg(tmp_path)
    store.add_smoke_run(run_doc("off", started=NOW - timedelta(days=20), target=False))
    assert due(cfg, store, []) == []


def test_parked_page_triggers_nothing(tmp_path, store):
    cfg = make_cfg(tmp_path, page_extra='[page.park]\nreason = "on hold"\n')
    store.add_smoke_run(run_doc("old", started=NOW - timedelta(days=20)))
    assert due(cfg, store, [item_event("fix-pr")]) == []


def test_daily_budget(tmp_path, store):
    cfg = make_cfg(tmp_path, smoke="")
    calls = []

    def runner(cfg, recipe, run_id):
        calls.append(run_id)
        doc = run_doc(run_id, outcome="failed", started=NOW)
        doc["hardware"] = {"gpus": [], "matches_target": True}
        return doc

    ev = evaluate(cfg, {}, [], {}, NOW)
    events = [item_event("fix-pr")]
    store.add_smoke_run(run_doc("yesterday", started=NOW - timedelta(hours=30)))
    store.add_smoke_run(run_doc("today", started=NOW - timedelta(hours=2)))
    docs, smoke_events = run_triggers(
        cfg, store, ev, events, NOW, cycle_id=None, at=iso(NOW), runner=runner
    )
    assert len(calls) == 1 and len(docs) == 1
    assert docs[0]["trigger"] == ["item fix-pr of blocker b1 changed"]
    assert smoke_events[0]["kind"] == "smoke" and smoke_events[0]["new"] == "failed"
    # two runs in the last 24 h now: the budget of 2 is spent
    docs, _ = run_triggers(cfg, store, ev, events, NOW, cycle_id=None, at=iso(NOW), runner=runner)
    assert docs == [] and len(calls) == 1


def test_runner_exception_becomes_an_error_run(tmp_path, store):
    cfg = make_cfg(tmp_path)

    def runner(cfg, recipe, run_id):
        raise RuntimeError("backend exploded")

    ev = evaluate(cfg, {}, [], {}, NOW)
    docs, _ = run_triggers(
        cfg, store, ev, [item_event("fix-pr")], NOW, cycle_id=None, at=iso(NOW), runner=runner
    )
    assert docs[0]["outcome"] == "error" and "backend exploded" in docs[0]["reason"]
    assert store.smoke_runs()[0]["outcome"] == "error"


# ---------------------------------------------------------------- github-actions backend


def test_dispatch_downloads_the_result(tmp_path, fake_github):
    cfg = gha_cfg(tmp_path)
    seen = []

    def on_dispatch(inputs):
        seen.append(inputs)
        return {
            "result.json": json.dumps(remote_doc(inputs)),
            f"data/smoke/{inputs['run_id']}.log": "engine log line\n",
        }

    fake_github.add_workflow(
        "org/guide",
        "smoke.yml",
        on_dispatch=on_dispatch,
        run_name="smoke {recipe} {run_id}",
        artifact_name="smoke-result",
    )
    with GitHubClient(fake_github.url, token="test-token") as client:
        doc = dispatch_and_wait(cfg, cfg.recipe("r1"), "r1-run-1", client, sleep=lambda s: None)
    assert seen == [{"recipe": "r1", "run_id": "r1-run-1"}]
    assert doc["outcome"] == "passed" and doc["backend"] == "github-actions"
    assert doc["actions_run_url"].startswith("https://github.com/org/guide/actions/runs/")
    local_log = cfg.data_dir / "smoke" / "r1-run-1.log"
    assert doc["log_path"] == str(local_log) and local_log.read_text() == "engine log line\n"
    posts = [r for r in fake_github.requests if r.method == "POST"]
    assert len(posts) == 1 and posts[0].path.endswith("/actions/workflows/smoke.yml/dispatches")


def test_dispatch_finds_the_run_by_title_when_github_answers_204(
    tmp_path, fake_github, monkeypatch
):
    cfg = gha_cfg(tmp_path)
    fake_github.add_workflow(
        "org/guide",
        "smoke.yml",
        on_dispatch=lambda inputs: {"result.json": json.dumps(remote_doc(inputs, "failed"))},
        run_name="smoke {recipe} {run_id}",
        artifact_name="smoke-result",
    )
    real_request = dispatch._Api.request

    def no_details(self, method, path, **kw):
        if method == "POST":
            kw["json"] = {k: v for k, v in kw["json"].items() if k != "return_run_details"}
        return real_request(self, method, path, **kw)

    monkeypatch.setattr(dispatch._Api, "request", no_details)
    with GitHubClient(fake_github.url, token="test-token") as client:
        doc = dispatch_and_wait(cfg, cfg.recipe("r1"), "r1-run-2", client, sleep=lambda s: None)
    assert doc["outcome"] == "failed" and doc["run_id"] == "r1-run-2"


def test_failed_job_without_artifact_is_an_error(tmp_path, fake_github):
    cfg = gha_cfg(tmp_path)

    def on_dispatch(inputs):
        raise RuntimeError("runner offline")

    fake_github.add_workflow("org/guide", "smoke.yml", on_dispatch=on_dispatch)
    with GitHubClient(fake_github.url, token="test-token") as client:
        doc = dispatch_and_wait(cfg, cfg.recipe("r1"), "r1-run-3", client, sleep=lambda s: None)
    assert doc["outcome"] == "error"
    assert "concluded failure without a smoke-result artifact" in doc["reason"]


def test_refused_dispatch_is_never_retried(tmp_path, fake_github):
    cfg = gha_cfg(tmp_path)
    fake_github.add_workflow("org/guide", "smoke.yml")
    fake_github.fail("POST", r"/dispatches", status=500, times=-1)
    with GitHubClient(fake_github.url, token="test-token") as client:
        doc = dispatch_and_wait(cfg, cfg.recipe("r1"), "r1-run-4", client, sleep=lambda s: None)
    assert doc["outcome"] == "error" and "refused: HTTP 500" in doc["reason"]
    assert len([r for r in fake_github.requests if r.method == "POST"]) == 1


def test_result_for_another_run_is_rejected(tmp_path, fake_github):
    cfg = gha_cfg(tmp_path)
    fake_github.add_workflow(
        "org/guide",
        "smoke.yml",
        on_dispatch=lambda inputs: {
            "result.json": json.dumps(remote_doc(dict(inputs, run_id="someone-else")))
        },
        artifact_name="smoke-result",
    )
    with GitHubClient(fake_github.url, token="test-token") as client:
        doc = dispatch_and_wait(cfg, cfg.recipe("r1"), "r1-run-5", client, sleep=lambda s: None)
    assert doc["outcome"] == "error" and "expected 'r1-run-5'" in doc["reason"]


# ---------------------------------------------------------------- triggers that wait


def test_a_host_without_the_gpu_keeps_the_trigger_waiting(tmp_path, store):
    """A `skipped` run answers nothing: no run is recorded, no budget spent, and the trigger
    fires (with its original reason) once a host can run it."""
    cfg = make_cfg(tmp_path)
    ev = evaluate(cfg, {}, [], {}, NOW)
    gpu = {"present": False}

    def runner(cfg, recipe, run_id):
        doc = run_doc(run_id, outcome="passed", target=gpu["present"])
        if not gpu["present"]:
            doc.update(
                outcome="skipped", reason="no NVIDIA GPU visible (NVMLError_LibraryNotFound)"
            )
        return doc

    args = dict(cycle_id=None, at=iso(NOW), runner=runner)
    docs, _ = run_triggers(cfg, store, ev, [item_event("fix-pr")], NOW, **args)
    assert docs == [] and store.smoke_runs() == []
    waiting = store.triggers()["r1"]
    assert waiting["state"] == "waiting" and "NVMLError" in waiting["note"]
    docs, _ = run_triggers(cfg, store, ev, [], NOW, **args)  # still no GPU: still waiting
    assert docs == [] and store.triggers()["r1"]["attempts"] == 2
    gpu["present"] = True
    docs, _ = run_triggers(cfg, store, ev, [], NOW, **args)  # no new event: the stored trigger
    assert [d["outcome"] for d in docs] == ["passed"]
    assert docs[0]["trigger"] == ["item fix-pr of blocker b1 changed"]
    assert store.triggers() == {}
    docs, _ = run_triggers(cfg, store, ev, [], NOW, **args)
    assert docs == []


def actions_workflow(fake_github, seen):
    def on_dispatch(inputs):
        seen.append(inputs)
        return {"result.json": json.dumps(remote_doc(inputs))}

    fake_github.add_workflow(
        "org/guide",
        "smoke.yml",
        on_dispatch=on_dispatch,
        run_name="smoke {recipe} {run_id}",
        artifact_name="smoke-result",
    )


def test_actions_backend_dispatches_once_and_collects_later(tmp_path, fake_github, store):
    cfg = gha_cfg(tmp_path)
    seen = []
    actions_workflow(fake_github, seen)
    ev = evaluate(cfg, {}, [], {}, NOW)
    with GitHubClient(fake_github.url, token="test-token") as client:
        args = dict(cycle_id=None, at=iso(NOW), client=client)
        docs, _ = run_triggers(cfg, store, ev, [item_event("fix-pr")], NOW, **args)
        assert docs == []  # the cycle did not wait for the GPU
        t = store.triggers()["r1"]
        assert t["state"] == "dispatched" and t["actions_run_id"] and t["run_id"]
        # the same change again, before the result: merged into the trigger, never re-dispatched
        docs, _ = run_triggers(cfg, store, ev, [item_event("fix-pr")], NOW, **args)
        for _ in range(5):
            if docs:
                break
            docs, _ = run_triggers(cfg, store, ev, [], NOW, **args)
    assert [d["outcome"] for d in docs] == ["passed"] and docs[0]["run_id"] == t["run_id"]
    assert len(seen) == 1
    assert len([r for r in fake_github.requests if r.method == "POST"]) == 1
    assert store.triggers() == {} and store.smoke_runs()[0]["run_id"] == t["run_id"]


def test_a_vanished_actions_run_is_marked_so(tmp_path, fake_github, store):
    cfg = gha_cfg(tmp_path)
    actions_workflow(fake_github, [])
    ev = evaluate(cfg, {}, [], {}, NOW)
    with GitHubClient(fake_github.url, token="test-token") as client:
        args = dict(cycle_id=None, at=iso(NOW), client=client)
        run_triggers(cfg, store, ev, [item_event("fix-pr")], NOW, **args)
        gh_id = store.triggers()["r1"]["actions_run_id"]
        fake_github.fail("GET", rf"/actions/runs/{gh_id}$", status=404, times=-1)
        docs, _ = run_triggers(cfg, store, ev, [], NOW, **args)
    (doc,) = docs
    assert doc["outcome"] == "error" and doc["vanished"] is True
    assert f"Actions run {gh_id} vanished" in doc["reason"]
    assert store.triggers() == {}
    assert len([r for r in fake_github.requests if r.method == "POST"]) == 1


def test_a_refused_dispatch_is_an_error_run_and_no_trigger_stays(tmp_path, fake_github, store):
    cfg = gha_cfg(tmp_path)
    actions_workflow(fake_github, [])
    fake_github.fail("POST", r"/dispatches", status=500, times=-1)
    ev = evaluate(cfg, {}, [], {}, NOW)
    with GitHubClient(fake_github.url, token="test-token") as client:
        docs, _ = run_triggers(
            cfg, store, ev, [item_event("fix-pr")], NOW, cycle_id=None, at=iso(NOW), client=client
        )
    assert docs[0]["outcome"] == "error" and "refused: HTTP 500" in docs[0]["reason"]
    assert store.triggers() == {}


# ---------------------------------------------------------------- check-now end to end


def test_check_now_runs_the_recipe_when_the_page_becomes_ready(tmp_path, fake_github, monkeypatch):
    bin_dir = tmp_path / "bin"
    fake_nvidia_smi(bin_dir, [RTX3090])
    with_path(monkeypatch, bin_dir)
    monkeypatch.setenv("WATCHER_GPU_SOURCE", "nvidia-smi")
    fake_github.add_pull("up/eng", 1, title="Fix the loader", state="open")
    fake_github.add_issue("up/eng", 2, title="Context")
    fake_github.add_issue("up/other", 3, title="Other")
    fake_github.add_commit("sgl-project/sglang", message="init", date="2026-01-01T00:00:00Z")
    fake_github.add_release("sgl-project/sglang", "v0.5.6", published_at="2026-01-01T00:00:00Z")
    cfg = make_cfg(tmp_path, command=engine_command("--ready-delay", "0.3"))

    def cycle(**kw):
        with GitHubClient(fake_github.url, token="test-token") as client:
            return run_cycle(cfg, client=client, **kw)

    first = cycle()
    assert first.smoke_runs == []  # blocked, first sightings only
    fake_github.update("up/eng", 1, merged=True)
    skipped = cycle(no_smoke=True)
    assert skipped.smoke_runs == [] and skipped.pages["p1"]["status"] == "ready-to-test"

    fake_github.update("up/eng", 2, state="closed")  # a watch item of the blocker changes
    report = cycle()
    (doc,) = report.smoke_runs
    assert doc["outcome"] == "passed" and doc["hardware"]["matches_target"] is True
    assert report.pages["p1"]["status"] == "validated"
    messages = [e["message"] for e in report.events]
    assert any(m.startswith("smoke run ") and ": passed" in m for m in messages)
    assert any("page p1: ready-to-test → validated" in m for m in messages)
    store = Store(cfg.db_path)
    try:
        assert store.statuses()["page:p1"]["status"] == "validated"
        assert store.statuses()["blocker:b1"]["status"] == "verified"
    finally:
        store.close()
    again = cycle()  # nothing changed, validation is fresh: no run
    assert again.smoke_runs == []


# ---------------------------------------------------------------- the verdict on SGLANG.md


def sglang_cfg(tmp_path):
    return load_watch(tmp_path, (REPO / "watch.toml").read_text())


def seed_runs(cfg, docs):
    store = Store(cfg.db_path)
    try:
        for d in docs:
            record_run(store, d)
    finally:
        store.close()


def test_sglang_page_shows_the_classified_failure_in_reader_words(tmp_path):
    cfg = sglang_cfg(tmp_path)
    doc = run_doc("crash-1", outcome="failed")
    doc.update(
        recipe="sglang-nospec-tp1",
        signature="marlin-tile-n",
        blockers_reproduced=["marlin-pad"],
        reason="exited with code 1 before becoming ready. marlin-tile-n (upstream failure)",
        excerpt="HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz\n"
        "RuntimeError: size_n = 96 is not divisible by tile_n_size = 64",
    )
    seed_runs(cfg, [doc])
    run_cycle(cfg, offline=True)
    text = (tmp_path / "docs" / "engines" / "SGLANG.md").read_text()
    store = Store(cfg.db_path)
    try:
        assert store.statuses()["blocker:marlin-pad"]["status"] == "reproduces"
    finally:
        store.close()
    # Readers get the classified failure in words; the run id, the raw exception and the log
    # excerpt stay on the site and in `watcher explain`.
    assert "hf_abc" not in text and "RuntimeError" not in text and "crash-1" not in text
    assert "still fails on an RTX 3090" in text
    assert "still fails on an RTX 3090 (tested" in text and "Marlin int4 kernel rejects" in text
    assert "failed at startup: see blocker 1" in text  # the failure is described once


def test_sglang_page_shows_the_validated_recipe_with_its_numbers(tmp_path):
    cfg = sglang_cfg(tmp_path)
    doc = run_doc("pass-1")
    doc.update(
        recipe="sglang-nospec-tp1",
        hardware={
            "gpus": [{"name": "NVIDIA GeForce RTX 3090", "memory_mib": 24576}],
            "matches_target": True,
        },
        engine_version="0.5.9",
        metrics={"startup_s": 81.0, "ttft_s": 0.12, "decode_tokens_per_s": 38.5,
                 "accept_length": None},
        reason="passed: ready in 81 s, decode 38.5 tok/s",
        comparison=clearing_comparison(),
    )  # fmt: skip
    seed_runs(cfg, [doc])
    report = run_cycle(cfg, offline=True)
    assert report.pages["sglang"]["status"] == "validated"
    text = (tmp_path / "docs" / "engines" / "SGLANG.md").read_text()
    assert "## Recipe — validated" in text
    assert "0.5.9" in text and "decode 38.5 tok/s" in text and "TTFT 0.12 s" in text


def test_check_now_cli_prints_the_run_it_made(tmp_path, fake_github, monkeypatch):
    bin_dir = tmp_path / "bin"
    fake_nvidia_smi(bin_dir, [RTX3090])
    with_path(monkeypatch, bin_dir)
    monkeypatch.setenv("WATCHER_GPU_SOURCE", "nvidia-smi")
    monkeypatch.setenv("GITHUB_API_URL", fake_github.url)
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    fake_github.add_pull("up/eng", 1, title="Fix the loader", merged=True)
    fake_github.add_issue("up/eng", 2, title="Context")
    fake_github.add_issue("up/other", 3, title="Other")
    fake_github.add_commit("sgl-project/sglang", message="init", date="2026-01-01T00:00:00Z")
    fake_github.add_release("sgl-project/sglang", "v0.5.6", published_at="2026-01-01T00:00:00Z")
    cfg = make_cfg(tmp_path, command=engine_command("--ready-delay", "0.3"))
    result = CliRunner().invoke(cli, ["check-now", "--config", str(cfg.path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "p1: validated — wrote" in lines[0]
    assert lines[1].startswith("smoke r1-") and ": passed — passed: ready in" in lines[1]
    again = CliRunner().invoke(cli, ["check-now", "--config", str(cfg.path), "--no-smoke"])
    assert "smoke " not in again.stdout


def test_clock_stepped_back_does_not_starve_the_budget(tmp_path, store):
    """Runs stamped days ahead of now (the clock has since stepped back) cannot be placed in time:
    they are not charged to today's budget; a run a few minutes ahead still is."""
    cfg = make_cfg(tmp_path, smoke="")
    calls = []

    def runner(cfg, recipe, run_id):
        calls.append(run_id)
        return run_doc(run_id, outcome="failed", started=NOW)

    for n in range(3):
        store.add_smoke_run(run_doc(f"future-{n}", started=NOW + timedelta(days=3, hours=n)))
    ev = evaluate(cfg, {}, [], {}, NOW)
    docs, _ = run_triggers(
        cfg, store, ev, [item_event("fix-pr")], NOW, cycle_id=None, at=iso(NOW), runner=runner
    )
    assert len(calls) == 1 and len(docs) == 1
    store.add_smoke_run(run_doc("skew", started=NOW + timedelta(minutes=2)))
    store.add_smoke_run(run_doc("skew2", started=NOW + timedelta(minutes=3)))
    calls.clear()
    docs, _ = run_triggers(
        cfg, store, ev, [item_event("fix-pr")], NOW, cycle_id=None, at=iso(NOW), runner=runner
    )
    assert calls == []  # the two runs a few minutes ahead (and the one above) fill the budget


def test_a_dispatched_bisect_step_counts_against_the_trigger_budget(tmp_path, store):
    """A bisect step sent to GitHub Actions is a launch not yet stored as a run: with one run today
    and one step in flight the budget of 2 is spent, and the trigger waits; once the step is
    collected (no longer pending) and nothing else ran, the same trigger runs."""
    cfg = make_cfg(tmp_path, smoke="")
    calls = []

    def runner(cfg, recipe, run_id):
        calls.append(run_id)
        return run_doc(run_id, outcome="failed", started=NOW)

    store.add_smoke_run(run_doc("today", started=NOW - timedelta(hours=2)))
    step = {
        "index": 3, "build": "up/eng:b103", "run_id": "r1-step", "actions_run_id": 7,
        "dispatched_at": iso(NOW - timedelta(minutes=5)), "note": None,
    }  # fmt: skip
    bisect = {
        "id": "bisect-1", "recipe": "r1", "mode": "fixed", "good": "b100", "bad": "b110",
        "status": "paused", "created_at": iso(NOW - timedelta(hours=1)),
        "updated_at": iso(NOW - timedelta(minutes=5)), "pending": step,
    }  # fmt: skip
    store.put_bisect(bisect)
    ev = evaluate(cfg, {}, [], {}, NOW)
    events = [item_event("fix-pr")]
    docs, _ = run_triggers(cfg, store, ev, events, NOW, cycle_id=None, at=iso(NOW), runner=runner)
    assert calls == [] and docs == []
    assert store.triggers()["r1"]["state"] == "waiting"
    store.put_bisect(dict(bisect, pending=None, updated_at=iso(NOW)))
    docs, _ = run_triggers(cfg, store, ev, [], NOW, cycle_id=None, at=iso(NOW), runner=runner)
    assert len(calls) == 1 and docs[0]["trigger"] == ["item fix-pr of blocker b1 changed"]
