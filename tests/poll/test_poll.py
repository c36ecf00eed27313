"""Reading item states from a fake GitHub over real HTTP: the words, the cross-references, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from watcher.config.load import parse_config
from watcher.github.client import GitHubClient
from watcher.loop.cycle import run_cycle
from watcher.poll.poller import Poller
from watcher.store.db import Store

REPO = "vllm-project/vllm"


def item(kind, number=None, **extra):
    from watcher.config.model import Item

    return Item(
        id=f"{kind}-{number or 'x'}",
        repo=extra.pop("repo", REPO),
        kind=kind,
        number=number,
        **extra,
    )


def poll(gh, it, **kw):
    with GitHubClient(
        gh.url,
        token="test-token",
        max_rate_limit_wait=kw.pop("wait", 5),
        timeout=kw.pop("timeout", 5),
        retries=kw.pop("retries", 1),
        sleep=lambda s: None,
    ) as client:
        return Poller(client).poll(it)


@pytest.mark.parametrize(
    "fields, state",
    [
        ({"state": "open"}, "open"),
        ({"state": "open", "draft": True}, "draft"),
        ({"state": "closed", "merged": True, "merge_commit_sha": None}, "merged"),
        ({"state": "closed"}, "closed"),
    ],
)
def test_pull_states(gh, fields, state):
    gh.add_pull(REPO, 7, title="A pull", **fields)
    obs = poll(gh, item("pull", 7))
    assert obs.error is None
    assert (obs.state, obs.title) == (state, "A pull")
    assert obs.url == f"https://github.com/{REPO}/pull/7"


@pytest.mark.parametrize(
    "fields, state",
    [
        ({"state": "open"}, "open"),
        ({"state": "closed", "state_reason": "completed"}, "completed"),
        ({"state": "closed", "state_reason": "not_planned"}, "not_planned"),
        ({"state": "closed", "state_reason": "duplicate"}, "closed"),
        ({"state": "open", "state_reason": "reopened"}, "open"),
    ],
)
def test_issue_states(gh, fields, state):
    gh.add_issue(REPO, 9, title="An issue", **fields)
    assert poll(gh, item("issue", 9)).state == state


def test_closed_unmerged_pr_superseded_and_first_release(gh):
    """vllm#40361 closed without merge; #45295 merged the fix, first shipped in v0.24.0."""
    gh.add_commit(REPO, message="base", date="2026-05-01T00:00:00Z")
    gh.add_release(REPO, "v0.23.0", published_at="2026-06-01T00:00:00Z")
    gh.add_commit(REPO, message="other", date="2026-06-05T00:00:00Z")
    fix = gh.add_commit(REPO, message="[Kernel] Marlin pad (#45295)", date="2026-06-12T12:00:00Z")
    gh.add_release(REPO, "v0.24.0", published_at="2026-07-01T00:00:00Z")
    gh.add_commit(REPO, message="later", date="2026-07-05T00:00:00Z")
    gh.add_release(REPO, "v0.25.0", published_at="2026-08-01T00:00:00Z")
    gh.add_pull(
        REPO,
        40361,
        title="[Kernel] Marlin: pad sub-tile n",
        state="closed",
        closed_at="2026-06-12T10:00:00Z",
    )
    gh.add_pull(REPO, 45290, title="Unrelated, closed", state="closed")
    gh.add_pull(
        REPO,
        45295,
        title="[Kernel] Marlin pad (redo)",
        state="closed",
        merged=True,
        merge_commit_sha=fix["sha"],
        merged_at="2026-06-12T12:00:00Z",
    )
    gh.add_cross_reference(REPO, 40361, source_repo=REPO, source_number=45290)
    gh.add_cross_reference(REPO, 40361, source_repo=REPO, source_number=45295)
    obs = poll(gh, item("pull", 40361))
    assert obs.state == "closed"
    assert (obs.superseded_by, obs.superseded_state) == (45295, "merged")
    assert obs.in_release == "v0.24.0"
    compares = [r for r in gh.requests if "/compare/" in r.path]
    assert compares and all("v0.2" in r.path for r in compares)
    # the superseding pull's JSON embeds its base repository's default branch: the repository
    # object is not read for it (issue 33, item 9: one point a quiet cycle on real GitHub)
    assert not [r for r in gh.requests if r.path == f"/repos/{REPO}"]


def test_merged_pr_in_no_release_yet(gh):
    gh.add_commit(REPO, message="base", date="2026-05-01T00:00:00Z")
    gh.add_release(REPO, "v0.23.0", published_at="2026-06-01T00:00:00Z")
    fix = gh.add_commit(REPO, message="fix", date="2026-06-12T00:00:00Z")
    gh.add_pull(
        REPO,
        5,
        title="Fix",
        state="closed",
        merged=True,
        merge_commit_sha=fix["sha"],
        merged_at="2026-06-12T00:00:00Z",
    )
    obs = poll(gh, item("pull", 5))
    assert obs.state == "merged" and obs.in_release is None


def test_commit_filter_false_positives_from_design(gh):
    repo = "fla-org/flash-linear-attention"
    gh.add_commit(
        repo,
        message="Use importlib find_spec for optional deps",
        date="2026-03-01T00:00:00Z",
        files=["fla/utils.py"],
    )
    gh.add_commit(
        repo,
        message="Roll back initializer_range default",
        date="2026-03-02T00:00:00Z",
        files=["fla/models/gla/configuration_gla.py"],
    )
    gh.add_commit(
        repo,
        message="Support gradient checkpointing in GLA",
        date="2026-03-03T00:00:00Z",
        files=["fla/layers/gla.py"],
    )
    gh.add_commit(
        repo,
        message="Refactor find_spec in gated delta kernels",
        date="2026-03-04T00:00:00Z",
        files=["fla/ops/gated_delta_rule/chunk.py"],
    )
    gh.add_commit(
        repo,
        message="Roll back initializer_range in gated deltanet",
        date="2026-03-05T00:00:00Z",
        files=["fla/layers/gated_deltanet.py"],
    )
    from watcher.config.load import load_config

    cfg = load_config(Path(__file__).resolve().parents[2] / "watch.toml")
    stream = cfg.item("fla-rollback")
    obs = poll(gh, stream)
    assert obs.state == "no-match", obs.details
    real = gh.add_commit(
        repo,
        message="Add state rollback for speculative decoding",
        date="2026-04-01T00:00:00Z",
        files=["fla/ops/gated_delta_rule/fused_recurrent.py"],
    )
    obs = poll(gh, stream)
    assert obs.state == "matched"
    assert [c["sha"] for c in obs.details["commits"]] == [real["sha"]]
    assert obs.details["commits"][0]["subject"] == "Add state rollback for speculative decoding"


def test_releases_stream(gh):
    repo = "sgl-project/sglang"
    gh.add_commit(repo, message="x", date="2026-01-01T00:00:00Z")
    gh.add_release(repo, "v0.5.9", published_at="2026-05-01T00:00:00Z")
    gh.add_release(repo, "v0.6.0", published_at="2026-08-01T00:00:00Z")
    obs = poll(gh, item("releases", repo=repo))
    assert obs.state == "v0.6.0"


def test_pagination_follows_link_across_three_pages(gh):
    repo = "o/many"
    for n in range(250):
        gh.add_commit(
            repo,
            message=f"speculative change {n}",
            date=f"2026-02-{1 + n % 28:02d}T00:00:{n % 60:02d}Z",
            files=["src/a.py"],
        )
    obs = poll(gh, item("commits", repo=repo, paths=("src/",), pattern=r"\bspeculative\b"))
    assert obs.details["scanned"] == 250 and obs.details["matched"] == 250
    pages = [
        r
        for r in gh.requests
        if r.path.endswith("/commits") and "path" in r.query and r.query.get("per_page") != "1"
    ]  # per_page=1: the lookup of a dead path (files seeded without contents leave no tree)
    assert len(pages) == 3
    assert [r.query.get("page") for r in pages][1:] == ["2", "3"]


@pytest.mark.parametrize(
    "fault",
    [
        {"status": 404},
        {"status": 500, "times": -1},
        {"status": 502, "times": -1},
        {"mode": "timeout", "times": -1},
        {"mode": "reset", "times": -1},
        {"mode": "truncated", "times": -1},
        {"mode": "malformed", "times": -1},
        {
            "status": 403,
            "headers": {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "4102444800"},
        },
        {"status": 429, "headers": {"retry-after": "3600"}},
        {"status": 401, "body": {"message": "Bad credentials"}},
    ],
)
def test_errors_never_change_state(gh, tmp_path, fault):
    """A failed request keeps the item's last known state, marked stale, with the error recorded.

    Independent of timing: one item at a time, the healthy one first (a rate limit on the failing
    one pauses every later request of the cycle, by design), and a generous request timeout
    except where the fault is the timeout itself.
    """
    gh.add_pull(REPO, 1, title="Marlin pad", state="open")
    gh.add_commit("o/healthy", message="x", date="2026-01-01T00:00:00Z")
    gh.add_release("o/healthy", "v1", published_at="2026-02-01T00:00:00Z")
    timeout = "2s" if fault.get("mode") == "timeout" else "30s"
    cfg_path = tmp_path / "watch.toml"
    cfg_path.write_text(
        f'[watcher]\ngithub_api_url = "{gh.url}"\ntimeout = "{timeout}"\n'
        'max_rate_limit_wait = "2s"\nconcurrency = 1\nfull_read_every = 1\n'  # read every cycle
        '[[item]]\nid = "rel"\nrepo = "o/healthy"\nkind = "releases"\n'
        f'[[item]]\nid = "pr"\nrepo = "{REPO}"\nkind = "pull"\nnumber = 1\n'
        '[[blocker]]\nid = "b"\ntitle = "B"\nitems = ["pr"]\n'
        '[[page]]\nid = "p"\ntitle = "P"\noutput = "P.md"\nblockers = ["b"]\n'
    )
    cfg = parse_config(cfg_path.read_text(), cfg_path)
    first = run_cycle(cfg)
    assert first.item_errors == {}
    gh.fail("GET", r"/pulls/1$", **fault)
    second = run_cycle(cfg)
    assert set(second.item_errors) == {"pr"}
    store = Store(cfg.db_path)
    row = store.items()["pr"]
    events = store.events()
    store.close()
    assert row["state"] == "open" and row["stale"] and row["error"]
    item_events = [e for e in events if e["kind"] == "item" and e["subject"] == "pr"]
    assert len(item_events) == 1 and item_events[0]["new"] == "open"  # no state change recorded
    pr = next(i for i in second.status["items"] if i["id"] == "pr")
    assert pr["state"] == "open" and pr["stale"] is True and pr["error"] == row["error"]
    # the error is shown, on the page and on the site, next to the kept state
    page = (tmp_path / "P.md").read_text()
    assert (
        "behind this page needs attention; last fully checked" in page and "pull/1): open" in page
    )  # the kept state
    site = (tmp_path / "site" / "index.html").read_text()
    import html

    assert "could not be read: " + row["error"] in html.unescape(site)
    # the next healthy cycle recovers
    gh.clear_faults()
    third = run_cycle(cfg)
    assert third.item_errors == {}
    assert not any(i["stale"] for i in third.status["items"])


def test_transferred_issue_is_followed_and_recorded(gh):
    gh.add_issue(
        "new-org/new-repo", 3, title="Moved here", state="closed", state_reason="completed"
    )
    gh.fail(
        "GET",
        r"/repos/vllm-project/vllm/issues/9$",
        mode="redirect",
        times=-1,
        headers={"Location": f"{gh.url}/repos/new-org/new-repo/issues/3"},
    )
    obs = poll(gh, item("issue", 9))
    assert obs.error is None and obs.state == "completed"
    assert obs.moved_to and obs.moved_to.endswith("/repos/new-org/new-repo/issues/3")


def test_gone_issue_is_an_error_not_a_state(gh):
    gh.fail("GET", r"/issues/9$", status=410, times=-1, body={"message": "This issue was deleted"})
    obs = poll(gh, item("issue", 9))
    assert obs.state is None and "410" in obs.error and "deleted" in obs.error


def test_secondary_rate_limit_waits_then_recovers(gh):
    gh.add_pull(REPO, 2, title="x")
    gh.fail(
        "GET",
        r"/pulls/2$",
        status=403,
        headers={"retry-after": "1"},
        body={"message": "You have exceeded a secondary rate limit"},
    )
    slept = []
    with GitHubClient(gh.url, max_rate_limit_wait=5, sleep=slept.append) as client:
        obs = Poller(client).poll(item("pull", 2))
    assert obs.error is None and obs.state == "open"
    assert slept and slept[0] >= 0.5
