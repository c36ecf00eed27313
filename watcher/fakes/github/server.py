"""`FakeGitHub`: the state model (state.py) served over real HTTP on 127.0.0.1.

This module is the request pipeline: authentication, the rate-limit bucket, conditional
requests (ETag, Last-Modified -> 304), Link-header pagination and dispatch to the routes.
"""

from __future__ import annotations

import hashlib
import math
import re
import socket
import sys
import threading
import time
import traceback
from email.utils import parsedate_to_datetime
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from watcher.fakes.github.faults import Fault, Faults
from watcher.fakes.github.http import Ctx, Handler, HTTPError, Recorded, Reply, Server
from watcher.fakes.github.routes import ROUTES, actions
from watcher.fakes.github.state import GitHubState
from watcher.fakes.github.util import (
    JSON_TYPE,
    error_body,
    http_date,
    json_bytes,
    num,
    parse_time,
    to_int,
)


class FakeGitHub(GitHubState, Faults):
    """A fake api.github.com on 127.0.0.1: seed it, start it, point a client at `url`.

        with FakeGitHub() as gh:
            gh.add_pull("o/r", 1, title="fix", merged=True)
            httpx.get(f"{gh.url}/repos/o/r/pulls/1").json()["merged"]  # True

    Rate limit: one bucket shared by every caller. Each answer costs one, except a 304 to an
    authorized request and GET /rate_limit (free on GitHub too). When `rate_remaining` is 0 the
    answer is 403 until `rate_reset` passes, then the bucket refills to `rate_limit`.
    Link headers point at /repositories/{id}/... URLs, as GitHub's often do (clients must follow
    them, not rebuild them); set `link_repository_ids = False` to keep the /repos/o/r form.
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        tokens: dict[str, str] | None = None,
        per_page_default: int = 30,
        port: int = 0,
    ):
        super().__init__()
        self.port = port  # 0: any free port (tests); `python -m watcher.fakes.github --port`
        self.latency = latency
        self.tokens = dict(tokens) if tokens is not None else {"test-token": "watcher-bot"}
        self.per_page_default = per_page_default
        self.rate_limit = 5000
        self.rate_remaining = 5000
        self.rate_reset = int(time.time()) + 3600
        # Link headers point at /repositories/{id}/... as GitHub's often do; False keeps the
        # /repos/{owner}/{repo}/... form of the request.
        self.link_repository_ids = True
        self.requests: list[Recorded] = []
        self._stopping = threading.Event()
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        self._faults: list[Fault] = []

    # ---------------------------------------------------------------- lifecycle

    def _bind(self) -> Server:
        if self._server is None:
            self._server = Server(("127.0.0.1", self.port), Handler)
            self._server.fake = self
        return self._server

    @property
    def url(self) -> str:
        """The base URL, e.g. http://127.0.0.1:54321 (the socket is bound on first use)."""
        return f"http://127.0.0.1:{self._bind().server_address[1]}"

    def start(self) -> FakeGitHub:
        """Bind 127.0.0.1 (port 0: any free one) and serve from a daemon thread. Returns self."""
        if self._stopping.is_set():
            raise RuntimeError("this FakeGitHub was stopped; make a new one")
        server = self._bind()
        if self._thread is None:
            self._thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="fakegithub",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests held by latency or a "timeout" fault are dropped at once."""
        self._stopping.set()
        server = self._server
        if server is None:
            return
        if self._thread is not None:
            server.shutdown()
            self._thread.join(timeout=5)
        server.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # wake handler threads parked on idle keep-alive connections
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    # ---------------------------------------------------------------- request handling

    def _canonical(self, path: str) -> str:
        """/repositories/{id}/rest (the form GitHub uses in Link headers) -> /repos/o/r/rest."""
        m = re.match(r"^/repositories/(\d+)(/.*)?$", path)
        if m:
            with self._lock:
                r = self._repo_ids.get(int(m.group(1)))
            if r is not None:
                return f"/repos/{r.full_name}{m.group(2) or ''}"
        return path

    def _link_path(self, path: str, force: bool = False) -> str:
        if not (self.link_repository_ids or force):
            return path
        m = re.match(r"^/repos/([^/]+)/([^/]+)(/.*)?$", path)
        if m:
            r = self._repos.get(f"{m.group(1)}/{m.group(2)}".lower())
            if r is not None:
                return f"/repositories/{r.id}{m.group(3) or ''}"
        return path

    def _auth(self, headers: dict) -> tuple[str | None, bool]:
        """(login, bad): login for a known token, bad=True for an unknown one."""
        value = headers.get("authorization", "").strip()
        if not value:
            return None, False
        scheme, _, token = value.partition(" ")
        if scheme.lower() not in ("bearer", "token") or not token.strip():
            return None, True
        login = self.tokens.get(token.strip())
        return login, login is None

    def serve(self, method: str, target: str, headers: dict, body: bytes) -> Reply:
        split = urlsplit(target)
        path = self._canonical(unquote(split.path))
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        if path.startswith("/_fake/"):
            return actions.artifact_blob(
                self, path
            )  # the "blob host": not the API, no auth, no rate limit
        login, bad = self._auth(headers)
        free = path == "/rate_limit"
        with self._lock:
            if self.rate_remaining <= 0 and time.time() >= self.rate_reset:
                self.rate_remaining = self.rate_limit
                self.rate_reset = int(time.time()) + 3600
            limited = self.rate_remaining <= 0 and not free
        if bad:
            reply = self._error(401, "Bad credentials")
        elif limited:
            who = f"user ID {num('user', login.lower())}" if login else "127.0.0.1"
            reply = self._error(
                403,
                f"API rate limit exceeded for {who}. (But here's the good news: Authenticated "
                "requests get a higher rate limit. Check out the documentation for more details.)",
            )
        else:
            try:
                reply = self._route(method, path, query, headers, body, login, split.query)
            except HTTPError as e:
                reply = self._error(e.status, e.message)
                reply.headers.update(e.headers)
            except Exception as e:  # a bug in the fake: say so loudly, answer 500
                traceback.print_exc(file=sys.stderr)
                reply = self._error(500, f"fakegithub bug: {e!r}")
            reply.rate_free = reply.rate_free or free
        if reply.cacheable and reply.status == 200:
            self._conditional(reply, headers)
        self._account(reply, authorized=login is not None)
        return reply

    def _conditional(self, reply: Reply, headers: dict) -> None:
        etag = '"' + hashlib.sha256(reply.body).hexdigest() + '"'
        reply.headers["ETag"] = etag
        if reply.last_modified:
            reply.headers["Last-Modified"] = http_date(reply.last_modified)
        inm = headers.get("if-none-match")
        ims = headers.get("if-modified-since")
        fresh = False
        if inm is not None:
            wanted = {t.strip().removeprefix("W/") for t in inm.split(",")}
            fresh = "*" in wanted or etag in wanted
        elif ims and reply.last_modified:
            try:
                fresh = parse_time(reply.last_modified) <= parsedate_to_datetime(ims)
            except (TypeError, ValueError):
                fresh = False
        if fresh:
            reply.status = 304
            reply.body = b""
            reply.headers.pop("Content-Type", None)

    def _account(self, reply: Reply, authorized: bool) -> None:
        with self._lock:
            free = reply.rate_free or (reply.status == 304 and authorized)
            if not free and self.rate_remaining > 0:
                self.rate_remaining -= 1
            rate = {
                "x-ratelimit-limit": str(self.rate_limit),
                "x-ratelimit-remaining": str(max(self.rate_remaining, 0)),
                "x-ratelimit-used": str(self.rate_limit - max(self.rate_remaining, 0)),
                "x-ratelimit-reset": str(self.rate_reset),
                "x-ratelimit-resource": "core",
            }
        present = {k.lower() for k in reply.headers}
        for k, v in rate.items():
            if k not in present:
                reply.headers[k] = v

    def _error(self, status: int, message: str) -> Reply:
        return Reply(status, json_bytes(error_body(status, message)), {"Content-Type": JSON_TYPE})

    def _json(
        self,
        obj: object,
        status: int = 200,
        *,
        links: list[tuple[str, str]] | None = None,
        link_base: str = "",
        last_modified: str | None = None,
        headers: dict | None = None,
    ) -> Reply:
        reply = Reply(status, json_bytes(obj), {"Content-Type": JSON_TYPE})
        reply.cacheable = True
        reply.last_modified = last_modified
        if links:
            reply.headers["Link"] = ", ".join(f'<{link_base}{q}>; rel="{rel}"' for rel, q in links)
        reply.headers.update(headers or {})
        return reply

    def _paginate(self, items: list, query: dict, raw_query: str, path: str) -> tuple[list, dict]:
        """Slice one page; return it with the kwargs that put GitHub's Link header on the reply."""
        per_page = min(max(to_int(query.get("per_page"), self.per_page_default), 1), 100)
        page = max(to_int(query.get("page"), 1), 1)
        last = max(1, math.ceil(len(items) / per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        pairs = parse_qsl(raw_query, keep_blank_values=True)

        def qs(n: int) -> str:
            out = [(k, str(n) if k == "page" else v) for k, v in pairs]
            if not any(k == "page" for k, _ in pairs):
                out.append(("page", str(n)))
            return "?" + urlencode(out, safe=":,/")

        rels: list[tuple[str, int]] = []
        if page > 1:
            rels.append(("prev", page - 1))
        if page < last:
            rels += [("next", page + 1), ("last", last)]
        if page > 1:
            rels.append(("first", 1))
        links = [(rel, qs(n)) for rel, n in rels]
        return chunk, {"links": links, "link_base": self.url + self._link_path(path)}

    # ---------------------------------------------------------------- routes

    def _route(
        self,
        method: str,
        path: str,
        query: dict,
        headers: dict,
        body: bytes,
        login: str | None,
        raw_query: str,
    ) -> Reply:
        for verb, pattern, handler in ROUTES:
            m = pattern.match(path)
            if m is None:
                continue
            if verb != method and not (verb == "GET" and method == "HEAD"):
                continue
            params = m.groupdict()
            repo = None
            if "owner" in params:
                with self._lock:
                    repo = self._repos.get(f"{params['owner']}/{params['repo']}".lower())
                if repo is None:
                    raise HTTPError(404, "Not Found")
            ctx = Ctx(method, path, query, headers, body, login, raw_query, repo, params)
            return handler(self, ctx)
        raise HTTPError(404, "Not Found")
