"""A code item reads a file over the contents API's 1 MB limit through the git blobs API, bounded
(issue 21 item 7). GitHub answers such a file with "encoding": "none" and no content; the fake
GitHub does the same, and serves /git/blobs/{sha}."""

from __future__ import annotations

import pytest

from watcher.config.model import Item
from watcher.fakes.github import FakeGitHub
from watcher.github.client import GitHubClient
from watcher.poll import poller as poll

BIG = "x = 1\n" * 250_000 + "pad_to(n)\n"  # 1.5 MB


@pytest.fixture
def gh():
    with FakeGitHub() as gh:
        gh.add_commit("o/r", message="big", date="2026-02-01T00:00:00Z", contents={"big.py": BIG})
        yield gh


def item() -> Item:
    return Item(id="g", repo="o/r", kind="code", paths=("big.py",), present=(r"\bpad_to\b",))


def test_a_file_over_1_mb_is_read_through_the_blobs_api(gh):
    state, evidence = poll.read_code_item(GitHubClient(gh.url), item(), "main")
    assert state == "present"
    assert evidence["lines"][0]["line"] == 250_001
    assert any("/git/blobs/" in r.path for r in gh.requests)


def test_a_file_past_the_cap_is_a_clear_error(gh, monkeypatch):
    monkeypatch.setattr(poll, "MAX_CODE_FILE_BYTES", 1024 * 1024, raising=False)
    state, evidence = poll.read_code_item(GitHubClient(gh.url), item(), "main")
    assert state == "unreadable"  # neither fixed nor not fixed (issue 20)
    assert "a code item reads files up to 1 MiB" in evidence["unreadable"]
    assert not any("/git/blobs/" in r.path for r in gh.requests)
