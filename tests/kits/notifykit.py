"""The notify tests' world: a tracking issue on the fake GitHub, a config with one blocker, one
recipe and one page, a clock that moves only when slept on, and a pacer that records writes."""

import httpx

from watcher.core.clock import parse_iso
from watcher.github.comments import Pacer
from watcher.loop.cycle import run_cycle
from watcher.notify.plan import status_marker

DOCS, ISSUE = "guide/docs", 7
BOT = "watcher-bot"
T0 = parse_iso("2026-11-30T12:00:00Z")

CONFIG = """
[watcher]
data_dir = "data"
site_dir = "site"

[[item]]
id = "fix-pr"
repo = "up/engine"
kind = "pull"
number = 5
label = "the loader fix"

[[blocker]]
id = "crash"
title = "Crash on load"
items = ["fix-pr"]
signatures = ["marlin-tile-n"]

[[recipe]]
id = "r1"
engine = "sglang"
command = ["python", "-m", "engine", "--port", "{port}"]
blockers = ["crash"]

[[page]]
id = "eng"
title = "Engine"
output = "ENGINE.md"
blockers = ["crash"]
recipes = ["r1"]

[notify]
enabled = true
repo = "guide/docs"
issue = 7
"""


class FakeClock:
    """Time that moves only when slept on: spacing is checked without waiting for it."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class RecordingPacer(Pacer):
    def __init__(self, clock: FakeClock, interval: float = 1.0):
        super().__init__(interval, clock=clock.time, sleep=clock.sleep)
        self.write_times: list[float] = []

    def before_write(self) -> None:
        super().before_write()
        self.write_times.append(self.clock())


def cycle(cfg, clock, minutes=0, **kw):
    pacer = RecordingPacer(clock)
    report = run_cycle(
        cfg, now=T0.replace(minute=minutes), notify_kw={"pacer": pacer, **kw}, no_smoke=True
    )
    return report, pacer


def ours(gh, marker):
    return [
        c for c in gh.comments(DOCS, ISSUE) if marker in c["body"] and c["user"]["login"] == BOT
    ]


def tick(gh, text: str) -> None:
    """Tick the box whose line holds `text`, by editing the comment (what GitHub's UI does)."""
    (sticky,) = ours(gh, status_marker("eng"))
    lines = [
        line.replace("- [ ]", "- [x]", 1) if text in line else line
        for line in sticky["body"].split("\n")
    ]
    r = httpx.patch(
        f"{gh.url}/repos/{DOCS}/issues/comments/{sticky['id']}",
        json={"body": "\n".join(lines)},
        headers={"Authorization": "Bearer test-token"},
    )
    assert r.status_code == 200
