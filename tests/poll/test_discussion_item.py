"""A discussion as an item (a tracker row's discussion link): GitHub serves discussions through
GraphQL only, so it is read by POST /graphql; its state words; what does not exist is an error,
never a state; the GraphQL endpoint beside GitHub Enterprise's REST base."""

from __future__ import annotations

import pytest

from watcher.config.model import Item
from watcher.core.errors import GitHubError
from watcher.github.client import GitHubClient
from watcher.judge.states import item_satisfied
from watcher.poll.poller import Poller

REPO = "sgl-project/sglang"


def read(gh, number, repo=REPO):
    it = Item(id="d", repo=repo, kind="discussion", number=number)
    with GitHubClient(gh.url, token="test-token", retries=1, sleep=lambda s: None) as client:
        obs = Poller(client).poll(it)
        return obs, client.stats.requests, it


@pytest.mark.parametrize(
    ("fields", "state", "counts"),
    [
        ({}, "open", False),
        ({"answered": True}, "answered", False),
        ({"closed": True, "closed_at": "2026-07-01T00:00:00Z"}, "resolved", True),
        ({"closed": True, "state_reason": "OUTDATED", "closed_at": "2026-07-01"}, "closed", False),
    ],
)
def test_discussion_states(gh, fields, state, counts):
    gh.add_discussion(REPO, 8123, title="Layer capture for Qwen3.6", **fields)
    obs, requests, it = read(gh, 8123)
    assert (obs.state, obs.title, obs.error) == (state, "Layer capture for Qwen3.6", None)
    assert obs.url == f"https://github.com/{REPO}/discussions/8123" and requests == 1
    assert item_satisfied(it, {"state": obs.state}) is counts
    if fields.get("closed"):
        assert obs.updated_at.startswith("2026-07-01")


def test_what_does_not_exist_is_an_error_not_a_state(gh):
    gh.add_discussion(REPO, 1, title="one")
    obs, _, _ = read(gh, 2)
    assert obs.state is None and obs.error.startswith("HTTP 404 GraphQL: Could not resolve")
    obs, _, _ = read(gh, 1, repo="nobody/nothing")
    assert obs.state is None and "HTTP 404" in obs.error


def test_graphql_needs_a_token(gh):
    gh.add_discussion(REPO, 1, title="one")
    it = Item(id="d", repo=REPO, kind="discussion", number=1)
    with GitHubClient(gh.url, token="", retries=1, sleep=lambda s: None) as client:
        obs = Poller(client).poll(it)
    assert obs.state is None and obs.error.startswith("HTTP 401")


@pytest.mark.parametrize(
    ("base", "graphql"),
    [
        ("https://api.github.com", "https://api.github.com/graphql"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"),
    ],
)
def test_the_graphql_endpoint_beside_the_rest_base(base, graphql):
    with GitHubClient(base, token="t") as client:
        assert client.graphql_url() == graphql
        assert client.url(graphql) == graphql  # beside the REST prefix, and allowed
        if "/api/v3" in base:  # nothing else outside the REST prefix
            with pytest.raises(GitHubError, match="off the API's origin"):
                client.url(graphql.replace("graphql", "other"))


def test_a_graphql_query_is_paced_as_one_point_and_creates_nothing(gh):
    from watcher.github.pacing import Budget

    gh.add_discussion(REPO, 1, title="one")
    budget = Budget()
    it = Item(id="d", repo=REPO, kind="discussion", number=1)
    with GitHubClient(gh.url, token="test-token", budget=budget, sleep=lambda s: None) as client:
        assert Poller(client).poll(it).state == "open"
    assert budget.used() == 1  # a write costs 5
