"""Whom to believe (issue 20): only upstream fixes upstream, and only changes that matter trigger.

Against the fake GitHub over real HTTP, through full cycles with a real SQLite store; triggers
through `due_recipes` on what the cycle recorded.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from test_code_items import cycle, item_doc, write_config

from watcher.config.load import load_config
from watcher.fakes.github import FakeGitHub
from watcher.judge.evaluate import evaluate
from watcher.smoke.trigger import due_recipes
from watcher.store.db import Store

VLLM = "vllm-project/vllm"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def config(extra: str = "") -> str:
    return f"""
[[item]]
id = "pad"
repo = "{VLLM}"
kind = "pull"
number = 40361
label = "Marlin pad"
{extra}

[[blocker]]
id = "b"
title = "Marlin pad"
items = ["pad"]

[[recipe]]
id = "r"
engine = "vllm"
blockers = ["b"]
command = ["true"]

[[page]]
id = "p"
title = "P"
output = "P.md"
blockers = ["b"]
recipes = ["r"]
"""


@pytest.fixture
def gh():
    with FakeGitHub() as fake:
        fake.add_pull(VLLM, 40361, title="[Bugfix] Marlin pad", state="closed")
        yield fake


def due(cfg_path, report):
    cfg = load_config(cfg_path)
    store = Store(cfg.db_path)
    ev = evaluate(cfg, store.items(), store.smoke_runs(), store.statuses(), NOW)
    return [(d.recipe, d.reasons) for d in due_recipes(cfg, store, ev, report.events, NOW)]


def blocker(report) -> str:
    return next(b for b in report.status["blockers"] if b["id"] == "b")["status"]


def test_a_strangers_merged_pr_that_mentions_the_item_changes_nothing(gh, tmp_path):
    # Every item read every cycle: a stranger's reference shows in no feed watcher reads, so
    # otherwise the closed pull is read again (and the reference shown) on its sweep turn only.
    cfg_path = write_config(tmp_path, gh, "full_read_every = 1\n" + config())
    first = cycle(cfg_path, gh)
    assert item_doc(first, "pad")["state"] == "closed" and blocker(first) == "blocked"
    gh.add_pull("stranger/vllm", 1, title="mention vllm-project/vllm#40361", merged=True)
    gh.add_cross_reference(VLLM, 40361, source_repo="stranger/vllm", source_number=1)
    second = cycle(cfg_path, gh)
    pad = item_doc(second, "pad")
    assert pad["superseded_by"] is None and blocker(second) == "blocked"
    (context,) = pad["evidence"]["referenced_by"]
    assert context["repo"] == "stranger/vllm" and context["why"] == "not from a trusted repository"
    assert not [e for e in second.events if e["subject"] in ("pad", "b")]
    assert due(cfg_path, second) == []
    assert "stranger" not in (tmp_path / "P.md").read_text().split("## What changed")[0].lower()


def test_an_unmerged_pr_in_the_items_own_repo_is_context_only(gh, tmp_path):
    cfg_path = write_config(tmp_path, gh, config())
    cycle(cfg_path, gh)
    gh.add_pull(VLLM, 45000, title="[Kernel] Marlin: pad n (draft)", state="open")
    gh.add_cross_reference(VLLM, 40361, source_repo=VLLM, source_number=45000)
    second = cycle(cfg_path, gh)
    pad = item_doc(second, "pad")
    assert pad["superseded_by"] is None
    assert pad["evidence"]["referenced_by"][0]["why"] == "not merged"
    assert not [e for e in second.events if e["subject"] in ("pad", "b")]
    assert due(cfg_path, second) == []


def test_a_merged_pr_in_the_items_repo_supersedes_it_and_triggers(gh, tmp_path):
    cfg_path = write_config(tmp_path, gh, config())
    cycle(cfg_path, gh)
    gh.add_pull(VLLM, 45295, title="[Kernel] Marlin: pad n", merged=True)
    gh.add_cross_reference(VLLM, 40361, source_repo=VLLM, source_number=45295)
    second = cycle(cfg_path, gh)
    pad = item_doc(second, "pad")
    assert pad["superseded_by"] == 45295 and pad["evidence"]["superseded"] == f"{VLLM}#45295"
    assert blocker(second) == "fix-merged"
    assert due(cfg_path, second)[0][0] == "r"


def test_a_merge_into_another_branch_does_not_count(gh, tmp_path):
    cfg_path = write_config(tmp_path, gh, config())
    cycle(cfg_path, gh)
    gh.add_pull(VLLM, 45296, title="backport", merged=True, base_ref="release-0.9")
    gh.add_cross_reference(VLLM, 40361, source_repo=VLLM, source_number=45296)
    second = cycle(cfg_path, gh)
    pad = item_doc(second, "pad")
    assert pad["superseded_by"] is None and blocker(second) == "blocked"
    assert pad["evidence"]["referenced_by"][0]["why"] == "merged into release-0.9, not main"


def test_a_configured_supersede_from_repository_counts_and_is_named(gh, tmp_path):
    cfg_path = write_config(tmp_path, gh, config('supersede_from = ["neuralmagic/vllm"]'))
    cycle(cfg_path, gh)
    gh.add_pull("neuralmagic/vllm", 7, title="Marlin pad upstreamed", merged=True)
    gh.add_cross_reference(VLLM, 40361, source_repo="neuralmagic/vllm", source_number=7)
    second = cycle(cfg_path, gh)
    pad = item_doc(second, "pad")
    assert pad["superseded_by"] == 7 and pad["evidence"]["superseded"] == "neuralmagic/vllm#7"
    assert "neuralmagic/vllm #7" in pad["summary"] or "neuralmagic/vllm#7" in pad["summary"]
    assert blocker(second) == "fix-merged"


def test_a_title_edit_triggers_nothing(gh, tmp_path):
    cfg_path = write_config(tmp_path, gh, config())
    cycle(cfg_path, gh)
    gh.update(VLLM, 40361, title="[Bugfix] Marlin pad (edited, again)", body="new body")
    second = cycle(cfg_path, gh)
    assert item_doc(second, "pad")["title"] == "[Bugfix] Marlin pad (edited, again)"  # shown
    assert second.changes == 1  # stored as an observation
    assert [e for e in second.events if e["kind"] == "item"] == []  # but no event
    assert due(cfg_path, second) == []


ISSUE = """
[[item]]
id = "iss"
repo = "sgl-project/sglang"
kind = "issue"
number = 19406
"""


@pytest.mark.parametrize(
    "closer, linked, state",
    [
        ("reporter", False, "closed-by-author"),  # the author alone said "completed"
        ("maintainer", False, "completed"),
        ("reporter", True, "completed"),  # a merged PR in the repo references it
    ],
)
def test_an_issue_closed_by_its_own_author_is_not_fixed(gh, tmp_path, closer, linked, state):
    sgl = "sgl-project/sglang"
    gh.add_issue(
        sgl, 19406, title="Marlin crash", user="reporter", state="closed", closed_by=closer
    )
    if linked:
        gh.add_pull(sgl, 20370, title="AutoRound: keep packed_modules_mapping", merged=True)
        gh.add_cross_reference(sgl, 19406, source_repo=sgl, source_number=20370)
    report = cycle(write_config(tmp_path, gh, ISSUE), gh)
    doc = item_doc(report, "iss")
    assert doc["state"] == state
    if state == "closed-by-author":
        assert "closed by its author" in doc["summary"]


def test_closed_by_from_the_timeline_when_the_issue_does_not_say(gh, tmp_path):
    sgl = "sgl-project/sglang"
    gh.add_issue(sgl, 19406, title="Marlin crash", user="reporter", state="closed", closed_by="")
    gh.add_timeline_event(sgl, 19406, {"event": "closed", "actor": "reporter"})
    report = cycle(write_config(tmp_path, gh, ISSUE), gh)
    assert item_doc(report, "iss")["state"] == "closed-by-author"


# ------------------------------------------------------------------ events only on change

RELEASED = """
[[item]]
id = "guard"
repo = "sgl-project/sglang"
kind = "code"
paths = ["marlin_utils.py"]
ref = "latest-release"
absent = ['%\\s*MIN_THREAD_N\\s*!=\\s*0']
"""


def test_a_quiet_release_records_no_x_to_x_event(gh, tmp_path):
    sgl = "sgl-project/sglang"
    gh.add_commit(
        sgl,
        message="init",
        date="2026-02-01T00:00:00Z",
        contents={"marlin_utils.py": "if n % MIN_THREAD_N != 0:\n    raise\n"},
    )
    gh.add_release(sgl, "v0.5.9", published_at="2026-02-02T00:00:00Z")
    cfg_path = write_config(tmp_path, gh, RELEASED)
    first = cycle(cfg_path, gh)
    assert item_doc(first, "guard")["state"] == "absent"
    gh.add_commit(sgl, message="docs", date="2026-03-01T00:00:00Z", contents={"README.md": "x"})
    gh.add_release(sgl, "v0.5.10", published_at="2026-03-02T00:00:00Z")
    second = cycle(cfg_path, gh)
    doc = item_doc(second, "guard")
    assert doc["state"] == "absent" and doc["evidence"]["ref"] == "v0.5.10"  # re-read there
    assert [e for e in second.events if e["kind"] == "item"] == []  # no "absent → absent"
    store = Store(load_config(cfg_path).db_path)
    rows = store.db.execute(
        "SELECT old, new FROM events WHERE kind = 'item' AND old IS NOT NULL"
    ).fetchall()
    assert all(old != new for old, new in rows), rows


def test_a_reference_whose_source_names_no_repository_is_never_taken_as_the_items_own(gh, tmp_path):
    # Issue 32 L2: a malformed answer (no `repository`, no URLs) once read as the item's own
    # repository, so a merged PR there with that number superseded the item (fail-open).
    cfg_path = write_config(tmp_path, gh, "full_read_every = 1\n" + config())
    cycle(cfg_path, gh)
    gh.add_pull(VLLM, 45001, title="[Bugfix] Marlin pad, again", merged=True)
    source = {"number": 45001, "title": "[Bugfix] Marlin pad, again", "pull_request": {}}
    gh.add_timeline_event(VLLM, 40361, {"event": "cross-referenced", "source": {"issue": source}})
    second = cycle(cfg_path, gh)
    pad = item_doc(second, "pad")
    assert pad["superseded_by"] is None and blocker(second) == "blocked"
    (context,) = pad["evidence"]["referenced_by"]
    assert context["number"] == 45001 and context["why"] == "names no repository"
    assert due(cfg_path, second) == []
