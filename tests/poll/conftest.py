"""The poll tests' fake GitHub, as `gh`: started empty on 127.0.0.1, each test seeds its own
repositories (test_trust.py seeds a pull first and has its own)."""

import pytest


@pytest.fixture
def gh(fake_github):
    return fake_github
