"""The evaluator is a pure function: same stored data, same statuses. Smoke runs are the verdict."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from kits.judgekit import rows, run

from watcher.config.load import load_config, parse_config
from watcher.judge.evaluate import evaluate, transitions

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_nothing_known_is_blocked(cfg):
    ev = evaluate(cfg, {}, [], {}, NOW)
    assert ev.blockers["marlin-pad"].status == "blocked"
    assert ev.pages["sglang"].status == "blocked"
    assert "marlin-pad (blocked)" in ev.pages["sglang"].reason


def test_closed_without_merge_is_not_fixed(cfg):
    ev = evaluate(cfg, rows(**{"vllm-40361": "closed"}), [], {}, NOW)
    assert ev.blockers["marlin-pad"].status == "blocked"


def test_superseded_by_merged_pr_is_a_hint_not_a_fix(cfg):
    items = rows(
        **{"vllm-40361": {"state": "closed", "superseded_by": 45295, "superseded_state": "merged"}}
    )
    ev = evaluate(cfg, items, [], {}, NOW)
    # vLLM fixed its own Marlin copy: shown as a hint, SGLang is still blocked
    assert ev.blockers["marlin-pad"].status == "blocked"
    assert ev.pages["sglang"].status == "blocked"


def test_sglang_loader_fix_clears_marlin_pad(cfg):
    ev = evaluate(cfg, rows(**{"sglang-autoround-mapping": "present"}), [], {}, NOW)
    assert ev.blockers["marlin-pad"].status == "fix-merged"
    # one 3090 still needs the offloader fix (a blocker of both TP=1 recipes)
    assert ev.pages["sglang"].status == "blocked"
    assert "offloader-tied-weights" in ev.pages["sglang"].reason
    fixed = {"sglang-autoround-mapping": "present", "sglang-offloader-tied-weights": "present"}
    ev = evaluate(cfg, rows(**fixed), [], {}, NOW)
    # the no-spec recipe needs only those two: the page becomes ready to test, not validated
    assert ev.pages["sglang"].status == "ready-to-test"
    assert "sglang-nospec-tp1" in ev.pages["sglang"].reason


def test_mislabelled_watch_item_never_clears(cfg):
    ev = evaluate(cfg, rows(**{"vllm-39931": "merged", "vllm-40124": "completed"}), [], {}, NOW)
    assert ev.blockers["deltanet-rollback"].status == "blocked"


def test_context_streams_never_clear_only_sglang_code_does(cfg):
    ev = evaluate(cfg, rows(**{"fla-rollback": "matched", "sglang-gdn": "matched"}), [], {}, NOW)
    assert ev.blockers["deltanet-rollback"].status == "blocked"
    ev = evaluate(cfg, rows(**{"sglang-gdn-spec-state": "absent"}), [], {}, NOW)
    assert ev.blockers["deltanet-rollback"].status == "blocked"
    ev = evaluate(cfg, rows(**{"sglang-gdn-spec-state": "present"}), [], {}, NOW)
    assert ev.blockers["deltanet-rollback"].status == "fix-merged"


def test_rule_all_needs_every_item(tmp_path):
    text = (REPO / "watch.toml").read_text()
    text = text.replace(
        'items = ["sglang-autoround-mapping", "sglang-marlin-guard"]\nrule = "any"',
        'items = ["sglang-autoround-mapping", "sglang-marlin-guard"]\nrule = "all"',
    )
    (tmp_path / "watch.toml").write_text(text)
    cfg = load_config(tmp_path / "watch.toml")
    ev = evaluate(cfg, rows(**{"sglang-autoround-mapping": "present"}), [], {}, NOW)
    assert ev.blockers["marlin-pad"].status == "blocked"
    both = rows(**{"sglang-autoround-mapping": "present", "sglang-marlin-guard": "present"})
    assert evaluate(cfg, both, [], {}, NOW).blockers["marlin-pad"].status == "fix-merged"


def test_signature_in_latest_target_run_reproduces_whatever_upstream_says(cfg):
    items = rows(**{"vllm-40361": "merged"})
    runs = [run("sglang-nospec-tp1", "failed", signature="marlin-tile-n")]
    ev = evaluate(cfg, items, runs, {}, NOW)
    assert ev.blockers["marlin-pad"].status == "reproduces"
    assert ev.pages["sglang"].status == "blocked"


def test_off_target_runs_never_count(cfg):
    items = rows(
        **{"sglang-autoround-mapping": "present", "sglang-offloader-tied-weights": "present"}
    )
    ev = evaluate(cfg, items, [run("sglang-nospec-tp1", "passed", target=False)], {}, NOW)
    assert ev.blockers["marlin-pad"].status == "fix-merged"
    assert ev.pages["sglang"].status == "ready-to-test"
    ev = evaluate(
        cfg,
        items,
        [run("sglang-nospec-tp1", "failed", signature="marlin-tile-n", target=False)],
        {},
        NOW,
    )
    assert ev.blockers["marlin-pad"].status == "fix-merged"


def test_passed_run_verifies_and_validates(cfg):
    ev = evaluate(cfg, {}, [run("sglang-nospec-tp1", "passed")], {}, NOW)
    assert ev.blockers["marlin-pad"].status == "verified"
    assert ev.blockers["deltanet-rollback"].status == "blocked"
    assert ev.pages["sglang"].status == "validated"


def test_startup_blocker_verified_by_a_run_that_got_ready(cfg):
    runs = [run("sglang-eagle-tp1", "failed", signature="spec-decode-hybrid", stage="ready")]
    ev = evaluate(cfg, {}, runs, {}, NOW)
    assert ev.blockers["marlin-pad"].status == "verified"
    assert ev.blockers["deltanet-rollback"].status == "reproduces"


def test_latest_run_wins_and_regression_is_named(cfg):
    runs = [
        run("sglang-nospec-tp1", "passed", started="2026-11-01T00:00:00Z"),
        run("sglang-nospec-tp1", "failed", signature="cuda-oom", started="2026-11-20T00:00:00Z"),
    ]
    ev = evaluate(cfg, {}, runs, {"page:sglang": {"status": "validated"}}, NOW)
    assert ev.pages["sglang"].status == "regressed"
    assert "cuda-oom" in ev.pages["sglang"].reason


def test_override_and_park_expire(tmp_path):
    text = (
        (REPO / "watch.toml")
        .read_text()
        .replace(
            'fails_at = "startup"',
            'fails_at = "startup"\n[blocker.override]\nstatus = "verified"\nreason = "by hand, dual 3090"\nuntil = "2026-12-01"',
        )
        .replace(
            'recipes = ["sglang-mtp-tp1", "sglang-eagle-tp1", "sglang-nospec-tp1"]',
            'recipes = ["sglang-mtp-tp1", "sglang-eagle-tp1", "sglang-nospec-tp1"]\n[page.park]\nreason = "on hold"\nuntil = "2026-11-30"',
        )
    )
    cfg = parse_config(text, tmp_path / "watch.toml")
    ev = evaluate(cfg, {}, [], {}, NOW)
    assert ev.blockers["marlin-pad"].status == "verified"
    assert ev.blockers["marlin-pad"].override["reason"] == "by hand, dual 3090"
    assert ev.pages["sglang"].status == "parked"
    later = datetime(2026, 12, 2, tzinfo=UTC)
    ev = evaluate(cfg, {}, [], {}, later)
    assert (
        ev.blockers["marlin-pad"].status == "blocked" and ev.blockers["marlin-pad"].override is None
    )
    assert ev.pages["sglang"].status == "blocked"


def test_pure_and_transitions(cfg):
    items = rows(
        **{"sglang-autoround-mapping": "present", "sglang-offloader-tied-weights": "present"}
    )
    a = evaluate(cfg, items, [], {}, NOW)
    b = evaluate(cfg, items, [], {}, NOW)
    assert a == b
    prev = {
        "page:sglang": {"status": "blocked"},
        "page:engines": {"status": "blocked"},  # the matrix page: the same recipes
        "blocker:marlin-pad": {"status": "blocked"},
        "blocker:deltanet-rollback": {"status": "blocked"},
        "blocker:eagle3-layer-capture": {"status": "blocked"},
        "blocker:offloader-tied-weights": {"status": "blocked"},
    }
    assert transitions(prev, a.statuses()) == [
        ("blocker:marlin-pad", "blocked", "fix-merged"),
        ("blocker:offloader-tied-weights", "blocked", "fix-merged"),
        ("page:engines", "blocked", "ready-to-test"),
        ("page:sglang", "blocked", "ready-to-test"),
    ]


@pytest.mark.parametrize("outcome", ["started", "interrupted", "skipped"])
def test_runs_without_a_verdict_never_count(cfg, outcome):
    """A run still going, one whose watcher died, or one that never ran: no verdict either way."""
    older = run("sglang-nospec-tp1", "passed")
    newer = run("sglang-nospec-tp1", outcome, started="2026-11-29T11:00:00Z")
    ev = evaluate(cfg, {}, [older, newer], {}, NOW)
    assert ev.blockers["marlin-pad"].status == "verified"
    assert ev.pages["sglang"].status == "validated"


def test_a_quiet_cycle_keeps_an_unreadable_blockers_reason(cfg):
    """Issue 33, item 11: with nothing changed upstream, the second cycle must say what the first
    said ("last known: none"), not read the first cycle's own stand-in `blocked` back as known;
    otherwise the sticky comment is edited on a quiet cycle."""
    items = rows(**{"sglang-offloader-tied-weights": "unreadable"})
    first = evaluate(cfg, items, [], {}, NOW).blockers["offloader-tied-weights"]
    assert first.stale and first.reason.endswith("last known: none")
    stored = {"blocker:offloader-tied-weights": {"status": first.status, "reason": first.reason}}
    second = evaluate(cfg, items, [], stored, NOW).blockers["offloader-tied-weights"]
    assert (second.status, second.reason) == (first.status, first.reason)
    # a status that was known before the items became unreadable is still said
    known = {"blocker:offloader-tied-weights": {"status": "fix-merged", "reason": "fixed"}}
    third = evaluate(cfg, items, [], known, NOW).blockers["offloader-tied-weights"]
    assert third.status == "fix-merged" and third.reason.endswith("last known: fix-merged")
