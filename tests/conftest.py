"""Shared pytest fixtures: the GitHub pacing budget reset per test, the shipped config, a store
and a started fake GitHub (kits/watchtoml.py writes a test's own watch.toml, kits/smokekit.py
runs the fake engine). Folders add their own (tests/notify, tests/poll); helpers that are not
fixtures live in tests/kits/. Also: the order the parallel workers are handed the tests in, and
no orphan left a zombie under a worker."""

import contextlib
import ctypes
import gc
import os
import subprocess
from pathlib import Path

import pytest

from watcher.config.load import load_config
from watcher.fakes.github import FakeGitHub
from watcher.github import pacing
from watcher.smoke import launch
from watcher.store.db import Store


def pytest_collection_modifyitems(config, items):
    """The longest tests first: `slow(seconds=N)` by N, then the rest of `slow`, then all others,
    each in file order. The workers take tests in this order, so a three-minute test handed out
    last would make the whole run wait for it alone. The same order on every worker (xdist
    requires it): a stable sort."""

    def weight(item):
        mark = item.get_closest_marker("slow")
        return 0 if mark is None else mark.kwargs.get("seconds", 1)

    items.sort(key=weight, reverse=True)


@pytest.fixture(autouse=True)
def no_real_registry(monkeypatch):
    """A cycle checks each pinned image on its registry: in tests the public registries are a
    closed loopback port (refused at once, the pin marked stale), never the internet. A test
    that wants a registry maps it to watcher.fakes.registry.FakeRegistry itself."""
    closed = "http://127.0.0.1:9"
    hosts = ("docker.io", "ghcr.io", "quay.io", "nvcr.io", "public.ecr.aws")
    monkeypatch.setenv("WATCHER_REGISTRY_MAP", ",".join(f"{h}={closed}" for h in hosts))


@pytest.fixture(autouse=True)
def fresh_pacing_budget(monkeypatch):
    """Each test starts with the whole minute of GitHub points: the process-wide budget would
    otherwise carry one test's requests into the next, which then waits (correctly) for them."""
    monkeypatch.setattr(pacing, "_SHARED", pacing.Budget())


def _zombie_children() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
            if state == "Z" and int(ppid) == me:
                found.append(int(entry))
    return found


@pytest.fixture(autouse=True)
def no_adopted_zombies():
    """A smoke run in the test process makes it a subreaper (watcher.smoke.launch), for good: every
    orphan of everything later started here (Chromium's crash handler, a fake `docker compose`'s
    container) became its child, exited, and stayed a zombie until the worker ended, minutes
    later. After each test the process stops being one, as a fresh process is, and collects the
    orphans it adopted meanwhile; a child a live Popen still holds is left to its owner."""
    yield
    if launch._subreaper:
        ctypes.CDLL(None, use_errno=True).prctl(launch._PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        launch._subreaper = None
    zombies = _zombie_children() if os.path.isdir("/proc/self") else []
    if zombies:
        held = {p.pid for p in gc.get_objects() if isinstance(p, subprocess.Popen)}
        for pid in set(zombies) - held:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)


@pytest.fixture(scope="session")
def shipped_cfg():
    """The shipped watch.toml, parsed once (Config is frozen)."""
    return load_config(Path(__file__).resolve().parents[1] / "watch.toml")


@pytest.fixture(scope="session")
def cfg(shipped_cfg):
    """A test's config: the shipped one unless its folder or module defines its own `cfg`."""
    return shipped_cfg


@pytest.fixture
def store(tmp_path):
    """A fresh SQLite store where a config with data_dir = "data" keeps it, closed after."""
    s = Store(tmp_path / "data" / "watcher.db")
    yield s
    s.close()


@pytest.fixture
def fake_github():
    """A started fake GitHub on 127.0.0.1 (token "test-token" is watcher-bot), stopped after."""
    with FakeGitHub() as gh:
        yield gh
