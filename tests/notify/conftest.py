"""The notify tests' fixtures: nothing reaches past 127.0.0.1, the tracking issue and the fix
pull on the fake GitHub (`gh`), and the config of kits.notifykit (`cfg`)."""

import socket

import pytest
from kits.notifykit import CONFIG, DOCS, ISSUE
from kits.watchtoml import load_watch


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    """No test here may reach past 127.0.0.1, whatever library opens the socket."""
    real_connect = socket.socket.connect

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
            assert host in ("127.0.0.1", "localhost", "::1"), f"refused non-loopback {host}"
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture
def gh(fake_github, monkeypatch):
    monkeypatch.setenv("GITHUB_API_URL", fake_github.url)
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    fake_github.add_issue(DOCS, ISSUE, title="SGLang on 3090s: tracking")
    fake_github.add_pull("up/engine", 5, title="Fix the loader pad")
    return fake_github


@pytest.fixture
def cfg(tmp_path):
    return load_watch(tmp_path, CONFIG)
