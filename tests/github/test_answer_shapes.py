"""Every path the client asks GitHub has a shape (issue 21 item 2).

A malformed answer at an endpoint with no shape in `watcher.github.answers.ENDPOINTS` reaches code that
indexes it (KeyError, AttributeError) outside the item's own error handling and ends the whole
cycle. So: a full default-list cycle (twice: 200s, then 304s) and the demo run against the fake
GitHub, every GET it saw is looked up, and one with no shape fails the test. A new endpoint
cannot be added without its shape.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import watcher.onboard.demo as demo
from watcher.config.load import load_config
from watcher.fakes.github import FakeGitHub
from watcher.fakes.scenarios import load, real_threads
from watcher.github.answers import BadAnswer, check, spec_for
from watcher.github.client import GitHubClient
from watcher.loop.cycle import run_cycle

REPO = Path(__file__).resolve().parents[2]


class Recording(FakeGitHub):
    """A fake GitHub that hands its request log to `seen` when it stops."""

    seen: list = []

    def stop(self) -> None:
        Recording.seen.extend(self.requests)
        super().stop()


def _world(tmp_path):
    gh = FakeGitHub().start()
    real_threads(gh)
    load(gh, "sglang_code")
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    return gh, load_config(tmp_path / "watch.toml")


def test_every_path_a_cycle_and_the_demo_ask_has_a_shape(tmp_path, monkeypatch):
    Recording.seen = []
    with Recording() as gh:
        real_threads(gh)
        load(gh, "sglang_code")
        gh.per_page_default = 2  # Link pagination: /repositories/{id}/... pages
        shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
        cfg = load_config(tmp_path / "watch.toml")
        for _ in range(2):  # 200s, then 304s
            run_cycle(cfg, client=GitHubClient(gh.url, token="test-token"), no_smoke=True)
        client = GitHubClient(gh.url, token="test-token")
        client.paginate("/repos/sgl-project/sglang/releases", {"per_page": 1})
    monkeypatch.setattr(demo, "FakeGitHub", Recording)
    demo.run_demo(tmp_path / "demo", lambda line: None)
    gets = sorted({r.path for r in Recording.seen if r.method == "GET"})
    assert len(gets) > 20 and any(p.startswith("/repositories/") for p in gets), gets
    unshaped = [p for p in gets if spec_for(p) is None]
    assert not unshaped, f"no shape in watcher.github.answers.ENDPOINTS for: {unshaped}"


# one malformed answer per endpoint the cycle reads: the items go stale, the cycle goes on
MALFORMED = [
    (r"^/repos/[^/]+/[^/]+$", {"default_branch": None}),  # the repository
    (r"/git/trees/", {"tree": {"path": "x"}}),  # git trees
    (r"/contents/", b"42"),  # contents: a number
    (r"/contents/", {"type": "file", "encoding": "base64", "content": 7}),
    (r"/releases/latest$", {"tag_name": ["v1"]}),  # latest release
    (r"/git/trees/", {"tree": [{"mode": "100644"}]}),
]


@pytest.mark.parametrize(("where", "body"), MALFORMED)
def test_a_malformed_answer_makes_items_stale_not_a_crash(tmp_path, where, body):
    gh, cfg = _world(tmp_path)
    try:
        gh.fail("GET", where, status=200, body=body, times=-1)
        report = run_cycle(cfg, client=GitHubClient(gh.url, token="test-token"), no_smoke=True)
    finally:
        gh.stop()
    assert report.item_errors, report.summary()
    assert any("unexpected answer shape" in e for e in report.item_errors.values()), (
        report.item_errors
    )


def test_tags_malformed_is_refused(tmp_path):
    gh, _cfg = _world(tmp_path)
    try:
        gh.fail("GET", r"/releases/latest$", status=404, body={"message": "Not Found"}, times=-1)
        gh.fail("GET", r"/tags$", status=200, body={"name": "v1"}, times=-1)
        from watcher.poll.heads import resolve_ref

        with pytest.raises(BadAnswer, match="expected a list"):
            resolve_ref(GitHubClient(gh.url), "sgl-project/sglang", "latest-release")
    finally:
        gh.stop()


def test_a_boolean_is_not_an_integer_id():
    with pytest.raises(BadAnswer, match="id is bool, expected an integer"):
        check({"id": True, "body": "x"}, spec_for("/repos/o/r/issues/comments/1"))
    with pytest.raises(BadAnswer):
        check([{"id": False, "tag_name": "v1"}], spec_for("/repos/o/r/releases"))
    assert check({"id": 3}, spec_for("/repos/o/r/issues/comments/1")) == {"id": 3}
