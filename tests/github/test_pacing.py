"""Pacing under GitHub's secondary limits, writes on a limit, answers a replay can never hold,
the backtest's bounded cache, X-Poll-Interval in serve, and the template bytecode cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from watcher.core.errors import GitHubError
from watcher.fakes.replay import ReplayGitHub
from watcher.github.client import GitHubClient
from watcher.github.pacing import Budget, points


class Clock:
    def __init__(self):
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_budget_never_spends_more_than_900_points_in_a_minute():
    clock = Clock()
    budget = Budget(clock=clock, sleep=clock.sleep)
    for _ in range(900):
        assert budget.take("GET") == 0.0
        clock.now += 0.01
    assert budget.used() == 900
    waited = budget.take("GET")  # the 901st point waits for the first to leave the window
    assert waited == pytest.approx(60 - 9.0, abs=0.02)
    assert budget.used() <= 900


def test_writes_cost_five_points_and_content_is_capped_at_80_a_minute():
    assert points("GET") == 1 and points("post") == 5 and points("PATCH") == 5
    clock = Clock()
    budget = Budget(clock=clock, sleep=clock.sleep)
    for _ in range(80):
        assert budget.take("POST") == 0.0
    assert budget.used() == 400
    assert budget.take("POST") == pytest.approx(60.0)  # the 81st comment waits a minute
    assert budget.take("PATCH") == 0.0  # an edit creates no content: points only


def test_the_client_waits_for_the_budget_and_counts_it(fake_github):
    fake_github.add_issue("o/r", 1, title="t")
    clock = Clock()
    budget = Budget(points_per_minute=3, clock=clock, sleep=clock.sleep)
    with GitHubClient(fake_github.url, token="test-token", budget=budget) as client:
        for _ in range(4):
            client.get("/repos/o/r/issues/1")
    assert len(fake_github.requests) == 4
    assert clock.slept == [pytest.approx(60.0)]
    assert client.stats.paced_s == pytest.approx(60.0)


def test_a_write_refused_by_a_secondary_limit_is_not_retried_and_later_requests_wait(
    fake_github,
):
    fake_github.add_issue("o/r", 1, title="t")
    fake_github.fail(
        "POST",
        r"/comments$",
        status=403,
        headers={"Retry-After": "7"},
        body={"message": "You have exceeded a secondary rate limit."},
    )
    slept: list[float] = []
    with GitHubClient(fake_github.url, token="test-token", sleep=slept.append) as client:
        answer = client.send("POST", "/repos/o/r/issues/1/comments", json_body={"body": "hi"})
        assert answer.status == 403
        assert [r.method for r in fake_github.requests] == ["POST"]  # asked once, never again
        assert fake_github.comments("o/r", 1) == []
        client.get("/repos/o/r/issues/1")
    assert slept and slept[0] == pytest.approx(7.0, abs=0.5)


def test_an_answer_the_replay_can_never_hold_is_asked_once():
    """503 "not in the recorded history" carries a header: no retry, no back-off sleep."""
    with ReplayGitHub(as_of="2026-01-15", repos=["sgl-project/sglang"]) as gh:
        slept: list[float] = []
        with GitHubClient(gh.url, token="test-token", sleep=slept.append) as client:
            with pytest.raises(GitHubError) as err:
                client.get("/repos/sgl-project/sglang/commits", {"until": "2020-01-01"})
        asked = [r for r in gh.requests if r.path.endswith("/commits")]
    # the record starts in 2025: the page would reach back before it
    assert getattr(err.value, "status", None) == 503
    assert len(asked) == 1 and slept == []


def test_a_passing_503_is_still_retried(fake_github):
    fake_github.add_issue("o/r", 1, title="t")
    fake_github.fail("GET", r"/issues/1$", status=503)
    slept: list[float] = []
    with GitHubClient(fake_github.url, token="test-token", sleep=slept.append) as client:
        assert client.get_json("/repos/o/r/issues/1")["title"] == "t"
    assert len(fake_github.requests) == 2 and slept == [0.5]


def test_the_answer_cache_is_bounded_and_keeps_errors_that_cannot_change(fake_github):
    fake_github.add_issue("o/r", 1, title="t")
    fake_github.add_issue("o/r", 2, title="u")
    with GitHubClient(fake_github.url, token="test-token", answer_cache=1) as client:
        client.get("/repos/o/r/issues/1")
        client.get("/repos/o/r/issues/1")
        assert len(fake_github.requests) == 1 and client.stats.from_cache == 1
        client.get("/repos/o/r/issues/2")  # pushes #1 out (at most one answer kept)
        client.get("/repos/o/r/issues/1")
        assert len(fake_github.requests) == 3
        for _ in range(2):
            with pytest.raises(GitHubError):
                client.get("/repos/o/r/issues/404")
        assert len(fake_github.requests) == 4


def test_serve_waits_as_long_as_github_asks(tmp_path):
    from apscheduler.schedulers.background import BackgroundScheduler  # noqa: F401

    from watcher.config.load import parse_config
    from watcher.loop.schedule import Service

    path = tmp_path / "watch.toml"
    text = f'[watcher]\ndata_dir = "{tmp_path}"\ninterval = "60s"\njitter = "0s"\n'
    path.write_text(text)
    service = Service(parse_config(text, path))
    scheduler = service.build_scheduler()
    service._scheduler = scheduler
    scheduler.start(paused=True)
    try:
        first = scheduler.get_job("cycle").next_run_time
        service.honour_poll_interval(30)  # shorter than the interval: nothing moves
        assert scheduler.get_job("cycle").next_run_time == first
        service.honour_poll_interval(600)
        later = scheduler.get_job("cycle").next_run_time
        assert (later - first).total_seconds() > 500
    finally:
        scheduler.shutdown(wait=False)


def test_compiled_templates_are_kept_in_the_data_folder_and_a_changed_one_is_recompiled(
    tmp_path,
):
    from watcher.config.load import parse_config
    from watcher.publish import page as render

    (tmp_path / "templates").mkdir()
    tpl = tmp_path / "templates" / "probe.md.j2"
    tpl.write_text("one {{ x }}\n")
    path = tmp_path / "watch.toml"
    text = f'[watcher]\ndata_dir = "{tmp_path / "data"}"\n'
    path.write_text(text)
    cfg = parse_config(text, path)
    render._ENVIRONMENTS.clear()  # a fresh process
    (tmp_path / "data").mkdir()  # no cache is made before the data folder exists (a dry run)
    assert render.environment(cfg).get_template("probe.md.j2").render(x=1) == "one 1\n"
    cache = render.template_cache_dir(cfg)
    assert cache is not None and cache.is_relative_to(tmp_path / "data")
    kept = list(cache.glob("__jinja2_*.cache"))
    assert len(kept) == 1
    # Another fresh process loads the compiled code instead of compiling
    render._ENVIRONMENTS.clear()
    env = render.environment(cfg)
    compiled = []
    original = env.compile
    env.compile = lambda *a, **k: compiled.append(a) or original(*a, **k)
    assert env.get_template("probe.md.j2").render(x=2) == "one 2\n"
    assert compiled == []
    # The template changes: the cached code is not used, the new source is compiled
    tpl.write_text("two {{ x }}\n")
    render._ENVIRONMENTS.clear()
    env = render.environment(cfg)
    assert env.get_template("probe.md.j2").render(x=3) == "two 3\n"
    render._ENVIRONMENTS.clear()
    shutil.rmtree(tmp_path / "data")


def test_a_read_only_data_folder_renders_without_a_cache(tmp_path):
    from watcher.config.load import parse_config
    from watcher.publish import page as render

    path = tmp_path / "watch.toml"
    (tmp_path / "data").write_text("not a folder")  # the cache folder cannot be made
    text = f'[watcher]\ndata_dir = "{tmp_path / "data"}"\n'
    path.write_text(text)
    cfg = parse_config(text, path)
    assert render.template_cache_dir(cfg) is None
    render._ENVIRONMENTS.clear()
    assert render.environment(cfg).bytecode_cache is None
    render._ENVIRONMENTS.clear()


def test_fake_events_feed_answers_in_githubs_shape(fake_github):
    """The fake's events feed validates against GitHub's own description (envelope, and each
    payload against the schema its type names: the description's oneOf cannot tell them apart)."""
    import json

    import httpx
    from openapi_schema_validator import OAS30Validator, oas30_format_checker

    spec_path = Path(__file__).parents[1] / "github-api" / "openapi-subset.json"
    op = json.loads(spec_path.read_text())["operations"]["GET /repos/{owner}/{repo}/events"]
    _allow_null_state_reason(op)  # the description's quirk (see tests/fakes/test_fakegithub.py)
    item = op["responses"]["200"]["content"]["application/json"]["schema"]["items"]
    payloads = {p["title"]: p for p in item["properties"]["payload"]["oneOf"]}
    envelope = dict(item, properties=dict(item["properties"], payload={"type": "object"}))
    fake_github.add_commit("o/r", message="x", date="2026-01-01", contents={"a": "1"})
    fake_github.add_issue("o/r", 1, title="t")
    fake_github.add_pull("o/r", 2, title="p")
    fake_github.update("o/r", 2, merged=True)
    fake_github.add_comment("o/r", 1, body="hi")
    fake_github.add_release("o/r", "v1", published_at="2026-01-02")
    fake_github.churn("o/r")
    data = httpx.get(
        f"{fake_github.url}/repos/o/r/events", headers={"Authorization": "Bearer test-token"}
    ).json()
    kinds = {e["type"] for e in data}
    assert {"PushEvent", "IssuesEvent", "PullRequestEvent", "IssueCommentEvent"} <= kinds
    assert {"ReleaseEvent", "CreateEvent", "WatchEvent"} <= kinds
    for event in data:
        for schema, value in ((envelope, event), (payloads[event["type"]], event["payload"])):
            v = OAS30Validator(schema, format_checker=oas30_format_checker)
            errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in v.iter_errors(value)]
            assert not errors, (event["type"], errors[:5])


def _allow_null_state_reason(node: object) -> None:
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
