"""Pacing under GitHub's secondary rate limits: a per-minute budget of points the client keeps.

GitHub documents (REST, "secondary rate limits"): no more than 900 points per minute, where a
GET, HEAD or OPTIONS costs 1 point and a POST, PATCH, PUT or DELETE costs 5; and no more than 80
content-creating requests per minute. A 304 is free of the primary limit but is still a request,
so it counts here. At 1,000 items over 20 repositories, 8 reads at a time, a cycle would pass
900/min without pacing; `Budget.take` makes the caller wait until the last minute leaves room.

One Budget per process by default (`shared_budget`): the cycle's client, the backtest's client and
a dispatch share it, so two clients in one process cannot spend the minute twice.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

WINDOW_S = 60.0
POINTS_PER_MINUTE = 900
CONTENT_PER_MINUTE = 80
WRITE_METHODS = {"POST", "PATCH", "PUT", "DELETE"}


def points(method: str) -> int:
    return 5 if method.upper() in WRITE_METHODS else 1


class Budget:
    """A sliding one-minute window of points spent; thread-safe.

    `take(method)` returns the seconds it waited (0.0 when the minute had room). `clock` and
    `sleep` are injectable so tests can drive a minute without waiting one.
    """

    def __init__(
        self,
        points_per_minute: int = POINTS_PER_MINUTE,
        content_per_minute: int = CONTENT_PER_MINUTE,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.points_per_minute = points_per_minute
        self.content_per_minute = content_per_minute
        self._clock, self._sleep = clock, sleep
        self._spent: deque[tuple[float, int]] = deque()  # (when, points)
        self._content: deque[float] = deque()  # when each content-creating request went
        self._lock = threading.Lock()
        self.waited_s = 0.0

    def _expire(self, now: float) -> None:
        while self._spent and self._spent[0][0] <= now - WINDOW_S:
            self._spent.popleft()
        while self._content and self._content[0] <= now - WINDOW_S:
            self._content.popleft()

    def used(self) -> int:
        """Points spent in the last minute."""
        with self._lock:
            self._expire(self._clock())
            return sum(p for _, p in self._spent)

    def take(self, method: str, *, content: bool | None = None) -> float:
        """Spend the points of one request, first waiting until the last minute has room.

        `content` (default: the method is a POST) counts the request against the 80
        content-creating requests a minute as well.
        """
        cost = points(method)
        creates = method.upper() == "POST" if content is None else content
        waited = 0.0
        while True:
            with self._lock:
                now = self._clock()
                self._expire(now)
                wait = 0.0
                total = sum(p for _, p in self._spent)
                if total + cost > self.points_per_minute and self._spent:
                    # wait until enough of the oldest points leave the window
                    room, need = total + cost - self.points_per_minute, 0
                    for when, p in self._spent:
                        need += p
                        if need >= room:
                            wait = when + WINDOW_S - now
                            break
                if creates and len(self._content) >= self.content_per_minute:
                    k = len(self._content) - self.content_per_minute
                    wait = max(wait, self._content[k] + WINDOW_S - now)
                if wait <= 0:
                    self._spent.append((now, cost))
                    if creates:
                        self._content.append(now)
                    self.waited_s += waited
                    return waited
            self._sleep(wait)
            waited += wait


_SHARED = Budget()


def shared_budget() -> Budget:
    """The process's budget: every GitHubClient uses it unless given its own."""
    return _SHARED
