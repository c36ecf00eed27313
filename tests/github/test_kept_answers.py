"""Issue 33 item 12: a busy branch's compare is cached with only the fields watcher reads, and a
cycle reads a cached body from the database only when it uses it."""

from __future__ import annotations

import json

from watcher.github.client import GitHubClient
from watcher.store.db import LazyEntry, Store

REPO = "sgl-project/sglang"


def seed(gh) -> tuple[str, str]:
    base = gh.add_commit(
        REPO, message="base", date="2026-09-01T00:00:00Z", contents={"a.py": "1\n"}
    )
    for n in range(5):
        head = gh.add_commit(
            REPO, message=f"change {n}", date=f"2026-09-01T0{n + 1}:00:00Z",
            contents={f"docs/{n}.md": "x\n" * 50},
        )  # fmt: skip
    return base["sha"], head["sha"]


def test_a_compare_keeps_only_what_is_read_in_the_answer_and_in_the_cache(fake_github):
    base, head = seed(fake_github)
    path = f"/repos/{REPO}/compare/{base}...{head}"
    with GitHubClient(fake_github.url, token="test-token") as client:
        data = client.get_json(path)
        (url, entry), = client.etag_updates.items()  # fmt: skip
    assert data["status"] == "ahead" and data["total_commits"] == 5
    assert [f["filename"] for f in data["files"]] == [f"docs/{n}.md" for n in range(5)]
    assert all(set(f) <= {"filename", "previous_filename", "status"} for f in data["files"])
    commit = data["commits"][-1]
    assert commit["sha"] == head and commit["commit"]["message"] == "change 4"
    assert commit["commit"]["committer"]["date"] == "2026-09-01T05:00:00Z"
    assert "verification" not in commit["commit"] and "patch" not in entry["body"]
    assert json.loads(entry["body"]) == data  # the cache holds what the answer gave
    # the next read is a 304 answered from that body, the same answer
    with GitHubClient(fake_github.url, token="test-token", etags={url: entry}) as client:
        assert client.get_json(path) == data and client.stats.not_modified == 1


def test_a_cached_body_is_read_from_the_file_only_when_used(fake_github, tmp_path):
    base, head = seed(fake_github)
    used, unused = f"/repos/{REPO}/compare/{base}...{head}", f"/repos/{REPO}/commits/{base}"
    store = Store(tmp_path / "watcher.db")
    with GitHubClient(fake_github.url, token="test-token") as client:
        first = client.get_json(used)
        client.get_json(unused)
        store.put_etags(client.etag_updates)
    index = store.etag_index()
    assert len(index) == 2 and all(isinstance(e, LazyEntry) and e.has_body for e in index.values())
    assert all("body" not in e.keys() for e in index.values())  # nothing read yet
    with GitHubClient(fake_github.url, token="test-token", etags=index) as client:
        assert client.get_json(used) == first and client.stats.not_modified == 1
    loaded = {url for url, e in index.items() if "body" in e.keys()}
    assert loaded == {client.url(used)}  # the 304's body only; the other stays on disk
    store.close()
