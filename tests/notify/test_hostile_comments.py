"""What watcher writes to GitHub, under attack: looping comment listings, redirected POSTs, and
upstream text that would ping people, cross-link threads or hide the rest of a comment."""

from __future__ import annotations

import json
import re

import pytest
from kits.hostile_github import HostileServer
from kits.notifykit import CONFIG, DOCS, ISSUE, FakeClock, cycle, ours
from kits.watchtoml import load_watch

from watcher.github.comments import MAX_COMMENT_PAGES, CommentError, GithubComments
from watcher.notify.plan import status_marker

COMMENTS = f"/repos/{DOCS}/issues/{ISSUE}/comments"


def comment(n: int, login: str = "someone") -> dict:
    return {"id": n, "body": f"comment {n}", "user": {"login": login}, "html_url": f"https://x/{n}"}


@pytest.fixture
def api():
    with HostileServer() as server:
        yield server


def comments_api(server: HostileServer) -> GithubComments:
    return GithubComments(DOCS, ISSUE, token="test-token", base_url=server.url, timeout=5)


# ------------------------------------------------------------------ 8. pagination of the listing


def test_a_self_pointing_comments_link_is_one_request_and_an_error(api):
    api.json(COMMENTS, [comment(1)], {"Link": f'<{api.url}{COMMENTS}?per_page=100>; rel="next"'})
    c = comments_api(api)
    try:
        with pytest.raises(CommentError, match="loops back"):
            c.list_comments()
    finally:
        c.close()
    assert len(api.seen(COMMENTS)) == 1


def test_an_endless_comments_listing_stops_at_the_page_cap(api):
    def page(req):
        n = int(req.path.rsplit("page=", 1)[1]) if "page=" in req.path else 1
        link = f'<{api.url}{COMMENTS}?page={n + 1}>; rel="next"'
        req.json([comment(n)], headers={"Link": link})

    api.on(COMMENTS, page)
    c = comments_api(api)
    try:
        listed = c.list_comments()
    finally:
        c.close()
    assert len(listed) == MAX_COMMENT_PAGES == len(api.seen(COMMENTS))


# ------------------------------------------------------------------ 9. only a 201 with an id


@pytest.mark.parametrize("status", [302, 307, 200])
def test_a_post_answered_otherwise_than_201_with_an_id_is_not_posted(api, status):
    def answer(req):
        if status == 200:
            req.json({"message": "ok"})
        else:
            req.redirect(f"{api.url}/elsewhere", status)

    api.on(COMMENTS, answer)
    c = comments_api(api)
    try:
        with pytest.raises(CommentError, match=f"HTTP {status}.*not counted as written"):
            c.create("<!-- watcher:event id=1 -->\nhello")
    finally:
        c.close()
    assert [r.method for r in api.seen(COMMENTS)] == ["POST"]
    assert api.seen("/elsewhere") == []


def test_a_301_to_another_host_on_a_write_is_an_error_line(api):
    api.on(COMMENTS, lambda req: req.redirect("http://elsewhere.invalid/x", 301))
    c = comments_api(api)
    try:
        with pytest.raises(CommentError) as err:
            c.create("body")
    finally:
        c.close()
    assert "\n" not in str(err.value) and "elsewhere.invalid" in str(err.value)


def test_a_redirected_transition_comment_stays_in_the_outbox_and_posts_once(gh, cfg):  # noqa: F811
    clock = FakeClock()
    cycle(cfg, clock, 0)
    gh.update("up/engine", 5, merged=True)
    gh.fail("POST", r"/issues/7/comments$", status=302, headers={"Location": f"{gh.url}/x"})
    report, _ = cycle(cfg, clock, 30)
    assert len(report.notify["errors"]) == 1 and "HTTP 302" in report.notify["errors"][0]
    doc = json.loads((cfg.site_dir / "status.json").read_text())
    assert doc["notify"]["events"]["failed"] == 1 and doc["notify"]["events"]["posted"] == 0
    report, _ = cycle(cfg, clock, 31)
    assert report.notify["errors"] == []
    assert len([c for c in gh.comments(DOCS, ISSUE) if "watcher:event" in c["body"]]) == 1
    doc = json.loads((cfg.site_dir / "status.json").read_text())
    assert doc["notify"]["events"] == {"pending": 0, "posted": 1, "failed": 0}


# ------------------------------------------------------------------ 10, 11. inert upstream text

PING = "ping @alice and @org/team about #123 and other/repo#45, GH-9, see https://github.com/o/r/issues/1"
HIDE = "v9 <!-- hide"


@pytest.fixture
def hostile_cfg(tmp_path):
    text = CONFIG.replace(
        "[[blocker]]",
        '[[item]]\nid = "rel"\nrepo = "up/engine"\nkind = "releases"\n\n[[blocker]]',
    ).replace('items = ["fix-pr"]', 'items = ["fix-pr"]\nwatch = ["rel"]')
    return load_watch(tmp_path, text)


def assert_inert(text: str) -> None:
    """No live reference outside inline code (GitHub neither links nor pings inside it), and no
    invisible character standing in for that (issue 33: "#19406" must be found by a search)."""
    outside = re.sub(r"(`+).+?\1", "", text)
    for live in ("@alice", "@org/team", "#123", "other/repo#45", "GH-9", "https://github.com/o/r"):
        assert live not in outside, live
    assert "\u200d" not in text
    assert "<!-- hide" not in text and "--> " not in text.replace("<!-- volatile -->", "")


def test_mentions_references_and_comment_openers_are_inert(gh, hostile_cfg):  # noqa: F811
    gh.update("up/engine", 5, title=f"{PING} {HIDE} -->")
    gh.add_commit("up/engine", message="init", date="2026-10-01T00:00:00Z")
    gh.add_release("up/engine", HIDE, name=f"{PING} {HIDE}", published_at="2026-11-01T00:00:00Z")
    report, _ = cycle(hostile_cfg, FakeClock(), 0)
    assert report.item_errors == {} and report.notify["errors"] == []
    (sticky,) = ours(gh, status_marker("eng"))
    body = sticky["body"]
    assert_inert(body)
    assert body.count("<!--") == 1  # our marker, and only it
    assert "`@alice`" in body and "`#123`" in body and "`other/repo#45`" in body
    page = (hostile_cfg.base_dir / "ENGINE.md").read_text(encoding="utf-8")
    assert_inert(page)
    assert "](https://github.com/up/engine/pull/5)" in page  # our own links stay real
    import markdown

    html = markdown.markdown(page, extensions=["tables"])
    visible = re.sub(r"<!--.*?-->", "", html, flags=re.S)
    assert "v9" in visible and "hide" in visible  # nothing after the tag was swallowed


def test_the_superseding_pr_is_a_real_link_in_the_comment_not_a_bare_reference(gh, cfg):  # noqa: F811
    """`#45295` in a comment on the guide's issue would point at the guide's own #45295."""
    gh.update("up/engine", 5, state="closed")
    gh.add_pull("up/engine", 9, title="The real fix", state="closed", merged=True)
    gh.add_cross_reference("up/engine", 5, source_repo="up/engine", source_number=9)
    report, _ = cycle(cfg, FakeClock(), 0)
    assert report.item_errors == {} and report.notify["errors"] == []
    (sticky,) = ours(gh, status_marker("eng"))
    assert (
        "superseded by [up/engine#9](https://github.com/up/engine/pull/9) (merged)"
        in sticky["body"]
    )
