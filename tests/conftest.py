"""Shared pytest fixtures."""

import pytest

from watcher.fakes.github import FakeGitHub


@pytest.fixture
def fake_github():
    """A started fake GitHub on 127.0.0.1 (token "test-token" is watcher-bot), stopped after."""
    with FakeGitHub() as gh:
        yield gh
