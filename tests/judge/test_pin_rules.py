"""The pin rules themselves, on stored pins as the pins stage writes them (issue 32's mutation
set: each a slip that passed every test of the pins' path): what a compare status says about a
fix and a pin, when a blocker's fixes hold a recipe, and the tracker's "in our pin" over every
pin of the fix's engine."""

from __future__ import annotations

import pytest

from watcher.judge.pins import AWAITING_PIN, IN_PIN, fix_state, readiness, tracker_check

VLLM = "vllm-project/vllm"
FIX_A, FIX_B = "a" * 40, "b" * 40


@pytest.mark.parametrize(
    ("status", "state"),
    [("ahead", IN_PIN), ("identical", IN_PIN), ("behind", AWAITING_PIN),
     ("diverged", AWAITING_PIN), (None, None), ("404", None)],
)  # fmt: skip
def test_a_compare_status_says_in_pin_awaiting_or_nothing(status, state):
    # compare/{fix}...{pin}: the pin ahead of (or at) the fix carries it; a pin behind the
    # fix, or on another branch from it (diverged), does not
    assert fix_state(status) == state


def _pin(*fixes: tuple[str, str, str], sha: str | None = "c" * 40) -> dict:
    return {
        "repo": VLLM,
        "ref": "v0.23.1",
        "resolved": {"sha": sha} if sha else {},
        "fixes": [
            {"blocker": b, "fix_sha": s, "compare": c, "first_release": "v0.24.0"}
            for b, s, c in fixes
        ],
    }


def test_a_blocker_holds_the_recipe_only_when_every_fix_of_it_waits_for_a_newer_build():
    both_wait = _pin(("b", FIX_A, "behind"), ("b", FIX_B, "diverged"))
    one_in = _pin(("b", FIX_A, "behind"), ("b", FIX_B, "ahead"))
    assert readiness(both_wait, {"b": "fix-merged"})["held_by_pin"] == ["b"]
    assert readiness(one_in, {"b": "fix-merged"})["held_by_pin"] == []
    assert readiness(one_in, {"b": "fix-merged"})["ready_on_pin"] is True


def test_the_tracker_says_in_our_pin_only_when_every_pin_of_the_engine_carries_the_fix():
    row = {"repo": VLLM, "details": {"merge_commit_sha": FIX_A}}
    carried = _pin(("b", FIX_A, "ahead"))
    unknown = _pin(("b", FIX_B, "ahead"))  # this pin never compared FIX_A
    unresolved = _pin(("b", FIX_A, "ahead"), sha=None)
    assert tracker_check({"r1": carried})(None, row) is True
    assert tracker_check({"r1": carried, "r2": unknown})(None, row) is None
    assert tracker_check({"r1": carried, "r2": unresolved})(None, row) is None
    assert tracker_check({"r1": carried, "r2": _pin(("b", FIX_A, "behind"))})(None, row) is False
