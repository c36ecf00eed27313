"""HTTP plumbing of the fake GitHub: the threaded server, the request handler, and the small
records that pass between them and the routes (a recorded request, a reply, an HTTP error).

The handler records each request, applies latency and injected faults (faults.py), hands the
rest to `FakeGitHub.serve` and writes the reply.
"""

from __future__ import annotations

import socket
import sys
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

from watcher.fakes.github import faults
from watcher.fakes.github.util import Reply, to_int

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub
    from watcher.fakes.github.state import Repo


@dataclass
class Recorded:
    """One request as the server saw it. `status` is 0 until an answer is sent (or never is)."""

    method: str
    path: str
    query: dict
    headers: dict
    status: int
    body: bytes


# Sent with a 503 the fake can never answer otherwise (a replay lacks the object), so a client
# can tell it from a passing outage and not ask again (watcher.github.client.NEVER_HEADER).
NEVER_HEADERS = {"X-Watcher-Never": "not in the recorded history"}


class HTTPError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


@dataclass
class Ctx:
    """What a route gets: the request, the caller's login and the repo named in the path."""

    method: str
    path: str
    query: dict
    headers: dict
    body: bytes
    login: str | None
    raw_query: str
    repo: Repo | None
    params: dict


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # a benchmark opens ~50 connections at once
    fake: FakeGitHub

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], OSError | ValueError):
            return  # a client that went away (timeouts, resets): not worth a traceback
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "github.com"
    sys_version = ""
    server: Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and
        # the client's delayed ACK add ~40 ms to every keep-alive answer and skew benchmarks.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.fake._lock:
            self.server.fake._conns.add(self.connection)

    def finish(self) -> None:
        with self.server.fake._lock:
            self.server.fake._conns.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PATCH = do_DELETE = do_PUT = do_HEAD = do_GET

    def _handle(self) -> None:
        gh = self.server.fake
        split = urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        length = to_int(headers.get("content-length"), 0)
        body = self.rfile.read(length) if length > 0 else b""
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        rec = Recorded(self.command, split.path, query, headers, 0, body)
        with gh._lock:
            gh.requests.append(rec)
        if gh.latency > 0 and gh._stopping.wait(gh.latency):
            return self._drop()
        fault = gh._take_fault(self.command, self.path)
        if fault is not None and fault.mode == "timeout":
            if gh._stopping.wait(faults.TIMEOUT_FAULT_S):
                return self._drop()
            fault = None
        if fault is not None and fault.mode == "reset":
            return faults.reset(self)
        if fault is not None and fault.mode == "truncated":
            return faults.truncated(self, rec, fault)
        if fault is not None:
            reply = faults.fault_reply(gh, fault, self.path)
        else:
            reply = gh.serve(self.command, self.path, headers, body)
        rec.status = reply.status
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        try:
            self.send_response(reply.status)
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.send_header("X-GitHub-Media-Type", "github.v3; format=json")
            self.send_header("X-GitHub-Request-Id", f"FAKE:{id(self):X}:{time.monotonic_ns():X}")
            self.send_header("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
            if reply.status not in (204, 304):
                self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if reply.body and self.command != "HEAD" and reply.status not in (204, 304):
                self.wfile.write(reply.body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _drop(self) -> None:
        """Leave without an answer (the server is stopping)."""
        self.close_connection = True
