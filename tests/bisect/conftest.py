"""Every bisect test checks its builds on a fake registry, as `watcher bisect` does on Docker Hub."""

from __future__ import annotations

import pytest
from kits.bisectkit import published


@pytest.fixture(autouse=True)
def registry(monkeypatch):
    with published(monkeypatch) as reg:
        yield reg
