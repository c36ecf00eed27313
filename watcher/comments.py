"""The tracking issue's comments on GitHub: list, create, edit, one write at a time.

Only talking: which bodies to post and when is decided in `notify_plan`, and `notify` runs the two.
Writes go through PyGithub with no automatic retry (a duplicate is worse than a late comment), one
at a time, at least `interval` seconds apart, honouring `retry-after`. PyGithub pages through the
listing (100 a page), so a sticky comment is found however long the thread grows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from watcher.errors import GitHubError
from watcher.github import api_base_url

log = logging.getLogger("watcher")

DEFAULT_SECONDARY_WAIT = 60.0  # a secondary rate limit without retry-after: wait at least a minute


@dataclass(frozen=True)
class Comment:
    id: int
    login: str
    body: str
    url: str | None = None


class CommentError(GitHubError):
    """A comment request failed. `rate_limited` with `retry_after` when GitHub asked us to wait."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        *,
        rate_limited: bool = False,
        retry_after: float | None = None,
    ):
        super().__init__(message, status)
        self.rate_limited = rate_limited
        self.retry_after = retry_after


class CommentAPI(Protocol):
    """What notify needs from GitHub; GithubComments is the real one."""

    def login(self) -> str: ...
    def list_comments(self) -> list[Comment]: ...
    def create(self, body: str) -> Comment: ...
    def edit(self, comment_id: int, body: str) -> Comment: ...


def _retry_after(headers: dict[str, Any] | None, now: float) -> float | None:
    h = {str(k).lower(): v for k, v in (headers or {}).items()}
    if h.get("retry-after") is not None:
        try:
            return max(0.0, float(h["retry-after"]))
        except ValueError:
            pass
    if str(h.get("x-ratelimit-remaining")) == "0" and h.get("x-ratelimit-reset"):
        try:
            return max(0.0, float(h["x-ratelimit-reset"]) - now)
        except ValueError:
            pass
    return None


class GithubComments:
    """PyGithub on the same base URL as the reads, with no automatic retry and no hidden sleeps.

    PyGithub's own GithubRetry would retry a POST and may sleep up to an hour on a rate limit;
    `retry=None` turns that off and its request spacing is replaced by notify's Pacer.
    """

    def __init__(
        self,
        repo: str,
        issue: int,
        *,
        token: str,
        base_url: str | None = None,
        timeout: float = 20.0,
        user_agent: str | None = None,
    ):
        import github

        self.repo, self.issue_number = repo, issue
        self.base_url = api_base_url(base_url)
        self._gh = github.Github(
            base_url=self.base_url,
            auth=github.Auth.Token(token),
            timeout=max(1, round(timeout)),  # PyGithub insists on an int
            user_agent=user_agent or "watcher",
            per_page=100,
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,
        )
        self._issue = self._gh.get_repo(repo).get_issue(issue)
        self._login: str | None = None
        self._objects: dict[int, Any] = {}  # comment id -> PyGithub IssueComment, for edits

    def close(self) -> None:
        self._gh.close()

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        import github
        import requests

        try:
            return fn()
        except github.GithubException as e:
            message = (e.data or {}).get("message") if isinstance(e.data, dict) else None
            status = e.status
            headers = e.headers or {}
            lower = {str(k).lower(): v for k, v in headers.items()}
            rate_limited = (
                isinstance(e, github.RateLimitExceededException)
                or status == 429
                or (
                    status == 403
                    and ("retry-after" in lower or lower.get("x-ratelimit-remaining") == "0")
                )
            )
            raise CommentError(
                f"{what}: HTTP {status}: {message or e}",
                status,
                rate_limited=rate_limited,
                retry_after=_retry_after(headers, time.time()),
            ) from None
        except requests.RequestException as e:
            raise CommentError(f"{what}: {type(e).__name__}: {e}") from None

    def _comment(self, c: Any) -> Comment:
        self._objects[c.id] = c
        return Comment(
            id=c.id, login=c.user.login if c.user else "", body=c.body or "", url=c.html_url
        )

    def login(self) -> str:
        if self._login is None:
            self._login = self._call("GET /user", lambda: self._gh.get_user().login)
        return self._login

    def list_comments(self) -> list[Comment]:
        where = f"GET {self.repo}#{self.issue_number} comments"
        return self._call(where, lambda: [self._comment(c) for c in self._issue.get_comments()])

    def create(self, body: str) -> Comment:
        where = f"POST {self.repo}#{self.issue_number} comment"
        return self._comment(self._call(where, lambda: self._issue.create_comment(body)))

    def edit(self, comment_id: int, body: str) -> Comment:
        obj = self._objects.get(comment_id)
        if obj is None:
            raise CommentError(f"comment {comment_id} was not in the listing; not editing it")
        self._call(f"PATCH comment {comment_id}", lambda: obj.edit(body))
        return self._comment(obj)


class Pacer:
    """Writes one at a time, at least `interval` seconds apart (GitHub's rule for content writes).

    `clock` and `sleep` are injectable so tests run fast and still check the spacing.
    """

    def __init__(
        self,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.interval = interval
        self.clock = clock
        self.sleep = sleep
        self._last: float | None = None

    def before_write(self) -> None:
        if self._last is not None:
            gap = self.clock() - self._last
            if gap < self.interval:
                self.sleep(self.interval - gap)

    def after_write(self) -> None:
        self._last = self.clock()


class WritesPaused(Exception):
    """GitHub asked us to wait longer than we may in one cycle: stop writing until `until`."""

    def __init__(self, until: datetime, reason: str):
        super().__init__(reason)
        self.until = until
        self.reason = reason


def paced_write(fn: Callable[[], Comment], pacer: Pacer, max_wait: float, now: datetime) -> Comment:
    """One write, spaced; on a rate limit wait as asked (bounded by `max_wait`) and try once more.

    A longer wait raises WritesPaused with the time writes may resume, counted from `now`.
    """
    for attempt in (1, 2):
        pacer.before_write()
        try:
            comment = fn()
        except CommentError as e:
            pacer.after_write()
            if not e.rate_limited:
                raise
            wait = e.retry_after if e.retry_after is not None else DEFAULT_SECONDARY_WAIT
            if attempt == 1 and wait <= max_wait:
                log.warning("notify: %s; waiting %.0f s as GitHub asked", e, wait)
                pacer.sleep(wait)
                continue
            raise WritesPaused(now + timedelta(seconds=max(wait, 1.0)), str(e)) from None
        pacer.after_write()
        return comment
    raise AssertionError("unreachable")
