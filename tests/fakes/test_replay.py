"""The replay fake answers from the recorded history as of a date, and says 503 where the record
cannot answer (unknown is not missing). Facts checked here are from the real upstream repos."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from openapi_schema_validator import OAS30Validator, oas30_format_checker

from watcher.core.errors import GitHubError
from watcher.fakes.history import default_history, parse_time
from watcher.fakes.replay import ReplayGitHub
from watcher.github.client import GitHubClient

SGL = "sgl-project/sglang"
FLA = "fla-org/flash-linear-attention"
MARLIN_UTILS = "python/sglang/srt/layers/quantization/marlin_utils.py"
AOT_GEMM = "sgl-kernel/csrc/gemm/marlin/gptq_marlin.cu"  # deleted by 9dff933164 on 2026-02-25


@pytest.fixture(scope="module")
def at_cut():
    with ReplayGitHub() as gh:
        yield gh


@pytest.fixture(scope="module")
def in_march():
    with ReplayGitHub(as_of="2026-03-01T00:00:00Z") as gh:
        yield gh


def client(gh: ReplayGitHub) -> GitHubClient:
    return GitHubClient(gh.url, token="test-token", retries=0)


def status_of(gh: ReplayGitHub, path: str, params: dict | None = None) -> int:
    with client(gh) as c:
        try:
            c.get(path, params)
        except GitHubError as e:
            return e.status
    return 200


def test_branch_tip_is_the_newest_first_parent_commit_by_then(at_cut, in_march):
    history = default_history()[SGL]
    with client(in_march) as c:
        head = c.get_json(f"/repos/{SGL}/branches/main")["commit"]["sha"]
    assert head == history.tip(parse_time("2026-03-01T00:00:00Z"))
    assert history.commits[head].committed <= parse_time("2026-03-01T00:00:00Z")
    with client(at_cut) as c:
        assert c.get_json(f"/repos/{SGL}/branches/main")["commit"]["sha"] == history.tip_sha


def test_commit_list_by_path_and_date_follows_links_and_matches_the_record(at_cut):
    params = {
        "path": "python/sglang/srt/layers/attention/fla/",
        "since": "2026-01-01T00:00:00Z",
        "until": "2026-03-31T23:59:59Z",
        "per_page": 5,
    }
    with client(at_cut) as c:
        listed = c.paginate(f"/repos/{SGL}/commits", params, max_pages=100)
        requests = c.stats.requests
    history = default_history()[SGL]
    expected = history.log(
        history.tip_sha,
        path=params["path"],
        since=parse_time(params["since"]),
        until=parse_time(params["until"]),
    )
    assert [c["sha"] for c in listed] == [c.sha for c in expected]
    assert len(listed) > 5 and requests == -(-len(listed) // 5)  # several pages, via Link
    dates = [c["commit"]["committer"]["date"] for c in listed]
    assert dates == sorted(dates, reverse=True)


def test_a_commit_is_visible_only_once_committed(in_march):
    # "[Spec V2] Support specV2 for mamba hybrid attention" was committed on 2026-02-27.
    with client(in_march) as c:
        listed = c.paginate(
            f"/repos/{SGL}/commits",
            {"path": "python/sglang/srt/speculative/", "since": "2026-02-01T00:00:00Z"},
            max_pages=50,
        )
    subjects = [c["commit"]["message"].splitlines()[0] for c in listed]
    assert "[Spec V2] Support specV2 for mamba hybrid attention (#18808)" in subjects
    with ReplayGitHub(as_of="2026-02-26T00:00:00Z", repos=[SGL]) as before, client(before) as c:
        earlier = c.paginate(
            f"/repos/{SGL}/commits",
            {"path": "python/sglang/srt/speculative/", "since": "2026-02-01T00:00:00Z"},
            max_pages=50,
        )
    assert all("#18808" not in c["commit"]["message"] for c in earlier)


def test_a_page_reaching_back_before_the_record_is_503_not_a_short_list(at_cut):
    commits = f"/repos/{SGL}/commits"
    spec = {"path": "python/sglang/srt/speculative/"}
    # Within the record (SGLang: from 2025-12-01) every page is known.
    assert status_of(at_cut, commits, {**spec, "since": "2025-12-01T00:00:00Z"}) == 200
    # Without `since` the newest commit is known (the page is full) ...
    with client(at_cut) as c:
        newest = c.get_json(commits, {**spec, "per_page": 1})
    assert (
        newest[0]["sha"]
        == default_history()[SGL].log(default_history()[SGL].tip_sha, path=spec["path"])[0].sha
    )
    # ... but the last page would end at the record's start and hide older commits.
    assert status_of(at_cut, commits, {**spec, "per_page": 100, "page": 50}) == 503
    few = {"path": MARLIN_UTILS, "since": "2025-06-01T00:00:00Z"}  # 3 commits in the record
    assert status_of(at_cut, commits, few) == 503


def test_single_commits_carry_their_message_and_files(at_cut):
    history = default_history()[SGL]
    commit = history.commits[history.first_parent[10]]
    with client(at_cut) as c:
        data = c.get_json(f"/repos/{SGL}/commits/{commit.sha}")
    assert data["commit"]["message"] == commit.message
    assert {f["filename"] for f in data["files"]} == set(commit.files)


def test_contents_known_only_where_no_later_commit_touched_the_file(at_cut, in_march):
    history = default_history()[SGL]
    path = f"/repos/{SGL}/contents/{MARLIN_UTILS}"
    with client(at_cut) as c:
        first = c.get(path)
        again = c.get(path)
    text = base64.b64decode(first.data["content"]).decode()
    assert "% GPTQ_MARLIN_MIN_THREAD_N != 0" in text  # SGLang's guard, still there at the cut
    assert first.data["sha"] == history.tree[MARLIN_UTILS]
    assert again.not_modified  # conditional requests work on the replay too
    # At 2026-03-01 the file was changed later (24f52e66d3, 2026-04-03): unknown, not missing.
    assert status_of(in_march, path) == 503
    # The tip of 2026-04-10 comes after the last change: the recorded content holds there.
    tip = history.tip(parse_time("2026-04-10T00:00:00Z"))
    with client(at_cut) as c:
        assert c.get_json(path, {"ref": tip})["sha"] == history.tree[MARLIN_UTILS]


def test_a_deleted_file_is_404_and_an_unrecorded_release_commit_is_503(at_cut, in_march):
    assert status_of(at_cut, f"/repos/{SGL}/contents/{AOT_GEMM}") == 404
    assert status_of(in_march, f"/repos/{SGL}/contents/{AOT_GEMM}") == 404
    # SGLang's release tags point at release-branch commits the record does not hold.
    contents = f"/repos/{SGL}/contents/{MARLIN_UTILS}"
    assert status_of(at_cut, contents, {"ref": "v0.5.10.post1"}) == 503
    # A file the record kept no bytes of, at the cut: present, but its content is unknown.
    assert status_of(at_cut, f"/repos/{SGL}/contents/README.md") == 503


def test_trees_whole_at_the_cut_and_truncated_before(at_cut, in_march):
    with client(at_cut) as c:
        tree = c.get_json(f"/repos/{SGL}/git/trees/main", {"recursive": "1"})
    paths = {e["path"] for e in tree["tree"]}
    assert not tree["truncated"]
    assert MARLIN_UTILS in paths and AOT_GEMM not in paths
    assert "python/sglang/jit_kernel/csrc/gemm/marlin/gptq_marlin.cuh" in paths
    with client(in_march) as c:
        early = c.get_json(f"/repos/{SGL}/git/trees/main", {"recursive": "1"})
    listed = {e["path"] for e in early["tree"]}
    # Only files no later commit touched are listed; the flag says the list is incomplete.
    assert early["truncated"] and listed < paths
    assert MARLIN_UTILS not in listed  # changed on 2026-04-03: not known in March
    assert "LICENSE" in listed


def test_releases_are_the_version_tags_that_existed_by_then(at_cut, in_march):
    with client(in_march) as c:
        assert c.get_json(f"/repos/{SGL}/releases/latest")["tag_name"] == "v0.5.9"
    with client(at_cut) as c:
        latest = c.get_json(f"/repos/{SGL}/releases/latest")
        listed = c.paginate(f"/repos/{SGL}/releases", {"per_page": 100}, max_pages=5)
    assert latest["tag_name"] == "v0.5.10.post1"
    rc = next(r for r in listed if r["tag_name"] == "v0.5.10rc0")
    assert rc["prerelease"] is True
    assert not any(r["tag_name"].startswith("test/") for r in listed)  # tags, not releases
    assert status_of(at_cut, "/repos/MoonshotAI/FlashKDA/releases/latest") == 404  # no tags


def test_compare_by_ancestry_and_503_for_unrecorded_commits(at_cut):
    with client(at_cut) as c:
        data = c.get_json(f"/repos/{FLA}/compare/v0.4.1...main")
        back = c.get_json(f"/repos/{FLA}/compare/main...v0.4.1")
    assert data["status"] == "ahead" and data["ahead_by"] > 0
    assert back["status"] == "behind"
    with client(at_cut) as c:
        assert c.get_json(f"/repos/{SGL}/compare/v0.5.6...main")["status"] == "ahead"
    assert status_of(at_cut, f"/repos/{SGL}/compare/v0.5.9...main") == 503  # release branch


def test_answers_keep_githubs_shapes(at_cut, in_march):
    """The replay's own answers (trees) and the fake's, filled from the record, match GitHub's
    OpenAPI description (the subset kept in tests/github-api)."""
    path = Path(__file__).resolve().parents[1] / "github-api" / "openapi-subset.json"
    operations = json.loads(path.read_text())["operations"]

    def check(operation: str, data: object) -> None:
        schema = operations[operation]["responses"]["200"]["content"]["application/json"]["schema"]
        validator = OAS30Validator(schema, format_checker=oas30_format_checker)
        errors = [
            f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(data)
        ]
        assert not errors, f"{operation}:\n" + "\n".join(errors[:5])

    repo = "/repos/{owner}/{repo}"
    with client(at_cut) as c:
        check(f"GET {repo}/git/trees/{{tree_sha}}", c.get_json(f"/repos/{SGL}/git/trees/main"))
        check(f"GET {repo}/contents/{{path}}", c.get_json(f"/repos/{SGL}/contents/{MARLIN_UTILS}"))
        listed = c.get_json(f"/repos/{SGL}/commits", {"path": MARLIN_UTILS, "per_page": 2})
        check(f"GET {repo}/commits", listed)
        # the fake's own answer: get_json keeps only the compare fields watcher reads
        whole = c.send("GET", c.url(f"/repos/{FLA}/compare/v0.4.1...main")).json()
        check(f"GET {repo}/compare/{{basehead}}", whole)
        check(f"GET {repo}/releases/latest", c.get_json(f"/repos/{SGL}/releases/latest"))
    with client(in_march) as c:
        early = c.get_json(f"/repos/{SGL}/git/trees/main", {"recursive": "1"})
    check(f"GET {repo}/git/trees/{{tree_sha}}", early)
