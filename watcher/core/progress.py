"""Progress for long waits on stderr: a smoke run's readiness wait, a backtest over many dates.

On a terminal one line is rewritten in place (phase, elapsed time, deadline, the last log line);
anywhere else (a CI log, a pipe) a plain line is printed every `every` seconds, so a 15-minute
startup is never a silent 15 minutes. Nothing goes to stdout: data stays clean for scripts.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

EVERY_S = 30.0  # a line this often when stderr is not a terminal
TTY_EVERY_S = 0.5


def clock(seconds: float) -> str:
    """'4:05' (minutes:seconds), '1:02:03' past an hour."""
    s = max(0, int(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """One long wait. `update(phase, last_line)` as often as you like; it decides when to say."""

    def __init__(
        self,
        label: str,
        *,
        deadline_s: float | None = None,
        stream: TextIO | None = None,
        every: float = EVERY_S,
        tty: bool | None = None,
        now=time.monotonic,
    ):
        self.label, self.deadline_s, self.every, self.now = label, deadline_s, every, now
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.started = now()
        self._said = self.started  # nothing before the first interval: short waits stay quiet
        self._width = 0

    def line(self, phase: str, last_line: str | None = None) -> str:
        elapsed = self.now() - self.started
        parts = [f"{self.label}: {phase}", clock(elapsed)]
        if self.deadline_s:
            parts[-1] += f" of {clock(self.deadline_s)}"
        text = ", ".join(parts)
        if last_line:
            text += f" — {' '.join(last_line.split())[:120]}"
        return text

    def update(self, phase: str, last_line: str | None = None) -> bool:
        """Say where the wait is if it is time to; True when a line was written."""
        t = self.now()
        if t - self._said < (TTY_EVERY_S if self.tty else self.every):
            return False
        self._said = t
        text = self.line(phase, last_line)
        if self.tty:
            pad = " " * max(0, self._width - len(text))
            self.stream.write(f"\r{text}{pad}")
            self._width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        return True

    def done(self) -> None:
        """End the rewritten line (a terminal), so what follows starts on a line of its own."""
        if self.tty and self._width:
            self.stream.write("\n")
            self.stream.flush()
            self._width = 0
