"""The GitHub transport: conditional requests, Link pagination, polite rate limits, hard limits.

Every GET sends If-None-Match when an ETag is known; a 304 answers from the stored body and, when
authorized, costs no rate limit. Errors raise GitHubError: the caller keeps the item's last state
and marks it stale. Only idempotent GETs are ever retried.

What a hostile or broken server can do is bounded here, once, for every caller:

- the token goes only to the API's own origin (scheme, host, port and the Enterprise path
  prefix): a Link or redirect elsewhere is refused; an artifact's storage redirect is fetched
  without it, as GitHub documents;
- each request has a total deadline (not a per-read timeout), and the cycle may set an overall
  one after which nothing more is asked;
- bodies are streamed and cut at `max_body_bytes`;
- answers are cleaned and checked against the shape their endpoint promises (watcher.github.answers);
- credentials in `GITHUB_API_URL` (user:pass@host) never appear in an error, a log or a URL
  handed back.

Why one file of ~600 lines: the transport's limits (origin, deadline, size, pagination, rate
limits) must hold for every caller, so they are enforced in one place.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpcore
import httpx

from watcher import __version__
from watcher.config.model import DEFAULT_API_URL, Config
from watcher.core.clock import iso, utcnow
from watcher.core.errors import GitHubError
from watcher.core.token import github_token
from watcher.github.answers import BadAnswer, check, clean, keep_for, kept, spec_for
from watcher.github.pacing import WRITE_METHODS, Budget, shared_budget

_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="([^"]+)"')
TRANSIENT = {500, 502, 503, 504}
REDIRECTS = {301, 302, 303, 307, 308}
MAX_BODY_BYTES = 10 * 1024 * 1024  # GitHub's largest JSON answers are a few MB
MAX_ERROR_BYTES = 64 * 1024  # of an error answer, only the message is wanted
MAX_REDIRECTS = 5
MAX_PAGES = 10
MEMO = "memo:"  # etag-cache keys that hold what the poller remembers, not a URL's answer
# A 5xx carrying this header says the answer can never be had (the replay of recorded history
# lacks the object): asking again is pointless, so it is not retried.
NEVER_HEADER = "x-watcher-never"
MAX_READ_BYTES = 64 * 1024 * 1024  # the pages of one paginated read, together
MAX_CYCLE_BYTES = 512 * 1024 * 1024  # every answer of one client (one cycle), together


def api_base_url(config_url: str | None = None) -> str:
    """GITHUB_API_URL (set by GitHub Actions) wins, then the config, then api.github.com."""
    return (os.environ.get("GITHUB_API_URL") or config_url or DEFAULT_API_URL).rstrip("/")


def public_url(url: str | None) -> str | None:
    """The URL without user:pass@ (what may be shown: status.json, pages, logs, errors)."""
    if not url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def _origin(url: str | httpx.URL) -> tuple[str, str, int]:
    u = httpx.URL(url)
    return u.scheme, u.host, u.port or {"https": 443, "http": 80}.get(u.scheme, 0)


def same_origin(url: str | httpx.URL, base: str) -> bool:
    """On the API's own origin: same scheme, host and port, and under its path prefix."""
    if _origin(url) != _origin(base):
        return False
    prefix = httpx.URL(base).path.rstrip("/")
    path = httpx.URL(url).path
    return not prefix or path == prefix or path.startswith(prefix + "/")


def _poll_interval(resp: Answer) -> int | None:
    value = resp.headers.get("x-poll-interval", "").strip()
    return int(value) if value.isdigit() else None


def parse_link(header: str | None) -> dict[str, str]:
    """`<url>; rel="next", <url>; rel="last"` -> {"next": url, "last": url}."""
    return {rel: url for url, rel in _LINK.findall(header or "")}


class Unanswered(GitHubError):
    """No answer at all (timeout, deadline, connection): the one kind of failure worth a retry."""


class _Deadline(threading.local):
    """The monotonic time by which the current thread's request must be over (None: no limit)."""

    at: float | None = None

    def left(self, timeout: float | None, error: type[Exception]) -> float | None:
        if self.at is None:
            return timeout
        left = self.at - time.monotonic()
        if left <= 0:
            raise error("the request's deadline passed")
        return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket whose every read, write and handshake waits no longer than the deadline left."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: _Deadline):
        self._inner, self._deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        left = self._deadline.left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._inner.start_tls(ssl_context, server_hostname, left), self._deadline
        )

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, deadline: _Deadline):
        self._inner = httpcore.SyncBackend()
        self._deadline = deadline

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        left = self._deadline.left(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, left, local_address, socket_options)
        return _DeadlineStream(stream, self._deadline)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        left = self._deadline.left(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_unix_socket(path, left, socket_options)
        return _DeadlineStream(stream, self._deadline)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _install_deadline(client: httpx.Client, deadline: _Deadline) -> bool:
    """Put the deadline under every transport of `client` (its proxies too).

    httpx times out per read only, so a server sending one byte every few seconds would hold a
    request forever; the deadline is enforced at the socket instead. False if this httpx/httpcore
    no longer has the pool attribute (the body loop still checks the deadline between chunks).
    """
    installed = False
    for transport in (client._transport, *client._mounts.values()):
        pool = getattr(transport, "_pool", None)
        if pool is not None and hasattr(pool, "_network_backend"):
            pool._network_backend = _DeadlineBackend(deadline)
            installed = True
    return installed


@dataclass
class Stats:
    """What one cycle spent: the numbers that go into the cycles table and the log line."""

    requests: int = 0
    not_modified: int = 0
    errors: int = 0
    rate_limit: int | None = None
    rate_remaining: int | None = None
    rate_reset: int | None = None
    from_cache: int = 0  # answered from the cache without asking (nothing watched changed)
    poll_interval: int | None = None  # the largest X-Poll-Interval GitHub sent
    paced_s: float = 0.0  # waited for the per-minute budget (secondary limits)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "not_modified": self.not_modified,
            "errors": self.errors,
            "rate_limit": self.rate_limit,
            "rate_remaining": self.rate_remaining,
            "rate_reset": self.rate_reset,
            "from_cache": self.from_cache,
            "poll_interval": self.poll_interval,
            "paced_s": round(self.paced_s, 3),
        }


@dataclass
class Page:
    """One answer: its JSON, whether it came from the cache (304), and its final URL."""

    data: Any
    url: str
    not_modified: bool
    links: dict[str, str]
    poll_interval: int | None = None  # X-Poll-Interval, where GitHub sent one
    size: int = 0  # bytes of JSON behind `data` (the answer, or the cached body on a 304)


@dataclass
class Answer:
    """One HTTP answer, read in full (within the size cap) before the connection went back."""

    status: int
    headers: httpx.Headers
    content: bytes
    url: str  # the final URL, credentials stripped

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


def has_body(entry: dict[str, Any]) -> bool:
    """Does a cache entry hold an answer? Asked without reading it, where the entry can say
    (store.db.LazyEntry reads its body from the file only when it is used)."""
    known = getattr(entry, "has_body", None)
    return known if known is not None else entry.get("body") is not None


class GitHubClient:
    """httpx-based client shared by the poll threads. Thread-safe; holds the ETag cache in memory.

    `etags` is the store's table as a dict; new entries accumulate in `etag_updates` so the
    caller can save them in the same transaction as the states they produced. `cycle_deadline`
    (monotonic seconds), when set, ends every request by then and refuses new ones after it.
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
        max_body_bytes: int = MAX_BODY_BYTES,
        cycle_deadline: float | None = None,
        budget: Budget | None = None,
        answer_cache: int = 0,
        max_cycle_bytes: int = MAX_CYCLE_BYTES,
    ):
        self.base_url = api_base_url(base_url)
        self.shown_base_url = public_url(self.base_url)
        self.token = token if token is not None else github_token()
        self.etags = dict(etags or {})
        self.etag_updates: dict[str, dict[str, Any]] = {}
        self.stats = Stats()
        self.timeout = timeout
        self.max_rate_limit_wait = max_rate_limit_wait
        self.retries = retries
        self.max_body_bytes = max_body_bytes
        self.cycle_deadline = cycle_deadline
        self.max_cycle_bytes = max_cycle_bytes
        self.bytes_read = 0  # JSON bytes answered so far (a 304 counts its cached body)
        self._read = threading.local()  # the paginated read this thread is in (one_read)
        self._sleep = sleep
        self.budget = budget if budget is not None else shared_budget()
        # answer_cache > 0: every answer (and every error that asking again cannot change) is
        # kept in memory, at most that many, for a client whose world does not move (backtest)
        self._answers: OrderedDict[str, Page | GitHubError] | None = (
            OrderedDict() if answer_cache > 0 else None
        )
        self._answers_max = answer_cache
        self._local = threading.local()  # per thread: answer from the cache without asking
        self._lock = threading.Lock()
        self._blocked_until = 0.0  # a rate limit seen by one thread pauses them all
        self._deadline = _Deadline()
        self._storage_http: httpx.Client | None = None
        self.user_agent = user_agent or f"watcher/{__version__}"
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": self.user_agent,
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        self.http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,  # followed by hand, on the API's origin only
            transport=transport,
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=16),
        )
        _install_deadline(self.http, self._deadline)

    def close(self) -> None:
        self.http.close()
        if self._storage_http is not None:
            self._storage_http.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def url(self, path: str) -> str:
        """A full URL for an API path; an absolute URL must be on the API's own origin (or be
        the GraphQL endpoint beside it, outside the REST prefix on GitHub Enterprise)."""
        if not path.startswith(("http://", "https://")):
            return f"{self.base_url}{path}"
        if path != self.graphql_url() and not same_origin(path, self.base_url):
            raise GitHubError(
                f"refused to follow a link off the API's origin ({self.shown_base_url})",
                url=public_url(path),
            )
        return path

    def api_path(self, url: str) -> str:
        """The part of a URL after the API's base path (what watcher.github.answers keys shapes by)."""
        prefix = httpx.URL(self.base_url).path.rstrip("/")
        return httpx.URL(url).path[len(prefix) :]

    # -------------------------------------------------------------- one request

    def _deadline_for(self, url: str) -> float:
        deadline = time.monotonic() + self.timeout
        if self.cycle_deadline is not None:
            if time.monotonic() >= self.cycle_deadline:
                raise GitHubError(
                    "not asked: the cycle's deadline had passed (asked again next cycle)",
                    url=public_url(url),
                )
            deadline = min(deadline, self.cycle_deadline)
        return deadline

    def send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        json_body: Any = None,
        max_bytes: int | None = None,
        follow: bool = True,
        content: bool | None = None,
        pace_as: str | None = None,
    ) -> Answer:
        """One request with a total deadline and a size cap; GET redirects followed on-origin.

        A redirect off the origin, a body past the cap or a passed deadline raise GitHubError.
        Any status comes back as an Answer; a redirect of a write is never followed.
        """
        url = self.url(path)
        if params:
            url = str(httpx.URL(url, params=params))
        write = method.upper() in WRITE_METHODS
        if write:
            self._wait_if_blocked(public_url(url))
        for _ in range(MAX_REDIRECTS + 1):
            waited = self.budget.take(pace_as or method, content=content)
            if waited:
                with self.stats.lock:
                    self.stats.paced_s += waited
            answer = self._once(method, url, headers, json_body, max_bytes)
            if write:
                # A write refused by a rate limit: later requests wait as told; the write itself
                # is handed back, never repeated here (a duplicate comment is worse than a late one).
                wait = self._rate_limit_wait(answer)
                if wait is not None:
                    self._block(wait)
                return answer
            location = answer.headers.get("location")
            if not (follow and method == "GET" and answer.status in REDIRECTS and location):
                return answer
            url = str(httpx.URL(url).join(location))
            if not same_origin(url, self.base_url):
                raise GitHubError(
                    f"HTTP {answer.status} redirect off the API's origin; not followed",
                    status=answer.status,
                    url=public_url(url),
                )
        raise GitHubError(f"more than {MAX_REDIRECTS} redirects", url=public_url(url))

    def _once(
        self,
        method: str,
        url: str,
        headers: dict[str, str] | None,
        json_body: Any,
        max_bytes: int | None,
        http: httpx.Client | None = None,
    ) -> Answer:
        shown = public_url(url)
        deadline = self._deadline_for(url)
        allowed = deadline - time.monotonic()
        cap = self.max_body_bytes if max_bytes is None else max_bytes
        previous, self._deadline.at = self._deadline.at, deadline
        try:
            with (http or self.http).stream(method, url, headers=headers, json=json_body) as resp:
                limit = cap if resp.status_code < 300 else min(cap, MAX_ERROR_BYTES)
                body = bytearray()
                for chunk in resp.iter_bytes():
                    body += chunk
                    if len(body) > limit:
                        if resp.status_code >= 300:
                            body = body[:limit]
                            break
                        raise GitHubError(
                            f"answer larger than {cap / 2**20:g} MiB; not read further",
                            status=resp.status_code,
                            url=shown,
                        )
                    if time.monotonic() > deadline:
                        raise httpx.ReadTimeout("the request's deadline passed")
                final = public_url(str(resp.url))
                return Answer(resp.status_code, resp.headers, bytes(body), final)
        except httpx.TimeoutException:
            raise Unanswered(f"no complete answer within {allowed:.3g} s", url=shown) from None
        except httpx.TransportError as e:
            raise Unanswered(f"connection failed: {type(e).__name__}", url=shown) from None
        finally:
            self._deadline.at = previous

    def graphql_url(self) -> str:
        """GitHub's GraphQL endpoint beside this REST base: /graphql on api.github.com (and a
        fake), /api/graphql on GitHub Enterprise (whose REST base is /api/v3)."""
        base = self.base_url.rstrip("/")
        return base[: -len("/v3")] + "/graphql" if base.endswith("/api/v3") else base + "/graphql"

    def graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        """One GraphQL read (a query, never a mutation): its `data`. GitHub answers what does not
        exist with 200 and NOT_FOUND errors: raised as a 404, like REST's, so it is never a state.
        No conditional requests exist in GraphQL: each read costs a point of its own limit."""
        answer = self.send(
            "POST",
            self.graphql_url(),
            json_body={"query": query, "variables": variables},
            content=False,  # GitHub's secondary limits: a query without mutations costs 1
            pace_as="GET",  # point, as a GET does, and creates no content
        )
        url = public_url(self.graphql_url())
        with self.stats.lock:
            self.stats.requests += 1
        if answer.status != 200:
            raise GitHubError(f"HTTP {answer.status} from GraphQL", status=answer.status, url=url)
        body = self._checked(url, answer.content)
        if not isinstance(body, dict):
            raise GitHubError("GraphQL answered something other than an object", url=url)
        errors = body.get("errors") or []
        if errors:
            first = errors[0] if isinstance(errors[0], dict) else {}
            missing = first.get("type") == "NOT_FOUND"
            message = str(first.get("message") or "error")[:200]
            raise GitHubError(
                f"HTTP {404 if missing else 502} GraphQL: {message}",
                status=404 if missing else 502,
                url=url,
            )
        data = body.get("data")
        if not isinstance(data, dict):
            raise GitHubError("GraphQL answered without data", url=url)
        return data

    def download(self, path: str, max_bytes: int) -> Answer:
        """An artifact: asked on the API's origin with the token; GitHub answers with a redirect
        to a storage host (a signed URL), which is fetched without it, as GitHub documents.

        Off the origin the scheme may not drop from https to http.
        """
        url = self.url(path)
        answer = self.send("GET", url, max_bytes=max_bytes, follow=False)
        for _ in range(MAX_REDIRECTS):
            location = answer.headers.get("location")
            if answer.status not in REDIRECTS or not location:
                return answer
            was_https = httpx.URL(url).scheme == "https"
            url = str(httpx.URL(url).join(location))
            if same_origin(url, self.base_url):
                answer = self.send("GET", url, max_bytes=max_bytes, follow=False)
                continue
            scheme = httpx.URL(url).scheme
            if scheme not in ("http", "https") or (was_https and scheme != "https"):
                raise GitHubError(
                    "artifact redirect to a non-https URL; not followed", url=public_url(url)
                )
            answer = self._once("GET", url, None, None, max_bytes, http=self._storage())
        raise GitHubError(f"more than {MAX_REDIRECTS} redirects", url=public_url(url))

    def _storage(self) -> httpx.Client:
        """A client with no token, no cookies and no API headers, for storage hosts."""
        with self._lock:
            if self._storage_http is None:
                self._storage_http = httpx.Client(
                    headers={"User-Agent": self.user_agent},
                    timeout=httpx.Timeout(self.timeout),
                    follow_redirects=False,
                )
                _install_deadline(self._storage_http, self._deadline)
            return self._storage_http

    def decode(self, url: str, content: bytes) -> Any:
        """Decode, clean and shape-check one answer; BadAnswer (a GitHubError) if it fails."""
        return self._checked(url, content)

    # -------------------------------------------------------------- core GET

    def get(self, path: str, params: dict[str, Any] | None = None) -> Page:
        """One conditional GET. Raises GitHubError; never returns an error as data."""
        url = self.url(path)
        if params:
            url = str(httpx.URL(url, params=params))
        shown = public_url(url)
        if self._answers is not None:
            with self._lock:
                kept = self._answers.get(url)
                if kept is not None:
                    self._answers.move_to_end(url)
            if isinstance(kept, GitHubError):
                raise kept
            if kept is not None:
                with self.stats.lock:
                    self.stats.from_cache += 1
                return kept
        try:
            page = self._get(url, shown)
        except GitHubError as e:
            if self._answers is not None and (e.status == 404 or getattr(e, "never", False)):
                self._keep(url, e)
            raise
        if self._answers is not None:
            self._keep(url, page)
        return page

    def _keep(self, url: str, answer: Page | GitHubError) -> None:
        with self._lock:
            self._answers[url] = answer
            while len(self._answers) > self._answers_max:
                self._answers.popitem(last=False)

    @contextmanager
    def from_cache(self):
        """Within this block (this thread only), a GET whose answer is cached is answered from
        the cache without asking: the caller knows nothing it reads can have changed."""
        before = getattr(self._local, "trust", False)
        self._local.trust = True
        try:
            yield
        finally:
            self._local.trust = before

    def cached(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The cached answer of a GET (its etag-cache entry), or None when none is kept."""
        url = self.url(path)
        if params:
            url = str(httpx.URL(url, params=params))
        entry = self.etag_updates.get(url) or self.etags.get(url)
        return entry if entry and has_body(entry) else None

    def _get(self, url: str, shown: str) -> Page:
        cached = self.etag_updates.get(url) or self.etags.get(url)
        if getattr(self._local, "trust", False) and cached and has_body(cached):
            with self.stats.lock:
                self.stats.from_cache += 1
            data = self._checked(url, cached["body"].encode("utf-8", "surrogatepass"))
            return Page(data, shown, True, json.loads(cached.get("link") or "{}"))
        attempt = 0
        while True:
            self._wait_if_blocked(shown)
            headers = {}
            if cached and cached.get("etag") and has_body(cached):
                headers["If-None-Match"] = cached["etag"]
            try:
                resp = self.send("GET", url, headers=headers)
            except Unanswered as e:
                err = e
            except GitHubError:
                self._count_error()
                raise
            else:
                self._count(resp)
                err = None
                if resp.status == 304 and cached:
                    with self.stats.lock:
                        self.stats.not_modified += 1
                    body = cached["body"].encode("utf-8", "surrogatepass")
                    self._account(len(body), shown)
                    data = self._checked(url, body)
                    links = json.loads(cached.get("link") or "{}")
                    return Page(data, shown, True, links, _poll_interval(resp), len(body))
                if resp.status == 200:
                    self._account(len(resp.content), shown)
                    return self._accept(url, resp)
                wait = self._rate_limit_wait(resp)
                if wait is not None:
                    if wait > self.max_rate_limit_wait or attempt >= self.retries + 1:
                        self._block(wait)
                        err = self._error(resp, shown, f"rate limited; retry in {int(wait)} s")
                        err.retry_after = wait
                        raise err
                    self._block(wait)
                    attempt += 1
                    continue
                if resp.status not in TRANSIENT:
                    raise self._error(resp, shown)
                err = self._error(resp, shown)
                if resp.headers.get(NEVER_HEADER):
                    err.never = True  # asking again cannot help: not retried
                    self._count_error()
                    raise err
            if attempt >= self.retries or (
                self.cycle_deadline is not None and time.monotonic() >= self.cycle_deadline
            ):
                self._count_error()
                raise err
            attempt += 1
            self._sleep(min(0.5 * attempt, 2.0))

    def _count_error(self) -> None:
        with self.stats.lock:
            self.stats.errors += 1

    def _checked(self, url: str, content: bytes) -> Any:
        """Decode, clean and shape-check one answer; BadAnswer (a GitHubError) if it fails."""
        shown = public_url(url)
        try:
            data = json.loads(content)
        except (ValueError, UnicodeDecodeError) as e:
            raise BadAnswer(f"bad JSON from GitHub: {str(e)[:120]}", url=shown) from None
        except RecursionError:
            raise BadAnswer("answer nested too deeply to read", url=shown) from None
        data = clean(data, shown)
        path = self.api_path(url)
        spec = spec_for(path)
        if spec is not None:
            check(data, spec, shown)
        return kept(data, keep_for(path))  # what is cached as its ETag body, too

    def _accept(self, url: str, resp: Answer) -> Page:
        try:
            data = self._checked(url, resp.content)
        except BadAnswer as e:
            e.status = resp.status
            self._count_error()
            raise
        links = parse_link(resp.headers.get("link"))
        if resp.headers.get("etag"):
            entry = {
                "etag": resp.headers["etag"],
                "last_modified": resp.headers.get("last-modified"),
                "body": json.dumps(data),
                "link": json.dumps(links, sort_keys=True),
                "fetched_at": iso(utcnow()),
            }
            with self._lock:
                self.etag_updates[url] = entry
            urls = getattr(self._read, "urls", None)
            if urls is not None:
                urls.append(url)
        return Page(data, resp.url, False, links, _poll_interval(resp), len(resp.content))

    def _account(self, size: int, url: str | None) -> None:
        """Count an answer against the cycle's and the current read's byte budgets."""
        with self._lock:
            self.bytes_read += size
            total = self.bytes_read
        if total > self.max_cycle_bytes:
            self._count_error()
            raise GitHubError(
                f"this cycle read more than {self.max_cycle_bytes / 2**20:g} MiB from GitHub; "
                "the rest is asked next cycle",
                url=url,
            )
        limit = getattr(self._read, "limit", None)
        if limit is not None:
            self._read.bytes += size
            if self._read.bytes > limit:
                self._count_error()
                raise GitHubError(
                    f"the pages of one read came to more than {limit / 2**20:g} MiB; "
                    "not read further",
                    url=url,
                )

    @contextmanager
    def one_read(self, max_bytes: int | None = None):
        """A read of several pages: together they may hold `max_bytes` (MAX_READ_BYTES), and
        their answers are cached (etag_updates) only when the whole read completes; one that
        fails or is cut short leaves the cache as it was, so the next cycle asks again."""
        if getattr(self._read, "urls", None) is not None:  # nested: the outer read decides
            yield
            return
        self._read.urls, self._read.bytes = [], 0
        self._read.limit = MAX_READ_BYTES if max_bytes is None else max_bytes
        try:
            yield
        except BaseException:
            with self._lock:
                for url in self._read.urls:
                    self.etag_updates.pop(url, None)
            raise
        finally:
            self._read.urls = self._read.limit = None

    # -------------------------------------------------------------- what the poller remembers

    def memo_get(self, key: str) -> Any:
        """A value the poller remembered on an earlier cycle (None if none).

        Kept in the etag cache under a `memo:` key, so it is saved in the same transaction as the
        answers it was learnt from, and dropped with them by a fresh re-read (recheck).
        """
        entry = self.etag_updates.get(MEMO + key) or self.etags.get(MEMO + key)
        if not entry or not has_body(entry):
            return None
        return json.loads(entry["body"])

    def memo_put(self, key: str, value: Any) -> None:
        entry = {
            "etag": None,
            "last_modified": None,
            "body": None if value is None else json.dumps(value, sort_keys=True),
            "link": None,
            "fetched_at": iso(utcnow()),
        }
        with self._lock:
            self.etag_updates[MEMO + key] = entry

    def forget(self, url: str) -> None:
        """Drop a URL's cached answer (its body could be large and it is never asked again)."""
        with self._lock:
            self.etag_updates[url] = {
                "etag": None,
                "last_modified": None,
                "body": None,
                "link": None,
                "fetched_at": iso(utcnow()),
            }

    def _count(self, resp: Answer) -> None:
        h = resp.headers
        with self.stats.lock:
            self.stats.requests += 1
            poll = _poll_interval(resp)
            if poll is not None:
                self.stats.poll_interval = max(poll, self.stats.poll_interval or 0)
            for attr, name in (
                ("rate_limit", "x-ratelimit-limit"),
                ("rate_remaining", "x-ratelimit-remaining"),
                ("rate_reset", "x-ratelimit-reset"),
            ):
                if h.get(name, "").isdigit():
                    value = int(h[name])
                    if attr == "rate_remaining" and self.stats.rate_remaining is not None:
                        value = (
                            min(value, self.stats.rate_remaining) if resp.status != 304 else value
                        )
                    setattr(self.stats, attr, value)

    def _rate_limit_wait(self, resp: Answer) -> float | None:
        """Seconds to wait if this response is a primary or secondary rate limit, else None."""
        if resp.status not in (403, 429):
            return None
        h = resp.headers
        if h.get("retry-after", "").strip().isdigit():
            return float(h["retry-after"])
        if h.get("x-ratelimit-remaining") == "0" and h.get("x-ratelimit-reset", "").isdigit():
            return max(0.0, int(h["x-ratelimit-reset"]) - time.time()) + 1
        text = resp.text.lower()
        if "secondary rate limit" in text or "abuse" in text:
            return 60.0  # GitHub: wait at least a minute when it does not say how long
        if resp.status == 429:
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
        past_cycle = (
            self.cycle_deadline is not None and time.monotonic() + remaining > self.cycle_deadline
        )
        if remaining > self.max_rate_limit_wait or past_cycle:
            self._count_error()
            raise GitHubError(f"rate limited; retry in {int(remaining)} s", status=403, url=url)
        self._sleep(remaining)

    def _error(self, resp: Answer, url: str, prefix: str | None = None) -> GitHubError:
        try:
            data = resp.json()
            message = data.get("message", "") if isinstance(data, dict) else ""
        except (ValueError, RecursionError):
            message = resp.text[:200]
        text = f"HTTP {resp.status}" + (f": {str(message)[:200]}" if message else "")
        if prefix:
            text = f"{prefix} ({text})"
        return GitHubError(text, status=resp.status, url=url)

    # -------------------------------------------------------------- helpers

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self.get(path, params).data

    def paginate(
        self,
        path: str,
        params: dict[str, Any] | None = None,
        max_pages: int = MAX_PAGES,
        *,
        within: float | None = None,
    ) -> list[Any]:
        """All items across pages, following Link rel="next" (never building page URLs).

        At most `max_pages` pages and MAX_READ_BYTES in all (one_read), and, with `within`, no
        new page asked after that many seconds; a next link off the API's origin or back to a
        page already read is an error (a loop), never followed.
        """
        out: list[Any] = []
        with self.one_read():
            for page in self.pages(path, params, max_pages, within=within):
                out.extend(page.data)
        return out

    def pages(
        self,
        path: str,
        params: dict[str, Any] | None = None,
        max_pages: int | None = MAX_PAGES,
        *,
        within: float | None = None,
    ):
        """The pages of a listing, one at a time, following Link rel="next" with a loop check.

        Stops after `max_pages` (None: no count limit; the byte budgets still hold); the caller
        sees whether more was left by the last page's `links`.
        """
        until = None if within is None else time.monotonic() + within
        page = self.get(path, params)
        seen = {page.url}
        while True:
            if not isinstance(page.data, list):
                raise BadAnswer("unexpected answer shape: expected a list", url=page.url)
            yield page
            if "next" not in page.links or (max_pages is not None and len(seen) >= max_pages):
                return
            nxt = public_url(self.url(page.links["next"]))
            if nxt in seen:
                raise BadAnswer("pagination loops back to a page already read", url=nxt)
            if until is not None and time.monotonic() > until:
                raise GitHubError(
                    f"the listing took longer than {within:g} s; not read further", url=nxt
                )
            page = self.get(page.links["next"])
            seen.add(page.url)

    def repo_path(self, repo: str) -> str:
        return f"/repos/{repo}"

    def moved(self, requested: str, final: str) -> bool:
        """A 301 (a transferred issue) ends at another path: record the new location."""
        return urlsplit(requested).path != urlsplit(final).path


def open_client(cfg: Config, client: GitHubClient | None = None):
    """The cycle's client (left open for the cycle), or a short-lived one of our own (the cycle may
    have closed its own): use it as `with open_client(cfg, client) as c:`."""
    if client is not None:
        return nullcontext(client)
    return GitHubClient(
        cfg.settings.github_api_url,
        timeout=cfg.settings.timeout,
        user_agent=cfg.settings.user_agent,
    )
