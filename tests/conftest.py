"""Shared pytest fixtures."""

import pytest

from watcher.fakes.github import FakeGitHub
from watcher.github import pacing


@pytest.fixture(autouse=True)
def fresh_pacing_budget(monkeypatch):
    """Each test starts with the whole minute of GitHub points: the process-wide budget would
    otherwise carry one test's requests into the next, which then waits (correctly) for them."""
    monkeypatch.setattr(pacing, "_SHARED", pacing.Budget())


@pytest.fixture
def fake_github():
    """A started fake GitHub on 127.0.0.1 (token "test-token" is watcher-bot), stopped after."""
    with FakeGitHub() as gh:
        yield gh
