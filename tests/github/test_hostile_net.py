"""Hostile GitHub answers on loopback: the token stays on the API's origin, and a bad answer makes
only its own item stale (wrong shapes, deep nesting, bad text, huge or dripping bodies, loops)."""

from __future__ import annotations

import io
import json
import resource
import time
import zipfile

import pytest
from kits.hostile_github import HostileServer
from kits.triggerkit import gha_cfg, remote_doc

from watcher.config.load import parse_config
from watcher.config.model import Item
from watcher.core.errors import GitHubError
from watcher.github.client import GitHubClient, public_url, same_origin
from watcher.loop.cycle import run_cycle
from watcher.poll.poller import Poller
from watcher.smoke.dispatch import dispatch_and_wait
from watcher.store.db import Store

TOKEN = "ghp_HostileNetTestToken0123456789abcdef"
ISSUE = {
    "number": 1,
    "title": "A fine issue",
    "state": "open",
    "state_reason": None,
    "html_url": "https://github.com/o/r/issues/1",
    "updated_at": "2026-11-01T00:00:00Z",
}


def release(tag: str, n: int) -> dict:
    return {
        "id": n,
        "tag_name": tag,
        "name": tag,
        "draft": False,
        "prerelease": False,
        "published_at": f"2026-0{n}-01T00:00:00Z",
        "html_url": f"https://github.com/o/r/releases/tag/{tag}",
    }


@pytest.fixture
def api():
    with HostileServer() as server:
        yield server


@pytest.fixture
def other():
    """Another origin (a different port): it must never see the token."""
    with HostileServer() as server:
        yield server


def client(api_url: str, **kw) -> GitHubClient:
    kw.setdefault("timeout", 5)
    return GitHubClient(api_url, token=TOKEN, retries=0, sleep=lambda s: None, **kw)


def poll(api_url: str, item: Item, **kw):
    with client(api_url, **kw) as c:
        return Poller(c).poll(item)


def releases_item(repo="o/r") -> Item:
    return Item(id="rel", repo=repo, kind="releases")


def issue_item(n=1) -> Item:
    return Item(id=f"issue-{n}", repo="o/r", kind="issue", number=n)


# ------------------------------------------------------------------ 1. the token stays home


def test_origin_rule():
    base = "https://ghe.example.com/api/v3"
    assert same_origin("https://ghe.example.com/api/v3/repos/o/r?page=2", base)
    assert same_origin("https://GHE.example.com:443/api/v3/x", base)
    assert not same_origin("http://ghe.example.com/api/v3/x", base)  # https -> http
    assert not same_origin("https://ghe.example.com:8443/api/v3/x", base)
    assert not same_origin("https://evil.example.com/api/v3/x", base)
    assert not same_origin("https://ghe.example.com/api/v3x/x", base)
    assert not same_origin("https://ghe.example.com/api/v3/../../x", base)
    assert not same_origin("https://ghe.example.com/other", base)
    assert same_origin("https://api.github.com/anything", "https://api.github.com")
    assert not same_origin("https://api.github.com.evil.net/x", "https://api.github.com")


@pytest.mark.parametrize("where", ["other-port", "other-host", "other-prefix", "other-scheme"])
def test_next_link_off_origin_never_gets_the_token(api, other, where):
    port = api.url.rsplit(":", 1)[1]
    base = f"{api.url}/api/v3" if where == "other-prefix" else api.url
    target = {
        "other-port": f"{other.url}/repos/o/r/releases?page=2",
        "other-host": f"http://localhost:{port}/repos/o/r/releases?page=2",
        "other-prefix": f"{api.url}/elsewhere/repos/o/r/releases?page=2",
        "other-scheme": f"https://127.0.0.1:{port}/repos/o/r/releases?page=2",
    }[where]
    path = "/api/v3/repos/o/r/releases" if where == "other-prefix" else "/repos/o/r/releases"
    api.json(path, [release("v1", 1)], {"Link": f'<{target}>; rel="next"'})
    with client(base) as c:
        with pytest.raises(GitHubError) as err:
            c.paginate(path.removeprefix("/api/v3"), {"per_page": 100})
    assert "off the API's origin" in str(err.value)
    assert len(api.seen(path)) == 1
    assert other.requests == []
    assert not [r for r in api.requests if r.path.startswith("/elsewhere")]


def test_redirect_off_origin_is_not_followed(api, other):
    api.on("/repos/o/r/issues/1", lambda req: req.redirect(f"{other.url}/repos/o/r/issues/1", 301))
    obs = poll(api.url, issue_item())
    assert obs.error and "redirect off the API's origin" in obs.error
    assert other.requests == []


def artifact_zip(run_id: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("result.json", json.dumps(remote_doc({"run_id": run_id, "recipe": "r1"})))
    return buf.getvalue()


def script_actions(api: HostileServer, download_url: str) -> None:
    wf = "/repos/org/guide/actions/workflows/smoke.yml"
    api.json(f"{wf}/dispatches", {"workflow_run_id": 7})
    api.json(
        "/repos/org/guide/actions/runs/7",
        {
            "id": 7,
            "status": "completed",
            "conclusion": "success",
            "html_url": "https://x/7",
            "event": "workflow_dispatch",  # what GitHub's run object carries (dispatch.refusal)
            "head_repository": {"full_name": "org/guide"},
        },
    )
    api.json(
        "/repos/org/guide/actions/runs/7/artifacts",
        {"artifacts": [{"name": "smoke-result", "archive_download_url": download_url}]},
    )


def test_artifact_url_off_origin_never_gets_the_token(tmp_path, api, other):
    cfg = gha_cfg(tmp_path)
    script_actions(api, f"{other.url}/artifact.zip")
    other.on("/artifact.zip", lambda req: req.send(200, artifact_zip("r1-run-1")))
    with client(api.url) as c:
        doc = dispatch_and_wait(cfg, cfg.recipe("r1"), "r1-run-1", c, sleep=lambda s: None)
    assert doc["outcome"] == "error" and "off the API's origin" in doc["reason"]
    assert other.requests == []


def test_artifact_storage_redirect_is_fetched_without_the_token(tmp_path, api, other):
    cfg = gha_cfg(tmp_path)
    script_actions(api, f"{api.url}/repos/org/guide/actions/artifacts/3/zip")
    api.on(
        "/repos/org/guide/actions/artifacts/3/zip",
        lambda req: req.redirect(f"{other.url}/blob/3.zip?sig=abc"),
    )
    other.on("/blob/3.zip", lambda req: req.send(200, artifact_zip("r1-run-1")))
    with client(api.url) as c:
        doc = dispatch_and_wait(cfg, cfg.recipe("r1"), "r1-run-1", c, sleep=lambda s: None)
    assert doc["outcome"] == "passed", doc.get("reason")
    assert api.seen("/repos/org/guide/actions/artifacts/3/zip")[0].headers["authorization"]
    (fetch,) = other.seen("/blob/3.zip")
    assert "authorization" not in fetch.headers
    assert TOKEN not in json.dumps(fetch.headers)


# ------------------------------------------------------------------ 4. credentials in the URL


def cycle_config(tmp_path, api_url: str, items: list[Item], extra: str = ""):
    text = f'[watcher]\ngithub_api_url = "{api_url}"\ntimeout = "3s"\n{extra}'
    for it in items:
        text += f'[[item]]\nid = "{it.id}"\nrepo = "{it.repo}"\nkind = "{it.kind}"\n'
        if it.number:
            text += f"number = {it.number}\n"
    ids = ", ".join(f'"{it.id}"' for it in items)
    text += f'[[blocker]]\nid = "b"\ntitle = "B"\nitems = [{ids}]\n'
    text += '[[page]]\nid = "p"\ntitle = "P"\noutput = "P.md"\nblockers = ["b"]\n'
    path = tmp_path / "watch.toml"
    path.write_text(text)
    return parse_config(text, path)


def written(tmp_path) -> dict[str, bytes]:
    return {
        str(p.relative_to(tmp_path)): p.read_bytes()
        for p in tmp_path.rglob("*")
        if p.is_file() and p.name != "watch.toml"
    }


def test_credentials_in_the_api_url_are_never_shown(tmp_path, api, monkeypatch, caplog):
    host = api.url.removeprefix("http://")
    monkeypatch.setenv("GITHUB_API_URL", f"http://watcher:hunter2secret@{host}")
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    api.on("/repos/o/r/issues/1", lambda req: req.json({"message": "boom"}, 500))
    api.on("/repos/o/r/issues/2", lambda req: req.redirect("/repos/o/moved/issues/2", 301))
    api.json("/repos/o/moved/issues/2", dict(ISSUE, number=2))
    cfg = cycle_config(tmp_path, "https://api.github.com", [issue_item(1), issue_item(2)])
    report = run_cycle(cfg, no_smoke=True)
    assert set(report.item_errors) == {"issue-1"}
    assert api.seen("/repos/o/r/issues/1")[0].headers["authorization"].startswith("Basic ")
    status = json.loads((tmp_path / "site" / "status.json").read_text())
    by_id = {i["id"]: i for i in status["items"]}
    assert f"{api.url}/repos/o/r/issues/1" in by_id["issue-1"]["error"]
    assert by_id["issue-2"]["moved_to"] == f"{api.url}/repos/o/moved/issues/2"
    files = written(tmp_path)
    assert "site/status.json" in files and "P.md" in files
    for name, data in files.items():
        assert b"hunter2secret" not in data, name
    assert "hunter2secret" not in caplog.text
    assert public_url("https://u:p@h.example/x") == "https://h.example/x"


# ------------------------------------------------------------------ 5. answers of the wrong shape

DEEP = "[" * 50 + "]" * 50
WRONG = {
    "list": "[1, 2, 3]",
    "string": '"an issue"',
    "null": "null",
    "null-title": json.dumps(dict(ISSUE, title=None)),
    "missing-state": json.dumps({k: v for k, v in ISSUE.items() if k != "state"}),
    "title-object": json.dumps(dict(ISSUE, title={"a": 1})),
    "nested-50": '{"title": "x", "state": "open", "body": ' + DEEP + "}",
    "nested-100k": "[" * 100_000 + "]" * 100_000,
    "not-json": "<html>gateway</html>",
}


@pytest.mark.parametrize("kind", sorted(WRONG))
def test_wrong_shape_makes_only_that_item_stale(tmp_path, api, kind):
    api.on("/repos/o/r/issues/1", lambda req: req.raw_json(WRONG[kind]))
    api.json("/repos/o/r/issues/2", dict(ISSUE, number=2, title="healthy"))
    cfg = cycle_config(tmp_path, api.url, [issue_item(1), issue_item(2)])
    report = run_cycle(cfg, no_smoke=True, client=client(api.url))
    assert set(report.item_errors) == {"issue-1"}
    error = report.item_errors["issue-1"]
    assert len(error) < 300 and "Traceback" not in error
    assert (tmp_path / "P.md").exists() and (tmp_path / "site" / "status.json").exists()
    store = Store(cfg.db_path)
    try:
        items = store.items()
    finally:
        store.close()
    assert items["issue-2"]["title"] == "healthy" and not items["issue-2"]["stale"]
    assert items["issue-1"]["stale"]


def test_lone_surrogates_and_nul_are_replaced_and_stored(tmp_path, api):
    title = "bad \\ud800 text \\u0000 with \\u001b[31m escapes \\udfff end \\ud83d\\ude00"
    api.on(
        "/repos/o/r/issues/1",
        lambda req: req.raw_json(json.dumps(ISSUE).replace('"A fine issue"', f'"{title}"')),
    )
    cfg = cycle_config(tmp_path, api.url, [issue_item(1)])
    report = run_cycle(cfg, no_smoke=True, client=client(api.url))
    assert report.item_errors == {}
    store = Store(cfg.db_path)
    try:
        stored = store.items()["issue-1"]["title"]
    finally:
        store.close()
    assert stored == "bad \ufffd text \ufffd with \ufffd[31m escapes \ufffd end 😀"
    stored.encode("utf-8")  # valid UTF-8: no lone surrogate survived
    page = (tmp_path / "P.md").read_text(encoding="utf-8")
    assert "\x00" not in page and "\x1b" not in page


# ------------------------------------------------------------------ 6. size cap


def test_a_200_mb_answer_is_cut_at_the_cap(api):
    chunk = b"[" + b"1," * 32_767 + b"1]"  # never valid JSON as a whole; 64 KiB a chunk

    def huge(req):
        req.stream((chunk for _ in range(200 * 16)), length=len(chunk) * 200 * 16)

    api.on("/repos/o/r/issues/1", huge)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    obs = poll(api.url, issue_item(), timeout=30)
    grew_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert obs.error and "larger than 10 MiB" in obs.error
    assert grew_mib < 100, f"memory grew by {grew_mib:.0f} MiB"
    assert time.monotonic() - started < 20


# ------------------------------------------------------------------ 7. deadlines


def test_a_dripping_body_ends_at_the_request_deadline(api):
    def drip(req):
        req.stream((b" " for _ in range(40)), pause=0.25, length=1000)

    api.on("/repos/o/r/issues/1", drip)
    started = time.monotonic()
    obs = poll(api.url, issue_item(), timeout=1.0)
    took = time.monotonic() - started
    assert obs.error and "no complete answer within 1 s" in obs.error
    assert took < 3.0, f"took {took:.1f} s"


def test_dripping_headers_end_at_the_request_deadline(api):
    api.on("/repos/o/r/issues/1", lambda req: req.drip_headers(0.25))
    started = time.monotonic()
    obs = poll(api.url, issue_item(), timeout=1.0)
    took = time.monotonic() - started
    assert obs.error and "no complete answer" in obs.error
    assert took < 3.0, f"took {took:.1f} s"


def test_items_past_the_cycle_deadline_go_stale_and_the_cycle_finishes(tmp_path, api):
    def slow(n):
        def answer(req):
            time.sleep(0.6)
            req.json(dict(ISSUE, number=n))

        return answer

    items = [issue_item(n) for n in range(1, 7)]
    for n in range(1, 7):
        api.on(f"/repos/o/r/issues/{n}", slow(n))
    # [watcher] cycle_timeout: the polling stage in all, here far below 6 x 0.6 s
    cfg = cycle_config(tmp_path, api.url, items, extra='concurrency = 1\ncycle_timeout = "1.5s"\n')
    started = time.monotonic()
    report = run_cycle(cfg, no_smoke=True, client=client(api.url))
    assert time.monotonic() - started < 5
    assert 1 <= len(report.item_errors) < 6
    late = [e for e in report.item_errors.values() if "cycle's deadline" in e]
    assert late, report.item_errors
    assert (tmp_path / "P.md").exists()
    views = {
        v["id"]: v for v in json.loads((tmp_path / "site" / "status.json").read_text())["items"]
    }
    assert all(views[i]["stale"] for i, e in report.item_errors.items() if "cycle's deadline" in e)


# ------------------------------------------------------------------ 8. pagination loops (reads)


def test_a_self_pointing_next_link_stops_with_an_item_error(api):
    api.json(
        "/repos/o/r/releases",
        [release("v1", 1)],
        {"Link": f'<{api.url}/repos/o/r/releases?per_page=100>; rel="next"'},
    )
    with client(api.url) as c:
        with pytest.raises(GitHubError) as err:
            c.paginate("/repos/o/r/releases", {"per_page": 100})
    assert "loops back" in str(err.value)
    assert len(api.seen("/repos/o/r/releases")) == 1


def test_pagination_stops_at_the_page_cap(api):
    def page(req):
        n = int(req.path.split("page=")[1]) if "page=" in req.path else 1
        link = f'<{api.url}/repos/o/r/commits?page={n + 1}>; rel="next"'
        req.json([{"sha": f"{n:040x}", "commit": {"message": "m"}}], headers={"Link": link})

    api.on("/repos/o/r/commits", page)
    with client(api.url) as c:
        out = c.paginate("/repos/o/r/commits", max_pages=4)
    assert len(out) == 4 and len(api.seen("/repos/o/r/commits")) == 4


def test_a_nested_wrong_shape_in_the_timeline_makes_only_that_item_stale(tmp_path, api):
    """A closed PR's timeline is read for the superseding PR: a string where `source` belongs."""
    pull = {
        "number": 1,
        "title": "closed, not merged",
        "state": "closed",
        "merged": False,
        "html_url": "https://github.com/o/r/pull/1",
    }
    api.json("/repos/o/r/pulls/1", pull)
    api.json("/repos/o/r/issues/1/timeline", [{"event": "cross-referenced", "source": "x"}])
    api.json("/repos/o/r/issues/2", dict(ISSUE, number=2, title="healthy"))
    pr = Item(id="pr", repo="o/r", kind="pull", number=1)
    cfg = cycle_config(tmp_path, api.url, [pr, issue_item(2)])
    report = run_cycle(cfg, no_smoke=True, client=client(api.url))
    assert set(report.item_errors) == {"pr"}
    assert "[0].source is str, expected an object" in report.item_errors["pr"]


def test_status_json_carries_upstream_text_plain_and_capped(tmp_path, api, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    title = f"\u202eevil\u202c \x1b[31mred {TOKEN} " + "long " * 2000
    api.json("/repos/o/r/issues/1", dict(ISSUE, title=title))
    api.on("/repos/o/r/issues/2", lambda req: req.json({"message": "x\x1b[2J" * 500}, 404))
    cfg = cycle_config(tmp_path, api.url, [issue_item(1), issue_item(2)])
    run_cycle(cfg, no_smoke=True, client=client(api.url))
    text = (tmp_path / "site" / "status.json").read_text(encoding="utf-8")
    by_id = {i["id"]: i for i in json.loads(text)["items"]}
    shown, error = by_id["issue-1"]["title"], by_id["issue-2"]["error"]
    assert len(shown) == 300 and shown.startswith("evil") and shown.endswith("…")
    assert len(error) <= 500
    for bad in ("\u202e", "\x1b", "\\u001b", "\\u202e", TOKEN):
        assert bad not in text, repr(bad)
