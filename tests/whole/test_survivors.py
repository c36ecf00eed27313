"""Tests for the one-line faults that survived every test of their module (issue 21).

Each test passes on correct code and fails under one realistic fault that mutation testing left
alive (bench/mutants.py applies them one at a time). Faults in github.py, answers.py and
scaffold.py are caught in test_pagination_bounds.py, test_answer_shapes.py and
test_scaffold_injection.py.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kits.judgekit import rows, run

from watcher.config.model import Hardware, Item
from watcher.core.errors import GitHubError
from watcher.core.redact import redact
from watcher.fakes.github import FakeGitHub
from watcher.github.client import GitHubClient
from watcher.judge.evaluate import evaluate
from watcher.smoke.hardware import Gpu, GpuReading, check_hardware

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


# ---------------------------------------------------------------- evaluate.py


def test_an_error_run_on_target_hardware_does_not_validate(cfg):
    ev = evaluate(cfg, {}, [run("sglang-nospec-tp1", "error", stage="launch")], {}, NOW)
    assert ev.pages["sglang"].status != "validated"


def test_regressed_is_kept_while_the_recipe_still_fails(cfg):
    previous = {"page:sglang": {"status": "regressed"}}
    ev = evaluate(cfg, {}, [run("sglang-nospec-tp1", "failed")], previous, NOW)
    assert ev.pages["sglang"].status == "regressed"


def test_a_rule_all_blocker_without_items_is_not_fix_merged(cfg):
    blockers = tuple(
        dataclasses.replace(b, items=(), rule="all") if b.id == "marlin-pad" else b
        for b in cfg.blockers
    )
    ev = evaluate(dataclasses.replace(cfg, blockers=blockers), rows(), [], {}, NOW)
    assert ev.blockers["marlin-pad"].status != "fix-merged"


# ---------------------------------------------------------------- poll.py


def test_only_a_404_on_latest_release_falls_back_to_the_newest_tag():
    from watcher.poll.heads import resolve_ref

    with FakeGitHub() as gh:
        gh.add_commit("o/r", message="init", date="2026-01-01T00:00:00Z", contents={"a": "b"})
        gh.add_tag("o/r", "v1")
        gh.fail("GET", r"/releases/latest$", status=500, times=-1)
        with pytest.raises(GitHubError, match="HTTP 500"):
            resolve_ref(GitHubClient(gh.url, retries=0), "o/r", "latest-release")
        gh.clear_faults()
        assert resolve_ref(GitHubClient(gh.url), "o/r", "latest-release") == "v1"  # a real 404


# ---------------------------------------------------------------- hardware.py


def test_the_gpu_count_counts_only_matching_gpus():
    mixed = GpuReading(
        gpus=(
            Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),
            Gpu("NVIDIA A10", 23028, "8.6"),
        ),
        source="test",
    )
    assert not check_hardware(Hardware("RTX 3090", 2, 24000), mixed).matches_target
    assert check_hardware(Hardware("RTX 3090", 1, 24000), mixed).matches_target


# ---------------------------------------------------------------- classify.py


@pytest.mark.parametrize("nccl_first", [True, False])
def test_family_priority_holds_across_blocks(tmp_path, nccl_first):
    from watcher.smoke.classify import BLOCK_BYTES, Classifier

    nccl = b"RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error\n"
    oom = b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    pad = b"INFO step ok\n" * (2 * BLOCK_BYTES // 13)
    first, second = (nccl, oom) if nccl_first else (oom, nccl)
    log = tmp_path / "run.log"
    log.write_bytes(first + pad + second)
    found = Classifier().scan(log)
    assert found is not None and found.signature.id == "nccl"


# ---------------------------------------------------------------- redact.py


@pytest.mark.parametrize("prefix", ["ghp_", "ghs_", "gho_", "ghu_", "ghr_", "github_pat_"])
def test_every_github_token_kind_is_redacted(prefix):
    token = prefix + "A1b2C3d4E5f6G7h8I9j0K1l2"
    assert token not in redact(f"clone failed with {token} here")


def test_userinfo_in_a_url_is_dropped():
    out = redact("GET https://bot:s3cret@ghe.example.com/api/v3/repos failed")
    assert "s3cret" not in out and "bot:" not in out and "ghe.example.com/api/v3" in out


# ---------------------------------------------------------------- backtest.py


def test_backtest_replays_past_the_items_max_pages():
    from watcher.poll.backtest import Backtest

    with FakeGitHub() as gh:
        for i in range(250):
            gh.add_commit("o/r", message=f"c {i}", date=f"2026-01-01T00:{i // 60:02}:{i % 60:02}Z")
        item = Item(id="c", repo="o/r", kind="commits", pattern="c", max_pages=1)
        bt = Backtest(GitHubClient(gh.url), datetime(2025, 12, 1, tzinfo=UTC))
        out = bt._commits(item, datetime(2026, 2, 1, tzinfo=UTC))
    assert out["scanned"] == 250


# ---------------------------------------------------------------- store.py


def test_a_transaction_rolls_back_on_an_exception(tmp_path):
    from watcher.store.db import Store

    store = Store(tmp_path / "w.db")
    try:
        with pytest.raises(RuntimeError):
            with store.transaction():
                store.set_status("page:p", "validated", "2026-01-01", "r", "2026-01-01")
                raise RuntimeError("crash mid-cycle")
        assert store.statuses() == {}
    finally:
        store.close()


# ---------------------------------------------------------------- comments.py


def test_a_comment_absent_from_the_listing_is_never_edited():
    from watcher.github.comments import CommentError, GithubComments

    with FakeGitHub() as gh:
        gh.add_issue("o/guide", 1, title="tracking")
        theirs = gh.add_comment("o/guide", 1, body="someone's comment", user="alice")
        api = GithubComments("o/guide", 1, token="test-token", base_url=gh.url)
        try:
            api.list_comments()
            other = gh.add_comment("o/guide", 1, body="a later one", user="watcher-bot")
            for cid in (other["id"], theirs["id"] + 1000):
                with pytest.raises(CommentError, match="not in the listing"):
                    api.edit(cid, "overwritten")
        finally:
            api.close()
        assert not [r for r in gh.requests if r.method == "PATCH"]


# ---------------------------------------------------------------- redact.py, issue 21 item 7


def test_an_authorization_header_loses_its_value_not_only_its_scheme():
    for line in ("Authorization: Bearer abc123secret", "authorization: token abc123secret"):
        assert "abc123secret" not in redact(line), redact(line)


def test_code_that_merely_ends_in_token_is_left_alone():
    code = "def f(retrieve_parent_token=None, max_tokens=4): pass"
    assert redact(code) == code
    assert "s3cr3t" not in redact("HF_TOKEN=s3cr3t GITHUB_TOKEN=s3cr3t token: s3cr3t")


# ------------------------------------------- faults of bench/mutants.py that main's tests missed


def test_merged_at_alone_means_merged():
    """The pulls list (and some answers) carry `merged_at` but no `merged` boolean."""
    from watcher.poll.poller import pull_state

    assert pull_state({"state": "closed", "merged_at": "2026-06-12T12:00:00Z"}) == "merged"
    assert pull_state({"state": "closed", "merged": None, "merged_at": None}) == "closed"


def test_a_transient_error_is_retried_once():
    with FakeGitHub() as gh:
        gh.add_issue("o/r", 1, title="t")
        gh.fail("GET", r"/issues/1$", status=502, times=1)
        client = GitHubClient(gh.url, retries=1, sleep=lambda s: None)
        assert client.get_json("/repos/o/r/issues/1")["title"] == "t"
        assert [r.status for r in gh.requests] == [502, 200]


def test_a_redirect_of_a_write_is_never_followed():
    with FakeGitHub() as gh:
        gh.add_issue("o/r", 1, title="t")
        where = f"{gh.url}/repos/o/r/issues/1/comments"
        gh.fail("POST", r"/issues/1/comments$", mode="redirect", headers={"Location": where})
        client = GitHubClient(gh.url, token="test-token")
        answer = client.send("POST", "/repos/o/r/issues/1/comments", json_body={"body": "x"})
        assert answer.status == 301
        assert [r.method for r in gh.requests] == ["POST"]


def test_a_prerelease_is_not_the_release_a_fix_shipped_in():
    from watcher.poll.poller import Poller

    with FakeGitHub() as gh:
        c1 = gh.add_commit("o/r", message="fix", date="2026-01-01T00:00:00Z", contents={"a": "1"})
        gh.add_release("o/r", "v1rc1", published_at="2026-01-02T00:00:00Z", prerelease=True)
        poller = Poller(GitHubClient(gh.url))
        assert poller.first_release_containing("o/r", c1["sha"]) is None
        gh.add_commit("o/r", message="more", date="2026-01-03T00:00:00Z", contents={"a": "2"})
        gh.add_release("o/r", "v1", published_at="2026-01-04T00:00:00Z")
        assert Poller(GitHubClient(gh.url)).first_release_containing("o/r", c1["sha"]) == "v1"


def test_a_comment_post_answered_200_is_not_counted_as_written():
    """Only a 201 is a created comment (a 200 is, say, a proxy's cached page)."""
    from watcher.github.comments import CommentError, GithubComments

    with FakeGitHub() as gh:
        gh.add_issue("o/guide", 1, title="tracking")
        gh.fail("POST", r"/issues/1/comments$", status=200, body={"id": 5, "body": "x"})
        api = GithubComments("o/guide", 1, token="test-token", base_url=gh.url)
        try:
            with pytest.raises(CommentError, match="not counted as written"):
                api.create("hello")
        finally:
            api.close()
