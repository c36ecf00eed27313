"""Code that moves (issue 20): a watched path missing at its ref is looked up, not written off.

Against the fake GitHub over real HTTP (a rename, a move with heavy edits, a commit of 650 files)
and the replay of the real SGLang history (awq_triton.py's move in #21126, mtp_worker.py's in
#15632, awq.py rewritten into awq/awq.py), through full cycles with a real SQLite store.
"""

from __future__ import annotations

import pytest
from test_code_items import cli, cycle, item_doc, write_config

from watcher.config.model import Item
from watcher.fakes.github import FakeGitHub
from watcher.fakes.replay import ReplayGitHub
from watcher.github.client import GitHubClient
from watcher.poll import moves
from watcher.poll.poller import Poller, read_code_item

SGL = "sgl-project/sglang"
OLD = "python/sglang/srt/layers/quantization/marlin_utils.py"
NEW = "python/sglang/srt/layers/quantization/marlin/marlin_utils.py"
FIXED = "def check(size_n, min_thread_n):\n    return pad_to(size_n, min_thread_n)\n"

ITEM_AND_BLOCKER = f"""
[[item]]
id = "guard"
repo = "{SGL}"
kind = "code"
label = "SGLang's Marlin call site pads"
paths = ["{OLD}"]
present = ['\\bpad_to\\b']

[[item]]
id = "stream"
repo = "{SGL}"
kind = "commits"
label = "Marlin pad fixes"
paths = ["{OLD}"]
pattern = '(?i)\\bpad\\b'

[[blocker]]
id = "marlin-pad"
title = "Marlin pad"
items = ["guard"]

[[page]]
id = "p"
title = "P"
output = "P.md"
blockers = ["marlin-pad"]
"""


def blocker(report, bid="marlin-pad") -> dict:
    return next(b for b in report.status["blockers"] if b["id"] == bid)


def seed_fixed(gh: FakeGitHub) -> None:
    gh.add_commit(SGL, message="init", date="2026-02-01T00:00:00Z", contents={"README.md": "hi"})
    gh.add_commit(
        SGL, message="Marlin: pad size_n", date="2026-02-02T00:00:00Z", contents={OLD: FIXED}
    )


def test_a_renamed_file_is_followed_and_the_blocker_stays_fix_merged(gh, tmp_path):
    seed_fixed(gh)
    cfg_path = write_config(tmp_path, gh, ITEM_AND_BLOCKER)
    first = cycle(cfg_path, gh)
    assert item_doc(first, "guard")["state"] == "present"
    assert blocker(first)["status"] == "fix-merged"

    move = gh.add_commit(
        SGL,
        message="Quantization refactor: marlin/ package (#21126)",
        date="2026-03-01T00:00:00Z",
        contents={OLD: None, NEW: FIXED},
        renamed={NEW: OLD},
    )
    gh.add_commit(
        SGL,
        message="Marlin: pad tile_n",
        date="2026-03-02T00:00:00Z",
        contents={NEW: FIXED + "# pad\n"},
    )
    second = cycle(cfg_path, gh)
    guard = item_doc(second, "guard")
    warning = (
        f"`{OLD}` moved to `{NEW}` in {move['sha'][:7]} (#21126); this item reads the new path:"
        " update `paths`"
    )
    assert guard["state"] == "present" and warning in guard["warnings"]
    assert NEW in guard["url"]  # the permalink is the new path's, not a 404
    assert blocker(second)["status"] == "fix-merged"
    # nothing changed that matters: no item event for the code item, no blocker transition
    assert not [e for e in second.events if e["subject"] in ("guard", "marlin-pad")]
    # the stream follows the new path: the commit after the move is seen
    stream = item_doc(second, "stream")
    assert "Marlin: pad tile_n" in [c["subject"] for c in stream["evidence"]["matches"]]
    assert any("this item follows the new path" in w for w in stream["warnings"])

    # what was learned is remembered: a quiet cycle is all 304s
    gh.reset_requests()
    third = cycle(cfg_path, gh)
    assert item_doc(third, "guard")["state"] == "present"
    assert gh.requests and all(r.status == 304 for r in gh.requests), [
        (r.path, r.query, r.status) for r in gh.requests if r.status != 304
    ]

    # validate --online prints the `paths` edit
    out = cli(["validate", "--config", str(cfg_path), "--online"], tmp_path, gh)
    assert f'guard: suggested edit: paths = ["{NEW}"]' in out.stdout, out.stdout + out.stderr


def test_a_move_with_heavy_edits_only_warns_and_the_blocker_keeps_its_status(gh, tmp_path):
    seed_fixed(gh)
    cfg_path = write_config(tmp_path, gh, ITEM_AND_BLOCKER)
    assert blocker(cycle(cfg_path, gh))["status"] == "fix-merged"
    removed = gh.add_commit(
        SGL,
        message="Rewrite the Marlin helpers (#30000)",
        date="2026-03-01T00:00:00Z",
        contents={OLD: None, NEW: "def other():\n    pass\n"},  # no rename: removed + added
    )
    report = cycle(cfg_path, gh)
    guard = item_doc(report, "guard")
    assert guard["state"] == "unreadable"
    (warning,) = guard["warnings"]
    assert f"removed in {removed['sha'][:7]} (#30000)" in warning
    assert f"possibly moved to `{NEW}` (not used" in warning
    b = blocker(report)
    assert b["status"] == "fix-merged" and b["stale"]  # its last known status, marked stale
    assert "can't check right now" in b["reason"]
    assert not [e for e in report.events if e["kind"] == "blocker"]  # no transition, no comment
    page = (tmp_path / "P.md").read_text()
    assert "can't check right now" in page
    assert "waiting for an upstream fix" not in page
    # the new file is never read as if it were the old one
    assert not any(NEW in (r.path or "") and "/contents/" in r.path for r in gh.requests)


def test_a_blocker_never_read_is_not_called_waiting_for_a_fix(gh, tmp_path):
    gh.add_commit(SGL, message="init", date="2026-02-01T00:00:00Z", contents={"README.md": "hi"})
    cfg_path = write_config(tmp_path, gh, ITEM_AND_BLOCKER)
    report = cycle(cfg_path, gh)
    assert item_doc(report, "guard")["state"] == "unreadable"
    b = blocker(report)
    assert b["status"] == "blocked" and b["stale"]
    page = (tmp_path / "P.md").read_text()
    assert "can't check right now" in page and "waiting for an upstream fix" not in page
    # `all`: a readable item that fails already decides it; then unreadable changes nothing
    body = ITEM_AND_BLOCKER.replace(
        'items = ["guard"]', 'items = ["guard", "stream"]\nrule = "all"'
    )
    (tmp_path / "all").mkdir()
    report = cycle(write_config(tmp_path / "all", gh, body), gh)
    b = blocker(report)
    assert b["status"] == "blocked" and not b["stale"]


def test_a_rename_is_found_on_the_third_page_of_a_commits_files(gh):
    gh.add_commit(SGL, message="init", date="2026-02-01T00:00:00Z", contents={OLD: FIXED})
    many = {f"docs/page_{n:03}.md": f"{n}\n" for n in range(650)}
    big = gh.add_commit(
        SGL,
        message="Big move (#1)",
        date="2026-02-02T00:00:00Z",
        contents={**many, OLD: None, NEW: FIXED},
        renamed={NEW: OLD},
    )
    with GitHubClient(gh.url, token="test-token") as client:
        page = client.get(f"/repos/{SGL}/commits/{big['sha']}")
        assert len(page.data["files"]) == 300 and "next" in page.links
        move = moves.find_move(client, SGL, OLD, "main", None)
    assert move == moves.Move(path=OLD, sha=big["sha"], new=NEW, pr=1)
    pages = [r for r in gh.requests if r.path.endswith(big["sha"])]
    assert len(pages) == 4  # the first read above, then three pages: 300 + 300 + 52


def test_the_commit_answer_lists_a_rename_as_github_does(gh):
    gh.add_commit(SGL, message="init", date="2026-02-01T00:00:00Z", contents={OLD: FIXED})
    c = gh.add_commit(
        SGL,
        message="mv",
        date="2026-02-02T00:00:00Z",
        contents={OLD: None, NEW: FIXED},
        renamed={NEW: OLD},
    )
    with GitHubClient(gh.url, token="test-token") as client:
        files = client.get_json(f"/repos/{SGL}/commits/{c['sha']}")["files"]
        listed = client.get_json(f"/repos/{SGL}/commits", {"path": OLD})
    assert [(f["filename"], f["status"], f.get("previous_filename")) for f in files] == [
        (NEW, "renamed", OLD)
    ]
    assert listed[0]["sha"] == c["sha"]  # the path filter sees a rename's old path


# ------------------------------------------------------------------ the real history


@pytest.fixture(scope="module")
def replay():
    with ReplayGitHub() as fake:
        yield fake


def poll(replay: ReplayGitHub, item: Item):
    with GitHubClient(replay.url, token="test-token", retries=0) as client:
        return Poller(client).poll_all([item])[item.id]


AWQ_TRITON = "python/sglang/srt/layers/quantization/awq_triton.py"


def test_replay_lists_the_awq_move_as_a_rename(replay):
    with GitHubClient(replay.url, token="test-token", retries=0) as client:
        data = client.get_json(f"/repos/{SGL}/commits/577dbc4ab9")
    entries = {f["filename"]: f for f in data["files"]}
    moved = entries["python/sglang/srt/layers/quantization/awq/awq_triton.py"]
    assert moved["status"] == "renamed" and moved["previous_filename"] == AWQ_TRITON
    assert AWQ_TRITON not in entries  # one entry per rename, under its new name
    assert entries["python/sglang/srt/layers/quantization/awq.py"]["status"] == "removed"
    assert entries["python/sglang/srt/layers/quantization/awq/awq.py"]["status"] == "added"


def test_replay_code_item_follows_awq_triton_into_awq(replay):
    item = Item(
        id="awq",
        repo=SGL,
        kind="code",
        paths=(AWQ_TRITON,),
        present=(r"\bdef\s+awq_dequantize_triton\b",),
    )
    obs = poll(replay, item)
    assert obs.error is None, obs.error
    assert obs.state == "present"
    assert obs.details["code"]["files_read"] == [
        "python/sglang/srt/layers/quantization/awq/awq_triton.py"
    ]
    (warning,) = obs.details["warnings"]
    assert warning.startswith(
        f"`{AWQ_TRITON}` moved to `python/sglang/srt/layers/quantization/awq/awq_triton.py` in 577dbc4 (#21126)"
    )


def test_replay_heavy_edit_move_warns_possibly_moved(replay):
    old = "python/sglang/srt/layers/quantization/awq.py"
    item = Item(id="awq", repo=SGL, kind="code", paths=(old,), present=(r"\bclass AWQConfig\b",))
    obs = poll(replay, item)
    assert obs.state == "unreadable"
    (warning,) = obs.details["warnings"]
    assert "removed in 577dbc4 (#21126)" in warning
    assert "possibly moved to `python/sglang/srt/layers/quantization/awq/awq.py`" in warning
    assert obs.details["code"]["files_read"] == []


def test_replay_stream_follows_mtp_worker_after_its_rename(replay):
    item = Item(
        id="mtp",
        repo=SGL,
        kind="commits",
        paths=("python/sglang/srt/speculative/mtp_worker.py",),
        pattern=r".",
        since="2025-12-01T00:00:00Z",
    )
    obs = poll(replay, item)
    assert obs.error is None, obs.error
    moved = obs.details["moves"][0]
    assert moved["new"] == "python/sglang/srt/speculative/multi_layer_eagle_worker.py"
    assert moved["sha"].startswith("3c882db3ad") and moved["pr"] == 15632
    dates = [c["date"] for c in obs.details["commits"]]
    assert max(dates) > "2026-01-01"  # commits after the move are read on the new path


def test_read_code_item_alone_follows_the_move_too(replay):
    """What `watcher backtest` calls: no tree, no poller; a 404 is looked up all the same."""
    item = Item(
        id="awq",
        repo=SGL,
        kind="code",
        paths=(AWQ_TRITON,),
        present=(r"\bdef\s+awq_dequantize_triton\b",),
    )
    with GitHubClient(replay.url, token="test-token", retries=0) as client:
        state, evidence = read_code_item(client, item, "main")
    assert state == "present"
    assert evidence["moved"] == {
        AWQ_TRITON: "python/sglang/srt/layers/quantization/awq/awq_triton.py"
    }
