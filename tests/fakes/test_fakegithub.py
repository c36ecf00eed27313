"""The fake GitHub must answer like GitHub, or every test built on it proves nothing.

Shapes are checked against GitHub's own OpenAPI description (the octokit subset in
../shared/github-api/); behaviour (ETags, rate limit, Link pagination, faults) through real
HTTP with httpx, the way the watcher's client talks to it.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import threading
import time
import zipfile
from pathlib import Path

import httpx
import pytest
from openapi_schema_validator import OAS30Validator, oas30_format_checker

from watcher.fakes.github import FakeGitHub, Unknown
from watcher.fakes.scenarios import VLLM, real_threads

AUTH = {"Authorization": "Bearer test-token"}
ISSUE = "GET /repos/{owner}/{repo}/issues/{issue_number}"
PULL = "GET /repos/{owner}/{repo}/pulls/{pull_number}"


# --------------------------------------------------------------------------- schema helpers


def _spec_path() -> Path | None:
    root = Path(__file__).resolve().parents[2]
    candidates = [
        os.environ.get("WATCHER_GITHUB_OPENAPI"),
        # a copy kept with the tests (MIT, from @octokit/openapi), so the check never skips in CI
        root / "tests" / "github-api" / "openapi-subset.json",
        root / "shared" / "github-api" / "openapi-subset.json",
        root.parent / "shared" / "github-api" / "openapi-subset.json",
    ]
    return next((Path(c) for c in candidates if c and Path(c).is_file()), None)


def _allow_null_state_reason(node: object) -> None:
    """GitHub's description marks `state_reason` nullable but its enum lists no null, so a
    strict validator rejects the null GitHub really sends for open issues. Add null."""
    if isinstance(node, dict):
        reason = node.get("properties", {}).get("state_reason")
        if (
            isinstance(reason, dict)
            and reason.get("nullable")
            and None not in reason.get("enum", [None])
        ):
            reason["enum"] = [*reason["enum"], None]
        for value in node.values():
            _allow_null_state_reason(value)
    elif isinstance(node, list):
        for value in node:
            _allow_null_state_reason(value)


@pytest.fixture(scope="module")
def spec() -> dict:
    path = _spec_path()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("GitHub OpenAPI subset not found: the schema checks must run in CI")
        pytest.skip("GitHub OpenAPI subset not found (set WATCHER_GITHUB_OPENAPI)")
    operations = json.loads(path.read_text())["operations"]
    _allow_null_state_reason(operations)
    return operations


def validate(spec: dict, operation: str, status: str, data: object) -> None:
    """Assert `data` is a valid `status` answer of `operation`, listing every violation."""
    schema = spec[operation]["responses"][status]["content"]["application/json"]["schema"]
    validator = OAS30Validator(schema, format_checker=oas30_format_checker)
    errors = [f"{list(e.absolute_path)}: {e.message[:300]}" for e in validator.iter_errors(data)]
    assert not errors, f"{operation} {status}:\n" + "\n".join(errors[:10])


@pytest.fixture
def api(fake_github: FakeGitHub):
    """An authorized httpx client on the fake."""
    with httpx.Client(base_url=fake_github.url, headers=AUTH, timeout=5) as client:
        yield client


@pytest.fixture
def seeded(fake_github: FakeGitHub) -> FakeGitHub:
    real_threads(fake_github)
    return fake_github


# --------------------------------------------------------------------------- shapes


def test_issue_shapes(fake_github, api, spec):
    """Open issues carry a null state_reason, closed ones "completed"; pulls appear as issues."""
    fake_github.add_issue("o/r", 1, title="still broken", labels=["bug"])
    fake_github.add_issue("o/r", 2, title="fixed", state="closed", closed_at="2026-05-01")
    fake_github.add_pull("o/r", 3, title="a PR", merged=True, merged_at="2026-05-02T10:00:00Z")

    open_issue = api.get("/repos/o/r/issues/1").json()
    validate(spec, ISSUE, "200", open_issue)
    assert open_issue["state"] == "open" and open_issue["state_reason"] is None
    assert open_issue["html_url"] == "https://github.com/o/r/issues/1"
    assert open_issue["labels"][0]["name"] == "bug"
    assert "pull_request" not in open_issue

    closed = api.get("/repos/o/r/issues/2").json()
    validate(spec, ISSUE, "200", closed)
    assert (closed["state"], closed["state_reason"]) == ("closed", "completed")
    assert closed["closed_at"] == "2026-05-01T00:00:00Z"

    as_issue = api.get("/repos/o/r/issues/3").json()
    validate(spec, ISSUE, "200", as_issue)
    assert as_issue["pull_request"]["merged_at"] == "2026-05-02T10:00:00Z"
    assert as_issue["html_url"] == "https://github.com/o/r/pull/3"


def test_pull_shapes(fake_github, api, spec):
    """Draft, merged and closed-unmerged pulls; an issue number is 404 on the pulls endpoint."""
    fake_github.add_pull("o/r", 10, title="wip", draft=True)
    fake_github.add_pull("o/r", 11, title="landed", merged=True, merge_commit_sha="a" * 40)
    fake_github.add_pull("o/r", 12, title="abandoned", state="closed", closed_at="2026-06-12")
    fake_github.add_issue("o/r", 13, title="just an issue")

    draft = api.get("/repos/o/r/pulls/10").json()
    validate(spec, PULL, "200", draft)
    assert draft["draft"] is True and draft["state"] == "open" and draft["merged"] is False

    merged = api.get("/repos/o/r/pulls/11").json()
    validate(spec, PULL, "200", merged)
    assert merged["state"] == "closed" and merged["merged"] is True
    assert merged["merge_commit_sha"] == "a" * 40 and merged["merged_at"]

    closed = api.get("/repos/o/r/pulls/12").json()
    validate(spec, PULL, "200", closed)
    assert closed["state"] == "closed" and closed["merged"] is False
    assert closed["merged_at"] is None and closed["closed_at"] == "2026-06-12T00:00:00Z"

    assert api.get("/repos/o/r/pulls/13").status_code == 404
    assert api.get("/repos/o/r/pulls/99").status_code == 404
    assert api.get("/repos/o/r/issues/99").json()["message"] == "Not Found"
    assert api.get("/repos/nobody/nothing/issues/1").status_code == 404


def test_timeline_cross_reference(seeded, api, spec):
    """#40361's timeline names the PR that superseded it, as an issue with a pull_request key."""
    r = api.get(f"/repos/{VLLM}/issues/40361/timeline")
    validate(spec, "GET /repos/{owner}/{repo}/issues/{issue_number}/timeline", "200", r.json())
    events = r.json()
    assert [e["event"] for e in events] == ["labeled", "cross-referenced", "closed"]
    xref = events[1]
    assert xref["source"]["type"] == "issue"
    source = xref["source"]["issue"]
    # The timeline schema is a loose anyOf; hold the embedded issue to the issue schema too.
    validate(spec, ISSUE, "200", source)
    assert source["number"] == 45295 and source["repository"]["full_name"] == VLLM
    assert source["pull_request"]["merged_at"] == "2026-06-12T15:04:11Z"
    assert events[0]["label"]["name"] == "ready" and events[0]["actor"]["login"] == "maintainer"


def test_commits_list_and_filters(seeded, api, spec):
    """Newest first; path is a directory/file match, not a substring; since/until and sha work."""
    fla = "/repos/fla-org/flash-linear-attention/commits"
    everything = api.get(fla).json()
    validate(spec, "GET /repos/{owner}/{repo}/commits", "200", everything)
    dates = [c["commit"]["author"]["date"] for c in everything]
    assert dates == sorted(dates, reverse=True) and len(everything) == 6

    hits = api.get(fla, params={"path": "fla/ops/gated_delta_rule/"}).json()
    assert [c["commit"]["message"] for c in hits] == ["Add state rollback for speculative decoding"]
    assert api.get(fla, params={"path": "fla/ops/gated_delta"}).json() == []

    window = api.get(fla, params={"since": "2026-03-10T00:00:00Z", "until": "2026-04-01"}).json()
    assert [c["commit"]["message"] for c in window] == [
        "Support gradient checkpointing in GLA",
        "Roll back initializer_range default",
    ]
    at_tag = api.get(f"/repos/{VLLM}/commits", params={"sha": "v0.23.0"}).json()
    assert at_tag[0]["commit"]["message"].startswith("[Release] Bump version to v0.23.0")
    assert api.get(f"/repos/{VLLM}/commits", params={"sha": "nope"}).status_code == 404


def test_commit_detail_has_files(seeded, api, spec):
    """A single commit lists its files; refs may be tags, full or abbreviated shas."""
    head = api.get("/repos/fla-org/flash-linear-attention/commits").json()[1]
    r = api.get(f"/repos/fla-org/flash-linear-attention/commits/{head['sha'][:7]}")
    validate(spec, "GET /repos/{owner}/{repo}/commits/{ref}", "200", r.json())
    commit = r.json()
    assert commit["sha"] == head["sha"]
    assert {f["filename"] for f in commit["files"]} >= {"fla/ops/gated_delta_rule/chunk.py"}
    assert commit["parents"][0]["sha"] != commit["sha"]
    tagged = api.get(f"/repos/{VLLM}/commits/v0.24.0").json()
    assert tagged["commit"]["message"].startswith("[Release] Bump version to v0.24.0")
    assert api.get(f"/repos/{VLLM}/commits/deadbeef00").status_code == 422


def test_compare_answers_containment(seeded, api, spec):
    """compare/{tag}...{sha}: behind or identical means the tag contains the commit."""
    merge_sha = api.get(f"/repos/{VLLM}/pulls/45295").json()["merge_commit_sha"]
    op = "GET /repos/{owner}/{repo}/compare/{basehead}"

    not_in = api.get(f"/repos/{VLLM}/compare/v0.23.0...{merge_sha}").json()
    validate(spec, op, "200", not_in)
    assert (not_in["status"], not_in["ahead_by"], not_in["behind_by"]) == ("ahead", 1, 0)
    assert not_in["commits"][0]["sha"] == merge_sha
    assert "csrc/quantization/gptq_marlin/gptq_marlin.cu" in {
        f["filename"] for f in not_in["files"]
    }

    shipped = api.get(f"/repos/{VLLM}/compare/v0.24.0...{merge_sha}").json()
    validate(spec, op, "200", shipped)
    assert (shipped["status"], shipped["behind_by"], shipped["total_commits"]) == ("behind", 2, 0)

    same = api.get(f"/repos/{VLLM}/compare/{merge_sha}...{merge_sha[:10]}").json()
    validate(spec, op, "200", same)
    assert same["status"] == "identical"

    assert api.get(f"/repos/{VLLM}/compare/v9.9.9...{merge_sha}").status_code == 404
    assert api.get(f"/repos/{VLLM}/compare/v0.23.0...{'0' * 40}").status_code == 404


def test_releases_latest_and_tags(seeded, api, spec):
    """Releases newest first; latest skips drafts and prereleases; tags point at commits."""
    seeded.add_release(VLLM, "v0.25.0rc1", published_at="2026-08-01T00:00:00Z", prerelease=True)
    releases = api.get(f"/repos/{VLLM}/releases").json()
    validate(spec, "GET /repos/{owner}/{repo}/releases", "200", releases)
    assert [x["tag_name"] for x in releases] == ["v0.25.0rc1", "v0.24.0", "v0.23.0"]

    latest = api.get(f"/repos/{VLLM}/releases/latest").json()
    validate(spec, "GET /repos/{owner}/{repo}/releases/latest", "200", latest)
    assert latest["tag_name"] == "v0.24.0" and latest["published_at"] == "2026-07-02T17:30:00Z"

    tags = api.get("/repos/sgl-project/sglang/tags").json()
    validate(spec, "GET /repos/{owner}/{repo}/tags", "200", tags)
    assert [t["name"] for t in tags] == ["v0.6.0", "v0.5.9"]
    commit = api.get(tags[1]["commit"]["url"]).json()
    assert commit["commit"]["message"] == "Bump version to 0.5.9"
    assert api.get("/repos/fla-org/flash-linear-attention/releases/latest").status_code == 404


def test_comments_create_update_delete(fake_github, api, spec):
    """Writes need a token; the author is the token's login; others may not edit (403)."""
    fake_github.add_issue("o/r", 5, title="sticky status")
    fake_github.add_comment("o/r", 5, body="by someone else", user="someone")

    listed = api.get("/repos/o/r/issues/5/comments").json()
    validate(spec, "GET /repos/{owner}/{repo}/issues/{issue_number}/comments", "200", listed)

    anonymous = httpx.post(f"{fake_github.url}/repos/o/r/issues/5/comments", json={"body": "x"})
    assert anonymous.status_code == 401
    created = api.post("/repos/o/r/issues/5/comments", json={"body": "status: blocked"})
    assert created.status_code == 201
    validate(
        spec, "POST /repos/{owner}/{repo}/issues/{issue_number}/comments", "201", created.json()
    )
    mine = created.json()
    assert mine["user"]["login"] == "watcher-bot" and created.headers["location"] == mine["url"]
    assert api.post("/repos/o/r/issues/5/comments", json={}).status_code == 422

    edited = api.patch(mine["url"], json={"body": "status: validated"})
    assert edited.status_code == 200
    validate(spec, "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", "200", edited.json())
    assert edited.json()["body"] == "status: validated"

    theirs = listed[0]
    assert api.patch(theirs["url"], json={"body": "hijack"}).status_code == 403
    fake_github.tokens["other-token"] = "maintainer"
    other = {"Authorization": "token other-token"}
    assert httpx.patch(mine["url"], json={"body": "x"}, headers=other).status_code == 403
    assert api.delete(theirs["url"]).status_code == 403
    assert api.delete(mine["url"]).status_code == 204
    assert [c["body"] for c in fake_github.comments("o/r", 5)] == ["by someone else"]
    assert api.get("/repos/o/r/issues/5").json()["comments"] == 1


def test_rate_limit_and_user(fake_github, api, spec):
    """GET /rate_limit is free and agrees with the headers; /user needs a valid token."""
    rate = api.get("/rate_limit")
    validate(spec, "GET /rate_limit", "200", rate.json())
    assert rate.json()["rate"]["remaining"] == int(rate.headers["x-ratelimit-remaining"]) == 5000

    me = api.get("/user")
    validate(spec, "GET /user", "200", me.json())
    assert me.json()["login"] == "watcher-bot"
    assert httpx.get(f"{fake_github.url}/user").status_code == 401
    bad = httpx.get(f"{fake_github.url}/user", headers={"Authorization": "token nope"})
    assert bad.status_code == 401 and bad.json()["message"] == "Bad credentials"
    assert (
        httpx.get(f"{fake_github.url}/rate_limit", headers={"Authorization": "x"}).status_code
        == 401
    )
    assert (
        httpx.get(
            f"{fake_github.url}/repos/o/r", headers={"Authorization": "token nope"}
        ).status_code
        == 401
    )


def test_workflow_dispatch_runs_artifacts(fake_github, api, spec):
    """A dispatched run goes queued -> in_progress -> completed; its artifact zip has the files."""
    seen = []

    def on_dispatch(inputs: dict) -> dict[str, bytes]:
        seen.append(inputs)
        return {"result.json": b'{"outcome": "passed"}', "log.txt": b"ready\n"}

    fake_github.add_commit("club/guide", message="init", date="2026-07-01")
    fake_github.add_workflow(
        "club/guide", "smoke.yml", on_dispatch=on_dispatch, run_name="smoke {recipe}"
    )
    base = "/repos/club/guide/actions"
    body = {"ref": "main", "inputs": {"recipe": "sglang"}}
    assert (
        httpx.post(f"{fake_github.url}{base}/workflows/smoke.yml/dispatches", json=body).status_code
        == 401
    )
    assert api.post(f"{base}/workflows/smoke.yml/dispatches", json=body).status_code == 204
    assert api.post(f"{base}/workflows/nope.yml/dispatches", json=body).status_code == 404

    runs = api.get(f"{base}/workflows/smoke.yml/runs").json()
    validate(spec, "GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", "200", runs)
    run = runs["workflow_runs"][0]
    assert (runs["total_count"], run["status"], run["display_title"]) == (
        1,
        "queued",
        "smoke sglang",
    )
    assert api.get(f"{base}/runs/{run['id']}/artifacts").json()["total_count"] == 0

    statuses = []
    for _ in range(3):
        polled = api.get(f"{base}/runs/{run['id']}").json()
        validate(spec, "GET /repos/{owner}/{repo}/actions/runs/{run_id}", "200", polled)
        statuses.append((polled["status"], polled["conclusion"]))
    assert statuses == [("in_progress", None), ("completed", "success"), ("completed", "success")]
    assert seen == [{"recipe": "sglang"}]

    artifacts = api.get(f"{base}/runs/{run['id']}/artifacts").json()
    validate(spec, "GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts", "200", artifacts)
    download = artifacts["artifacts"][0]["archive_download_url"]
    redirect = api.get(download)
    assert redirect.status_code == 302 and redirect.headers["location"].startswith(fake_github.url)
    blob = api.get(download, follow_redirects=True)
    assert blob.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(blob.content)) as zf:
        assert json.loads(zf.read("result.json")) == {"outcome": "passed"}


def test_failing_workflow_concludes_failure(fake_github, api):
    """If the job (on_dispatch) raises, the run concludes failure and has no artifact."""

    def broken(inputs: dict) -> dict[str, bytes]:
        raise RuntimeError("no GPU")

    fake_github.add_workflow("o/r", "smoke.yml", on_dispatch=broken)
    details = api.post(
        "/repos/o/r/actions/workflows/smoke.yml/dispatches",
        json={"ref": "main", "return_run_details": True},
    ).json()
    for _ in range(2):
        run = api.get(details["run_url"]).json()
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    assert api.get(f"{details['run_url']}/artifacts").json()["artifacts"] == []


# --------------------------------------------------------------------------- HTTP behaviour


def test_etag_304_and_rate_accounting(fake_github, api):
    """An authorized 304 costs nothing; an anonymous 304 and every other answer cost one."""
    fake_github.add_issue("o/r", 1, title="t")
    first = api.get("/repos/o/r/issues/1")
    etag = first.headers["etag"]
    assert etag.startswith('"') and first.headers["last-modified"]
    assert first.headers["x-ratelimit-remaining"] == "4999"

    again = api.get("/repos/o/r/issues/1", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    assert again.headers["x-ratelimit-remaining"] == "4999"
    weak = api.get("/repos/o/r/issues/1", headers={"If-None-Match": f"W/{etag}"})
    assert weak.status_code == 304

    anon = httpx.get(f"{fake_github.url}/repos/o/r/issues/1", headers={"If-None-Match": etag})
    assert anon.status_code == 304 and anon.headers["x-ratelimit-remaining"] == "4998"
    assert anon.headers["x-ratelimit-used"] == "2"

    fake_github.update("o/r", 1, state="closed")
    changed = api.get("/repos/o/r/issues/1", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    assert changed.json()["state_reason"] == "completed" and changed.json()["closed_at"]
    assert changed.headers["x-ratelimit-remaining"] == "4997"


def test_rate_limit_exhausted(fake_github, api):
    """At zero remaining every call is a 403 with x-ratelimit-remaining: 0, except /rate_limit."""
    fake_github.add_issue("o/r", 1, title="t")
    fake_github.rate_remaining = 0
    r = api.get("/repos/o/r/issues/1")
    assert r.status_code == 403 and r.headers["x-ratelimit-remaining"] == "0"
    assert r.json()["message"].startswith("API rate limit exceeded")
    assert int(r.headers["x-ratelimit-reset"]) == fake_github.rate_reset
    assert api.get("/rate_limit").json()["resources"]["core"]["remaining"] == 0

    fake_github.rate_reset = int(time.time()) - 1  # the window passed: the bucket refills
    assert api.get("/repos/o/r/issues/1").headers["x-ratelimit-remaining"] == "4999"


def test_link_pagination_three_pages(fake_github, api):
    """250 comments at per_page=100 take three pages, reached only by following rel="next"."""
    fake_github.add_issue("o/r", 7, title="busy")
    for i in range(250):
        fake_github.add_comment("o/r", 7, body=f"c{i}")
    url: str | None = "/repos/o/r/issues/7/comments?per_page=100&since=2026-01-01T00:00:00Z"
    bodies, links = [], []
    while url:
        r = api.get(url)
        bodies += [c["body"] for c in r.json()]
        links.append(r.headers.get("link"))
        url = r.links.get("next", {}).get("url")
    assert bodies == [f"c{i}" for i in range(250)]
    assert len(links) == 3
    first, middle, last = links
    assert first.endswith('rel="last"') and 'rel="prev"' not in first
    assert [part.split("; ")[1] for part in middle.split(", ")] == [
        'rel="prev"',
        'rel="next"',
        'rel="last"',
        'rel="first"',
    ]
    assert 'rel="next"' not in last
    assert f"<{fake_github.url}/repositories/" in middle  # absolute, like GitHub's
    assert "since=2026-01-01T00:00:00Z" in middle and "per_page=100" in middle
    assert api.get("/repos/o/r/issues/7/comments").headers["link"].count("page=") == 2


def test_timeline_paginates_with_default_per_page(fake_github, api):
    """per_page_default applies when the client sends none."""
    with FakeGitHub(per_page_default=2) as gh:
        gh.add_issue("o/r", 1, title="t")
        for i in range(5):
            gh.add_timeline_event("o/r", 1, {"event": "labeled", "label": f"l{i}"})
        r = httpx.get(f"{gh.url}/repos/o/r/issues/1/timeline")
        assert len(r.json()) == 2 and 'page=3>; rel="last"' in r.headers["link"]


def test_fault_status_then_recovery(fake_github, api):
    """A status fault answers as told, is used up, then the real answer comes back."""
    fake_github.add_issue("o/r", 1, title="t")
    fake_github.fail("GET", r"/issues/1$", status=502, times=2)
    fake_github.fail(
        "*",
        r"/issues/1$",
        status=403,
        headers={"Retry-After": "60"},
        body={"message": "secondary rate limit"},
    )
    assert [api.get("/repos/o/r/issues/1").status_code for _ in range(2)] == [502, 502]
    limited = api.get("/repos/o/r/issues/1")
    assert limited.status_code == 403 and limited.headers["retry-after"] == "60"
    assert limited.json() == {"message": "secondary rate limit"}
    assert api.get("/repos/o/r/issues/1").status_code == 200
    assert [r.status for r in fake_github.requests] == [502, 502, 403, 200]

    # Faults written against /repos/o/r/... also catch the /repositories/{id}/... Link form.
    fake_github.add_comment("o/r", 1, body="a")
    fake_github.add_comment("o/r", 1, body="b")
    page_one = api.get("/repos/o/r/issues/1/comments?per_page=1")
    fake_github.fail("GET", r"^/repos/o/r/issues/1/comments\?.*page=2", status=500)
    assert api.get(page_one.links["next"]["url"]).status_code == 500

    fake_github.fail("GET", r"/user$", status=503, times=-1)
    assert {api.get("/user").status_code for _ in range(3)} == {503}


def test_fault_timeout_ends_on_stop():
    """A held request times out the client, and stop() releases it at once."""
    gh = FakeGitHub().start()
    gh.add_issue("o/r", 1, title="t")
    gh.fail("GET", r"/issues/1$", mode="timeout")
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(f"{gh.url}/repos/o/r/issues/1", timeout=0.3)
    started = time.monotonic()
    gh.stop()
    assert time.monotonic() - started < 1.5
    assert gh.requests[0].status == 0  # never answered
    with pytest.raises(RuntimeError):
        gh.start()


@pytest.mark.parametrize(
    ("mode", "error"),
    [("reset", httpx.TransportError), ("truncated", httpx.RemoteProtocolError)],
)
def test_fault_broken_connections(fake_github, mode, error):
    """A reset or a body cut short surfaces as a transport error, not as data."""
    fake_github.add_issue("o/r", 1, title="t")
    fake_github.fail("GET", r"/issues/1$", mode=mode)
    with pytest.raises(error):
        httpx.get(f"{fake_github.url}/repos/o/r/issues/1", timeout=2)
    assert httpx.get(f"{fake_github.url}/repos/o/r/issues/1").status_code == 200


def test_fault_malformed_and_redirect(fake_github, api):
    """Malformed JSON with a 200; a 301 (renamed repo) that leads to the same issue."""
    fake_github.add_issue("o/r", 1, title="t")
    fake_github.fail("GET", r"/issues/1$", mode="malformed")
    bad = api.get("/repos/o/r/issues/1")
    assert bad.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        bad.json()

    fake_github.fail("GET", r"^/repos/o/r/issues/1$", mode="redirect")
    moved = api.get("/repos/o/r/issues/1")
    assert moved.status_code == 301 and "/repositories/" in moved.headers["location"]
    assert api.get(moved.headers["location"]).json()["title"] == "t"

    fake_github.fail(
        "GET", r"/issues/1$", mode="redirect", headers={"Location": "/repos/o/r/issues/1"}
    )
    assert api.get("/repos/o/r/issues/1", follow_redirects=True).json()["number"] == 1
    with pytest.raises(ValueError):
        fake_github.fail("GET", "x", mode="explode")


def test_latency_is_served_concurrently():
    """Ten requests at 1 s each finish in under half their serial 10 s: the server is threaded.

    The margin is wide on purpose (a loaded 2-core machine adds seconds of client overhead); a
    serial server could not finish under 10 s whatever the load.
    """
    with FakeGitHub(latency=1.0) as gh:
        gh.add_issue("o/r", 1, title="t")
        results: list[int] = []

        def fetch() -> None:
            results.append(httpx.get(f"{gh.url}/repos/o/r/issues/1").status_code)

        threads = [threading.Thread(target=fetch) for _ in range(10)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [200] * 10 and time.monotonic() - started < 5.0


def test_requests_are_recorded(fake_github, api):
    """Tests assert on what the client sent: method, path, query, lower-case headers, body."""
    fake_github.add_issue("o/r", 1, title="t")
    api.get("/repos/o/r/issues/1/comments", params={"per_page": 5})
    api.post("/repos/o/r/issues/1/comments", json={"body": "hi"})
    get, post = fake_github.requests
    assert (get.method, get.path, get.query, get.status) == (
        "GET",
        "/repos/o/r/issues/1/comments",
        {"per_page": "5"},
        200,
    )
    assert get.headers["authorization"] == "Bearer test-token"
    assert (post.method, post.status, json.loads(post.body)) == ("POST", 201, {"body": "hi"})
    fake_github.reset_requests()
    assert fake_github.requests == []


def test_update_fields_and_merge(fake_github, api):
    """update() can merge a pull: state, merged_at and merge_commit_sha follow, updated_at moves."""
    pr = fake_github.add_pull("o/r", 2, title="fix", created_at="2026-03-01T00:00:00Z")
    assert pr["state"] == "open" and pr["merged_at"] is None
    fake_github.update("o/r", 2, merged=True, merged_at="2026-03-05T12:00:00Z", title="fix!")
    pull = api.get("/repos/o/r/pulls/2").json()
    assert (pull["state"], pull["merged"], pull["title"]) == ("closed", True, "fix!")
    assert pull["merged_at"] == pull["closed_at"] == pull["updated_at"] == "2026-03-05T12:00:00Z"
    assert len(pull["merge_commit_sha"]) == 40
    fake_github.update("o/r", 2, locked=True)
    assert api.get("/repos/o/r/issues/2").json()["locked"] is True


def test_real_threads_tell_the_true_story(seeded, api):
    """The seeded vLLM threads carry the facts design.md lists, for other modules' tests."""
    closed = api.get(f"/repos/{VLLM}/pulls/40361").json()
    assert (closed["state"], closed["merged"], closed["closed_at"][:10]) == (
        "closed",
        False,
        "2026-06-12",
    )
    assert closed["title"] == "[Kernel] Marlin: pad sub-tile n for int4"
    fix = api.get(f"/repos/{VLLM}/pulls/45295").json()
    assert fix["merged"] and fix["merged_at"][:10] == "2026-06-12"
    turbo = api.get(f"/repos/{VLLM}/pulls/39931").json()
    assert "TurboQuant" in turbo["title"] and "rollback" not in turbo["title"].lower()
    assert api.get(f"/repos/{VLLM}/issues/40124").json()["state"] == "open"
    sglang = api.get(
        "/repos/sgl-project/sglang/commits",
        params={"path": "python/sglang/srt/layers/quantization/marlin_utils.py"},
    ).json()
    assert len(sglang) == 2
    assert [r["tag_name"] for r in api.get("/repos/sgl-project/sglang/releases").json()] == [
        "v0.6.0",
        "v0.5.9",
    ]

    with FakeGitHub() as again:  # deterministic: a second seeding gives the same shas and ids
        real_threads(again)
        twin = httpx.get(f"{again.url}/repos/{VLLM}/commits").json()
        twin_pr = httpx.get(f"{again.url}/repos/{VLLM}/pulls/45295").json()
    assert [c["sha"] for c in twin] == [c["sha"] for c in api.get(f"/repos/{VLLM}/commits").json()]
    assert (twin_pr["id"], twin_pr["merge_commit_sha"]) == (fix["id"], fix["merge_commit_sha"])


def test_pygithub_reads_through_the_fake(seeded):
    """PyGithub (requests-based) works against the fake: base_url, auth and Link pagination."""
    github = pytest.importorskip("github")
    gh = github.Github(base_url=seeded.url, auth=github.Auth.Token("test-token"), retry=None)
    repo = gh.get_repo(VLLM)
    assert repo.get_pull(40361).merged is False
    assert [c.commit.message.split(" ")[0] for c in repo.get_commits(path="vllm/version.py")] == [
        "[Release]",
        "[Release]",
    ]
    assert repo.compare("v0.24.0", repo.get_pull(45295).merge_commit_sha).status == "behind"


# --------------------------------------------------------------------------- contents, trees


CONTENTS = "GET /repos/{owner}/{repo}/contents/{path}"
TREE = "GET /repos/{owner}/{repo}/git/trees/{tree_sha}"
BRANCH = "GET /repos/{owner}/{repo}/branches/{branch}"
REPO = "GET /repos/{owner}/{repo}"
PERMISSION = "GET /repos/{owner}/{repo}/collaborators/{username}/permission"
FILES_V1 = {
    "README.md": "# guide\n",
    "recipes/sglang.toml": 'engine = "sglang"\n',
    "recipes/deep/x.bin": b"\x00\x01binary\xff",
}


@pytest.fixture
def guide(fake_github: FakeGitHub) -> dict:
    """club/guide with two commits: the second edits one file, adds one, deletes one."""
    first = fake_github.add_commit(
        "club/guide", message="init", date="2026-07-01T10:00:00Z", contents=FILES_V1
    )
    second = fake_github.add_commit(
        "club/guide",
        message="tune",
        date="2026-07-02T10:00:00Z",
        contents={"README.md": "# guide v2\n", "NOTES.md": "n\n", "recipes/deep/x.bin": None},
    )
    return {"first": first["sha"], "second": second["sha"]}


def _git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _needs_304(api: httpx.Client, url: str, **params: str) -> httpx.Response:
    """GET twice; the second, conditional on the first's ETag, must be a 304."""
    first = api.get(url, params=params)
    assert first.status_code == 200, (url, first.text[:200])
    again = api.get(url, params=params, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    return first


def test_repository_and_branches(fake_github, guide, api, spec):
    """The repo names its default branch; branches point at commits; unknown branch is 404."""
    repo = _needs_304(api, "/repos/club/guide").json()
    validate(spec, REPO, "200", repo)
    assert repo["default_branch"] == "main"
    main = _needs_304(api, "/repos/club/guide/branches/main").json()
    validate(spec, BRANCH, "200", main)
    assert main["name"] == "main" and main["commit"]["sha"] == guide["second"]

    fake_github.set_branch("club/guide", "release/v1", guide["first"][:8])
    v1 = api.get("/repos/club/guide/branches/release/v1").json()
    assert v1["commit"]["sha"] == guide["first"]
    fake_github.set_default_branch("club/guide", "trunk")
    assert api.get("/repos/club/guide").json()["default_branch"] == "trunk"
    third = fake_github.add_commit("club/guide", message="on trunk", date="2026-07-03")
    assert api.get("/repos/club/guide/branches/trunk").json()["commit"]["sha"] == third["sha"]
    assert api.get("/repos/club/guide/branches/main").json()["commit"]["sha"] == guide["second"]
    assert api.get("/repos/club/guide/branches/nope").status_code == 404
    ref = _needs_304(api, "/repos/club/guide/git/ref/heads/release/v1").json()
    validate(spec, "GET /repos/{owner}/{repo}/git/ref/{ref}", "200", ref)
    assert (ref["ref"], ref["object"]["sha"]) == ("refs/heads/release/v1", guide["first"])
    fake_github.add_tag("club/guide", "v1", guide["first"])
    assert api.get("/repos/club/guide/git/ref/tags/v1").json()["object"]["sha"] == guide["first"]
    assert api.get("/repos/club/guide/git/ref/tags/v9").status_code == 404
    with pytest.raises(ValueError):
        fake_github.set_branch("club/guide", "x", "f" * 40)


def test_contents_file_folder_and_missing(fake_github, guide, api, spec, tmp_path):
    """Files come base64 with git's blob sha; folders list entries; a ref reads the past."""
    readme = _needs_304(api, "/repos/club/guide/contents/README.md").json()
    validate(spec, CONTENTS, "200", readme)
    assert base64.b64decode(readme["content"]) == b"# guide v2\n"
    assert (readme["type"], readme["encoding"], readme["size"]) == ("file", "base64", 11)
    (tmp_path / "README.md").write_bytes(b"# guide v2\n")
    assert readme["sha"] == _git(tmp_path, "hash-object", "README.md")
    assert readme["html_url"] == "https://github.com/club/guide/blob/main/README.md"

    old = api.get("/repos/club/guide/contents/recipes/deep/x.bin", params={"ref": guide["first"]})
    validate(spec, CONTENTS, "200", old.json())
    assert base64.b64decode(old.json()["content"]) == FILES_V1["recipes/deep/x.bin"]
    assert api.get("/repos/club/guide/contents/recipes/deep/x.bin").status_code == 404
    assert api.get("/repos/club/guide/contents/NOTES.md", params={"ref": "v0"}).status_code == 404

    folder = _needs_304(api, "/repos/club/guide/contents/recipes", ref=guide["first"]).json()
    validate(spec, CONTENTS, "200", folder)
    assert [(e["name"], e["type"]) for e in folder] == [("deep", "dir"), ("sglang.toml", "file")]
    root = api.get("/repos/club/guide/contents").json()
    assert [e["path"] for e in root] == ["NOTES.md", "README.md", "recipes"]
    assert api.get("/repos/club/guide/contents/nothing/here").status_code == 404

    detail = api.get(f"/repos/club/guide/commits/{guide['second']}").json()
    status = {f["filename"]: f["status"] for f in detail["files"]}
    assert status == {"README.md": "modified", "NOTES.md": "added", "recipes/deep/x.bin": "removed"}


def test_git_trees_match_real_git(fake_github, guide, api, spec, tmp_path):
    """Tree and blob shas equal the ones git computes for the same files."""
    for path, data in FILES_V1.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data.encode() if isinstance(data, str) else data)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    tree_sha = _git(tmp_path, "write-tree")
    listed = _git(tmp_path, "ls-tree", "-r", "-t", tree_sha).splitlines()
    expected = sorted((line.split("\t")[1], line.split()[2]) for line in listed)

    commit = api.get(f"/repos/club/guide/commits/{guide['first']}").json()
    assert commit["commit"]["tree"]["sha"] == tree_sha
    tree = _needs_304(api, f"/repos/club/guide/git/trees/{guide['first']}", recursive="1").json()
    validate(spec, TREE, "200", tree)
    assert tree["sha"] == tree_sha and tree["truncated"] is False
    assert sorted((e["path"], e["sha"]) for e in tree["tree"]) == expected
    sizes = {e["path"]: e.get("size") for e in tree["tree"]}
    assert sizes["README.md"] == 8 and sizes["recipes"] is None

    top = api.get(f"/repos/club/guide/git/trees/{tree_sha}").json()
    assert [e["path"] for e in top["tree"]] == ["README.md", "recipes"]
    sub = next(e for e in top["tree"] if e["type"] == "tree")
    below = api.get(sub["url"]).json()
    assert [e["path"] for e in below["tree"]] == ["deep", "sglang.toml"]
    assert api.get("/repos/club/guide/git/trees/main").json()["sha"] != tree_sha
    assert api.get("/repos/club/guide/git/trees/" + "0" * 40).status_code == 404


def test_collaborator_permission(fake_github, api, spec):
    """permission folds maintain into write and triage into read; role_name keeps the role."""
    fake_github.add_issue("club/guide", 1, title="status")
    fake_github.set_permission("club/guide", "Lead", "maintain")
    fake_github.set_permission("club/guide", "helper", "triage")
    lead = _needs_304(api, "/repos/club/guide/collaborators/lead/permission").json()
    validate(spec, PERMISSION, "200", lead)
    assert (lead["permission"], lead["role_name"], lead["user"]["login"]) == (
        "write",
        "maintain",
        "lead",
    )
    helper = api.get("/repos/club/guide/collaborators/helper/permission").json()
    assert (helper["permission"], helper["role_name"]) == ("read", "triage")
    stranger = api.get("/repos/club/guide/collaborators/stranger/permission").json()
    assert stranger["permission"] == "read"
    fake_github.set_permission("club/guide", "stranger", "none")
    stranger = api.get("/repos/club/guide/collaborators/stranger/permission").json()
    assert (stranger["permission"], stranger["user"]["permissions"]["pull"]) == ("none", False)
    with pytest.raises(ValueError):
        fake_github.set_permission("club/guide", "x", "owner")


def test_commits_by_branch_path_and_window(fake_github, guide, api, spec):
    """commits?sha= follows a branch's own history; path/since/until and pages still apply."""
    fake_github.set_branch("club/guide", "old", guide["first"])
    for day in range(3, 8):
        fake_github.add_commit(
            "club/guide", message=f"day {day}", date=f"2026-07-0{day}", contents={"d.txt": str(day)}
        )
    old = _needs_304(api, "/repos/club/guide/commits", sha="old").json()
    validate(spec, "GET /repos/{owner}/{repo}/commits", "200", old)
    assert [c["commit"]["message"] for c in old] == ["init"]
    by_path = api.get("/repos/club/guide/commits", params={"path": "README.md"}).json()
    assert [c["commit"]["message"] for c in by_path] == ["tune", "init"]
    window = api.get(
        "/repos/club/guide/commits", params={"since": "2026-07-04", "until": "2026-07-06"}
    ).json()
    assert [c["commit"]["message"] for c in window] == ["day 6", "day 5", "day 4"]
    page = api.get("/repos/club/guide/commits", params={"per_page": 3, "page": 2})
    assert [c["commit"]["message"] for c in page.json()] == ["day 4", "day 3", "tune"]
    assert 'rel="prev"' in page.headers["link"] and 'rel="next"' in page.headers["link"]


def test_unknown_objects_answer_503_not_404(api, spec):
    """A filler that cannot tell a file's bytes makes the routes say so, never "missing"."""

    class Forgetful(FakeGitHub):
        def blob(self, repo: str, blob_sha: str) -> bytes:
            raise Unknown(f"blob {blob_sha[:7]}")

    with Forgetful() as gh:
        gh.add_commit("o/r", message="m", date="2026-07-01", contents={"a/b.txt": "x"})
        r = httpx.get(f"{gh.url}/repos/o/r/contents/a/b.txt")
        assert r.status_code == 503 and "not in the recorded history" in r.json()["message"]
        assert httpx.get(f"{gh.url}/repos/o/r/git/trees/HEAD?recursive=1").status_code == 503
        assert httpx.get(f"{gh.url}/repos/o/r/contents/a/nope.txt").status_code == 404
