"""The stored pins in the pure rules: a page whose cleared blockers are fixed upstream but not in
its recipe's pin stays `blocked`, and the tracker's 🟢 needs the fix in every pin of its engine."""

from __future__ import annotations

from kits.pinkit import VLLM, marlin_watch
from kits.triggerkit import NOW
from kits.watchtoml import load_watch

from watcher.config.tracker import Link
from watcher.judge.evaluate import evaluate
from watcher.judge.pins import tracker_check

FIX = "f" * 40
ITEMS = {
    "marlin-fix": {
        "state": "merged",
        "repo": VLLM,
        "number": 45295,
        "details": {"merge_commit_sha": FIX, "merged_at": "2026-06-30T10:00:00Z"},
    }
}
LINK = Link(VLLM, "pull", "45295", f"https://github.com/{VLLM}/pull/45295")

WATCH = marlin_watch(["vllm", "serve", "m"])


def pin(compare: str | None, ref: str = "v0.23.1", sha: str | None = "a" * 40) -> dict:
    return {
        "kind": "tag",
        "reference": f"vllm/vllm-openai:{ref}",
        "ref": ref,
        "repo": VLLM,
        "resolved": {"sha": sha} if sha else {"why": "no tag"},
        "fixes": [
            {
                "blocker": "marlin-pad",
                "item": "marlin-fix",
                "ref": "vllm#45295",
                "fix_sha": FIX,
                "merged_at": "2026-06-30T10:00:00Z",
                "first_release": "v0.24.0",
                "compare": compare,
            }
        ],
    }


def page(tmp_path, pins):
    cfg = load_watch(tmp_path, WATCH)
    return evaluate(cfg, ITEMS, [], {}, NOW, pins).pages["vllm"]


def test_a_fix_not_in_the_pin_keeps_the_page_blocked_in_the_guides_words(tmp_path):
    st = page(tmp_path, {"vllm-tp2": pin("behind")})
    assert (st.status, st.held_by_pin) == ("blocked", ("vllm-tp2",))
    assert st.reason == (
        "blocked: vllm-tp2 is not ready to test on its pin (marlin-pad: fixed upstream in"
        " vllm#45295 (2026-06-30); not in our pin v0.23.1; first in v0.24.0)"
    )


def test_in_the_pin_unknown_or_no_pin_is_ready_to_test_as_before(tmp_path):
    before = page(tmp_path, None)
    assert before.status == "ready-to-test"
    for pins in ({}, {"vllm-tp2": pin("ahead")}, {"vllm-tp2": pin(None)}):
        assert page(tmp_path, pins) == before


def test_tracker_landed_needs_the_fix_in_every_pin_of_its_engine():
    row = ITEMS["marlin-fix"]
    assert tracker_check({"a": pin("ahead"), "b": pin("identical")})(LINK, row) is True
    assert tracker_check({"a": pin("ahead"), "b": pin("behind")})(LINK, row) is False
    assert tracker_check({"a": pin("ahead"), "b": pin(None)})(LINK, row) is None
    assert tracker_check({"a": pin("ahead"), "b": pin("ahead", sha=None)})(LINK, row) is None
    assert tracker_check({})(LINK, row) is None  # no recipe pins vLLM
    other = {**pin("ahead"), "repo": "ggml-org/llama.cpp"}
    assert tracker_check({"a": other})(LINK, row) is None
    unrelated = {**pin("ahead"), "fixes": []}  # the pins compare only their blockers' fixes
    assert tracker_check({"a": unrelated})(LINK, row) is None
