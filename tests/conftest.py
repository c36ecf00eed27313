"""Shared pytest fixtures: the GitHub pacing budget reset per test, the shipped config, and a
started fake GitHub. Folders add their own (tests/notify, tests/poll); helpers that are not
fixtures live in tests/kits/."""

from pathlib import Path

import pytest

from watcher.config.load import load_config
from watcher.fakes.github import FakeGitHub
from watcher.github import pacing


@pytest.fixture(autouse=True)
def fresh_pacing_budget(monkeypatch):
    """Each test starts with the whole minute of GitHub points: the process-wide budget would
    otherwise carry one test's requests into the next, which then waits (correctly) for them."""
    monkeypatch.setattr(pacing, "_SHARED", pacing.Budget())


@pytest.fixture(scope="session")
def shipped_cfg():
    """The shipped watch.toml, parsed once (Config is frozen)."""
    return load_config(Path(__file__).resolve().parents[1] / "watch.toml")


@pytest.fixture(scope="session")
def cfg(shipped_cfg):
    """A test's config: the shipped one unless its folder or module defines its own `cfg`."""
    return shipped_cfg


@pytest.fixture
def fake_github():
    """A started fake GitHub on 127.0.0.1 (token "test-token" is watcher-bot), stopped after."""
    with FakeGitHub() as gh:
        yield gh
