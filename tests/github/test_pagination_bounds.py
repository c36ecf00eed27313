"""Paginated reads are bounded (issue 21 item 3) and the 304 path keeps its Link header.

A commit stream with no `max_pages` stops at MAX_STREAM_PAGES with a warning, a next link back to
a page already read is an error, one read's pages together and one cycle's answers together have
a byte budget, a listing may be given a time limit, and the pages of a read that failed are not
cached (the next cycle asks again instead of answering 304 from half a read).
"""

from __future__ import annotations

import time

import pytest

from watcher.config.model import Item
from watcher.core.errors import GitHubError
from watcher.fakes.github import FakeGitHub
from watcher.github import client as github
from watcher.github.client import GitHubClient, same_origin
from watcher.poll import poller as poll

REPO = "o/r"


@pytest.fixture
def gh():
    with FakeGitHub() as gh:
        for i in range(250):
            gh.add_commit(
                REPO, message=f"commit {i}", date=f"2026-01-01T00:{i // 60:02}:{i % 60:02}Z"
            )
        yield gh


def stream() -> Item:
    return Item(id="c", repo=REPO, kind="commits", pattern="commit")


def test_a_stream_without_max_pages_stops_at_the_cap_with_a_warning(gh, monkeypatch):
    monkeypatch.setattr(poll, "MAX_STREAM_PAGES", 2, raising=False)
    commits, truncated = poll.read_commit_stream(GitHubClient(gh.url), stream())
    assert len(commits) == 200
    assert truncated and truncated[0]["commits"] == 200
    assert "max_pages = 2" in poll.truncation_warning(stream(), truncated[0])


def test_a_next_link_back_to_a_read_page_is_a_loop(gh):
    loop = f'<{gh.url}/repos/{REPO}/commits?page=2>; rel="next"'
    gh.fail("GET", r"/commits", status=200, body=[], headers={"Link": loop}, times=-1)
    client = GitHubClient(gh.url, cycle_deadline=time.monotonic() + 30)
    with pytest.raises(GitHubError, match="loops back"):
        poll.read_commit_stream(client, stream())


def test_a_failed_read_caches_none_of_its_pages(gh):
    gh.fail("GET", r"page=3", status=500, times=-1)
    client = GitHubClient(gh.url, retries=0)
    with pytest.raises(GitHubError):
        poll.read_commit_stream(client, stream())
    assert client.etag_updates == {}
    ok = GitHubClient(gh.url)
    gh.clear_faults()
    poll.read_commit_stream(ok, stream())
    assert len(ok.etag_updates) == 3


def test_one_reads_pages_have_a_byte_budget(gh, monkeypatch):
    monkeypatch.setattr(github, "MAX_READ_BYTES", 50_000, raising=False)
    with pytest.raises(GitHubError, match="pages of one read"):
        poll.read_commit_stream(GitHubClient(gh.url), stream())


def test_one_cycles_answers_have_a_byte_budget(gh):
    client = GitHubClient(gh.url, max_cycle_bytes=50_000)
    with pytest.raises(GitHubError, match="this cycle read more than"):
        poll.read_commit_stream(client, stream())


def test_a_listing_given_a_time_limit_asks_no_page_after_it(gh):
    client = GitHubClient(gh.url)
    with pytest.raises(GitHubError, match="took longer than"):
        client.paginate(f"/repos/{REPO}/commits", {"per_page": 100}, within=0.0)
    assert client.stats.requests == 1


def test_a_quiet_cycle_still_reads_every_page(gh):
    """The 304 path answers from the cached body and the cached Link header: without the
    header a quiet cycle would read page 1 only (100 commits of 250, and no warning)."""
    first = GitHubClient(gh.url)
    commits, _ = poll.read_commit_stream(first, stream())
    assert len(commits) == 250
    second = GitHubClient(gh.url, etags=first.etag_updates)
    again, truncated = poll.read_commit_stream(second, stream())
    assert second.stats.not_modified == 3 and len(again) == 250 and not truncated


@pytest.mark.parametrize(
    ("url", "base"),
    [
        ("https://api.github.com.evil.net/repos/o/r", "https://api.github.com"),
        ("https://api.github.com@evil.net/repos/o/r", "https://api.github.com"),
        ("http://api.github.com/repos/o/r", "https://api.github.com"),
        ("https://api.github.com:8443/repos/o/r", "https://api.github.com"),
        ("https://ghe.corp/api/v3-evil/repos/o/r", "https://ghe.corp/api/v3"),
        ("https://ghe.corp/repos/o/r", "https://ghe.corp/api/v3"),
    ],
)
def test_the_origin_check_parses_the_url(url, base):
    assert not same_origin(url, base)
    with pytest.raises(GitHubError, match="off the API's origin"):
        GitHubClient(base, token="t").url(url)


def test_on_origin_links_are_followed():
    assert same_origin(
        "https://api.github.com/repositories/1/commits?page=2", "https://api.github.com"
    )
    assert same_origin("https://ghe.corp/api/v3/repos/o/r", "https://ghe.corp/api/v3")
