"""A small hostile GitHub on 127.0.0.1: each path answers however a test scripts it.

Tests register one handler per path (`server.on(path, fn)`); `fn(req)` writes the whole answer
through the helpers below (JSON with headers, redirects, lazily streamed or dripped bodies). Every
request is recorded with its method, path and headers, so a test can assert who got the token.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Request:
    """One request as a handler sees it, with ways to answer it."""

    def __init__(self, handler: BaseHTTPRequestHandler, server: HostileServer):
        self.h = handler
        self.server = server
        self.path = handler.path

    def send(
        self,
        status: int,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        content_type: str = "application/json; charset=utf-8",
    ) -> None:
        self.h.send_response(status)
        self.h.send_header("Content-Type", content_type)
        self.h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.h.send_header(k, v)
        self.h.end_headers()
        self.h.wfile.write(body)

    def json(self, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.send(status, json.dumps(data).encode(), headers)

    def raw_json(self, text: str, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.send(status, text.encode("utf-8", "surrogatepass"), headers)

    def redirect(self, location: str, status: int = 302) -> None:
        self.send(status, b"", {"Location": location})

    def stream(self, chunks: Iterable[bytes], *, pause: float = 0.0, length: int | None = None):
        """A body produced lazily (never held in memory here); stops when the client hangs up."""
        self.h.send_response(200)
        self.h.send_header("Content-Type", "application/json")
        if length is not None:
            self.h.send_header("Content-Length", str(length))
        self.h.end_headers()
        try:
            for chunk in chunks:
                self.h.wfile.write(chunk)
                self.h.wfile.flush()
                if pause:
                    time.sleep(pause)
                if self.server.closing.is_set():
                    return
        except (BrokenPipeError, ConnectionResetError):
            self.server.hung_up += 1

    def drip_headers(self, pause: float) -> None:
        """A status line and headers one byte at a time: the answer never finishes arriving."""
        line = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X-Slow: " + b"a" * 10_000
        )
        try:
            for i in range(len(line)):
                self.h.wfile.write(line[i : i + 1])
                self.h.wfile.flush()
                time.sleep(pause)
                if self.server.closing.is_set():
                    return
        except (BrokenPipeError, ConnectionResetError):
            self.server.hung_up += 1


class HostileServer:
    """ThreadingHTTPServer on 127.0.0.1 with per-path scripted answers (404 for the rest)."""

    def __init__(self):
        self.routes: dict[str, Callable[[Request], None]] = {}
        self.requests: list[Seen] = []
        self.hung_up = 0
        self.closing = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.requests.append(
                    Seen(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                fn = outer.routes.get(self.path.split("?", 1)[0]) or outer.routes.get(self.path)
                req = Request(self, outer)
                if fn is None:
                    req.json({"message": "Not Found"}, 404)
                else:
                    fn(req)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def on(self, path: str, fn: Callable[[Request], None]) -> None:
        self.routes[path] = fn

    def json(self, path: str, data: Any, headers: dict[str, str] | None = None) -> None:
        """Answer `path` with fixed JSON (and headers, e.g. a Link)."""
        self.on(path, lambda req: req.json(data, headers=headers))

    def seen(self, path: str) -> list[Seen]:
        return [r for r in self.requests if r.path.split("?", 1)[0] == path]

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()
