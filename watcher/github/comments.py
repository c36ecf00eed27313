"""The tracking issue's comments on GitHub: list, create, edit, one write at a time.

Only talking: which bodies to post and when is decided in `notify_plan`, and `notify` runs the two.
Writes go through PyGithub with no automatic retry (a duplicate is worse than a late comment), one
at a time, at least `interval` seconds apart, honouring `retry-after`; only a 201 (an edit: 200)
whose answer carries a comment id counts as written, so a redirect or an empty answer leaves the
event in the outbox. The listing goes through watcher's own GitHubClient (100 a page, up to
MAX_COMMENT_PAGES, a next link back to a page already read or off the API's origin is an error),
so a sticky comment is found however long the thread grows, and a looping Link cannot spin.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from watcher.core.errors import GitHubError
from watcher.github.answers import COMMENT, check

log = logging.getLogger("watcher")

DEFAULT_SECONDARY_WAIT = 60.0  # a secondary rate limit without retry-after: wait at least a minute
MAX_COMMENT_PAGES = 100  # 10,000 comments
# Who posts with an installation token (GitHub Actions' GITHUB_TOKEN), which may not read /user
ACTIONS_LOGIN = "github-actions[bot]"
MAX_LISTING_S = 120.0  # no new page of the listing asked after this (each page has its own timeout)


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
    def permission(self, login: str) -> str: ...


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

        from watcher.github.client import GitHubClient, api_base_url

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
        self._repo = self._gh.get_repo(repo)
        self._issue = self._repo.get_issue(issue)
        self._reader = GitHubClient(
            self.base_url,
            token=token,
            timeout=timeout,
            user_agent=user_agent,
            retries=0,
            max_rate_limit_wait=0,  # a rate limit pauses notify's writes instead
        )
        self._login: str | None = None
        self._listed: set[int] = set()  # only a comment seen in the listing is ever edited

    def close(self) -> None:
        self._gh.close()
        self._reader.close()

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        import github
        import requests

        from watcher.github.client import public_url

        try:
            return fn()
        except github.GithubException as e:
            message = (e.data or {}).get("message") if isinstance(e.data, dict) else None
            raise _error(what, e.status, e.headers, message or str(e)) from None
        except requests.RequestException as e:
            raise CommentError(f"{what}: {type(e).__name__}: {e}") from None
        except RuntimeError as e:  # PyGithub refuses a 301 to another host or scheme this way
            raise CommentError(f"{what}: {public_url(str(e)) or type(e).__name__}") from None

    def login(self) -> str:
        """The token's login (GET /user); an installation token such as the Actions
        GITHUB_TOKEN is refused there with a 403, and its comments carry ACTIONS_LOGIN."""
        if self._login is None:
            try:
                self._login = self._call("GET /user", lambda: self._gh.get_user().login)
            except CommentError as e:
                if e.status != 403 or e.rate_limited:
                    raise
                self._login = ACTIONS_LOGIN
        return self._login

    def list_comments(self) -> list[Comment]:
        where = f"GET {self.repo}#{self.issue_number} comments"
        path = f"/repos/{self.repo}/issues/{self.issue_number}/comments"
        try:
            raw = self._reader.paginate(
                path, {"per_page": 100}, max_pages=MAX_COMMENT_PAGES, within=MAX_LISTING_S
            )
        except GitHubError as e:
            shown = f" ({e.url})" if e.url else ""
            raise CommentError(
                f"{where}: {e}{shown}",
                e.status,
                rate_limited=e.retry_after is not None,
                retry_after=e.retry_after,
            ) from None
        comments = [_comment(c) for c in raw]
        self._listed.update(c.id for c in comments)
        return comments

    def _write(self, what: str, verb: str, url: str, body: str, wanted: int) -> Comment:
        """One write; anything but `wanted` with a comment id in the answer is an error."""
        from watcher.github.client import public_url

        status, headers, output = self._call(
            what, lambda: self._gh.requester.requestJson(verb, url, input={"body": body})
        )
        try:
            data = json.loads(output) if output else None
        except ValueError:
            data = None
        if status >= 400:
            message = data.get("message") if isinstance(data, dict) else None
            raise _error(what, status, headers, message or "")
        try:
            if status != wanted:
                raise GitHubError("wrong status")
            return _comment(check(data, COMMENT))
        except GitHubError:
            where = {str(k).lower(): v for k, v in (headers or {}).items()}.get("location")
            moved = f" (redirect to {public_url(where)})" if where else ""
            raise CommentError(
                f"{what}: HTTP {status}{moved} without a comment id; not counted as written",
                status,
            ) from None

    def create(self, body: str) -> Comment:
        where = f"POST {self.repo}#{self.issue_number} comment"
        return self._write(where, "POST", f"{self._issue.url}/comments", body, 201)

    def edit(self, comment_id: int, body: str) -> Comment:
        if comment_id not in self._listed:
            raise CommentError(f"comment {comment_id} was not in the listing; not editing it")
        url = f"{self.base_url}/repos/{self.repo}/issues/comments/{int(comment_id)}"
        return self._write(f"PATCH comment {comment_id}", "PATCH", url, body, 200)

    def permission(self, login: str) -> str:
        """A user's permission on the repository, as GitHub says it (admin, maintain, write,
        triage, read or none): GET /repos/{owner}/{repo}/collaborators/{user}/permission."""
        where = f"GET {self.repo} permission of {login}"
        return self._call(where, lambda: self._repo.get_collaborator_permission(login))


def _comment(data: dict[str, Any]) -> Comment:
    user = data.get("user") or {}
    return Comment(
        id=data["id"],
        login=user.get("login") or "",
        body=data.get("body") or "",
        url=data.get("html_url"),
    )


def _error(what: str, status: int | None, headers: Any, message: str) -> CommentError:
    """A refused request as one line; `rate_limited` when GitHub asked us to wait."""
    headers = dict(headers or {})
    lower = {str(k).lower(): v for k, v in headers.items()}
    rate_limited = status == 429 or (
        status == 403
        and (
            "retry-after" in lower
            or lower.get("x-ratelimit-remaining") == "0"
            or "rate limit" in message.lower()
        )
    )
    return CommentError(
        f"{what}: HTTP {status}: {message[:200]}",
        status,
        rate_limited=rate_limited,
        retry_after=_retry_after(headers, time.time()),
    )


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
