"""The GitHub read path: conditional requests, Link pagination, polite rate-limit handling.

Every GET sends If-None-Match when an ETag is known; a 304 answers from the stored body and, when
authorized, costs no rate limit. Errors raise GitHubError: the caller keeps the item's last state
and marks it stale. Only idempotent GETs are ever retried.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from watcher import __version__
from watcher.config import DEFAULT_API_URL
from watcher.errors import GitHubError
from watcher.store import iso, utcnow

_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="([^"]+)"')
TRANSIENT = {500, 502, 503, 504}


def api_base_url(config_url: str | None = None) -> str:
    """GITHUB_API_URL (set by GitHub Actions) wins, then the config, then api.github.com."""
    return (os.environ.get("GITHUB_API_URL") or config_url or DEFAULT_API_URL).rstrip("/")


def parse_link(header: str | None) -> dict[str, str]:
    """`<url>; rel="next", <url>; rel="last"` -> {"next": url, "last": url}."""
    return {rel: url for url, rel in _LINK.findall(header or "")}


@dataclass
class Stats:
    """What one cycle spent: the numbers that go into the cycles table and the log line."""

    requests: int = 0
    not_modified: int = 0
    errors: int = 0
    rate_limit: int | None = None
    rate_remaining: int | None = None
    rate_reset: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "not_modified": self.not_modified,
            "errors": self.errors,
            "rate_limit": self.rate_limit,
            "rate_remaining": self.rate_remaining,
            "rate_reset": self.rate_reset,
        }


@dataclass
class Page:
    """One answer: its JSON, whether it came from the cache (304), and its final URL."""

    data: Any
    url: str
    not_modified: bool
    links: dict[str, str]


class GitHubClient:
    """httpx-based reader shared by the poll threads. Thread-safe; holds the ETag cache in memory.

    `etags` is the store's table as a dict; new entries accumulate in `etag_updates` so the
    caller can save them in the same transaction as the states they produced.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        token: str | None = None,
        etags: dict[str, dict[str, Any]] | None = None,
        timeout: float = 20.0,
        max_rate_limit_wait: float = 120.0,
        retries: int = 1,
        user_agent: str | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep=time.sleep,
    ):
        self.base_url = api_base_url(base_url)
        self.token = token if token is not None else os.environ.get("GITHUB_TOKEN") or None
        self.etags = dict(etags or {})
        self.etag_updates: dict[str, dict[str, Any]] = {}
        self.stats = Stats()
        self.max_rate_limit_wait = max_rate_limit_wait
        self.retries = retries
        self._sleep = sleep
        self._lock = threading.Lock()
        self._blocked_until = 0.0  # a rate limit seen by one thread pauses them all
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": user_agent or f"watcher/{__version__}",
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        self.http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout),
            follow_redirects=True,
            transport=transport,
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=16),
        )

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def url(self, path: str) -> str:
        return path if path.startswith(("http://", "https://")) else f"{self.base_url}{path}"

    # -------------------------------------------------------------- core GET

    def get(self, path: str, params: dict[str, Any] | None = None) -> Page:
        """One conditional GET. Raises GitHubError; never returns an error as data."""
        url = str(httpx.URL(self.url(path), params=params)) if params else self.url(path)
        cached = self.etags.get(url) or self.etag_updates.get(url)
        attempt = 0
        while True:
            self._wait_if_blocked(url)
            headers = {}
            if cached and cached.get("etag") and cached.get("body") is not None:
                headers["If-None-Match"] = cached["etag"]
            try:
                resp = self.http.get(url, headers=headers)
            except httpx.TimeoutException as e:
                err = GitHubError(
                    f"timeout after {self.http.timeout.read}s: {type(e).__name__}", url=url
                )
            except httpx.TransportError as e:
                err = GitHubError(f"connection failed: {type(e).__name__}: {e}", url=url)
            else:
                self._count(resp)
                err = None
                if resp.status_code == 304 and cached:
                    with self.stats.lock:
                        self.stats.not_modified += 1
                    return Page(
                        json.loads(cached["body"]),
                        url,
                        True,
                        json.loads(cached.get("link") or "{}"),
                    )
                if resp.status_code == 200:
                    return self._accept(url, resp)
                wait = self._rate_limit_wait(resp)
                if wait is not None:
                    if wait > self.max_rate_limit_wait or attempt >= self.retries + 1:
                        self._block(wait)
                        raise self._error(resp, url, f"rate limited; retry in {int(wait)} s")
                    self._block(wait)
                    attempt += 1
                    continue
                if resp.status_code not in TRANSIENT:
                    raise self._error(resp, url)
                err = self._error(resp, url)
            if attempt >= self.retries:
                with self.stats.lock:
                    self.stats.errors += 1
                raise err
            attempt += 1
            self._sleep(min(0.5 * attempt, 2.0))

    def _accept(self, url: str, resp: httpx.Response) -> Page:
        try:
            data = resp.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            with self.stats.lock:
                self.stats.errors += 1
            raise GitHubError(
                f"bad JSON from GitHub: {e}", status=resp.status_code, url=url
            ) from None
        links = parse_link(resp.headers.get("link"))
        final = str(resp.url)
        if resp.headers.get("etag"):
            entry = {
                "etag": resp.headers["etag"],
                "last_modified": resp.headers.get("last-modified"),
                "body": resp.text,
                "link": json.dumps(links, sort_keys=True),
                "fetched_at": iso(utcnow()),
            }
            with self._lock:
                self.etag_updates[url] = entry
        return Page(data, final, False, links)

    def _count(self, resp: httpx.Response) -> None:
        h = resp.headers
        with self.stats.lock:
            self.stats.requests += 1
            for attr, name in (
                ("rate_limit", "x-ratelimit-limit"),
                ("rate_remaining", "x-ratelimit-remaining"),
                ("rate_reset", "x-ratelimit-reset"),
            ):
                if h.get(name, "").isdigit():
                    value = int(h[name])
                    if attr == "rate_remaining" and self.stats.rate_remaining is not None:
                        value = (
                            min(value, self.stats.rate_remaining)
                            if resp.status_code != 304
                            else value
                        )
                    setattr(self.stats, attr, value)

    def _rate_limit_wait(self, resp: httpx.Response) -> float | None:
        """Seconds to wait if this response is a primary or secondary rate limit, else None."""
        if resp.status_code not in (403, 429):
            return None
        h = resp.headers
        if h.get("retry-after", "").strip().isdigit():
            return float(h["retry-after"])
        if h.get("x-ratelimit-remaining") == "0" and h.get("x-ratelimit-reset", "").isdigit():
            return max(0.0, int(h["x-ratelimit-reset"]) - time.time()) + 1
        text = resp.text.lower()
        if "secondary rate limit" in text or "abuse" in text:
            return 60.0  # GitHub: wait at least a minute when it does not say how long
        if resp.status_code == 429:
            return 60.0
        return None

    def _block(self, seconds: float) -> None:
        with self._lock:
            self._blocked_until = max(self._blocked_until, time.monotonic() + seconds)

    def _wait_if_blocked(self, url: str) -> None:
        with self._lock:
            remaining = self._blocked_until - time.monotonic()
        if remaining <= 0:
            return
        if remaining > self.max_rate_limit_wait:
            with self.stats.lock:
                self.stats.errors += 1
            raise GitHubError(f"rate limited; retry in {int(remaining)} s", status=403, url=url)
        self._sleep(remaining)

    def _error(self, resp: httpx.Response, url: str, prefix: str | None = None) -> GitHubError:
        try:
            message = resp.json().get("message", "")
        except (ValueError, AttributeError):
            message = resp.text[:200]
        text = f"HTTP {resp.status_code}" + (f": {message}" if message else "")
        if prefix:
            text = f"{prefix} ({text})"
        return GitHubError(text, status=resp.status_code, url=url)

    # -------------------------------------------------------------- helpers

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self.get(path, params).data

    def paginate(
        self, path: str, params: dict[str, Any] | None = None, max_pages: int = 10
    ) -> list[Any]:
        """All items across pages, following Link rel="next" (never building page URLs)."""
        page = self.get(path, params)
        out = list(page.data)
        pages = 1
        while "next" in page.links and pages < max_pages:
            page = self.get(page.links["next"])
            out.extend(page.data)
            pages += 1
        return out

    def repo_path(self, repo: str) -> str:
        return f"/repos/{repo}"

    def moved(self, requested: str, final: str) -> bool:
        """A 301 (a transferred issue) ends at another path: record the new location."""
        return urlsplit(requested).path != urlsplit(final).path
