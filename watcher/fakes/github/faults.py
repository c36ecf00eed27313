"""Fault injection: make the next matching requests fail the ways GitHub and networks do.

Modes: "status" (an error answer), "timeout" (hold the answer), "reset" (TCP RST), "truncated"
(a body shorter than its Content-Length), "malformed" (broken JSON) and "redirect" (301, as for
a renamed repository).
"""

from __future__ import annotations

import json
import re
import socket
import struct
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from watcher.fakes.github.util import DOCS, JSON_TYPE, Reply, error_body, json_bytes

if TYPE_CHECKING:
    from watcher.fakes.github.http import Handler, Recorded
    from watcher.fakes.github.server import FakeGitHub

TIMEOUT_FAULT_S = 30.0
FAULT_MODES = ("status", "timeout", "reset", "truncated", "malformed", "redirect")


@dataclass
class Fault:
    method: str
    pattern: re.Pattern
    status: int
    times: int
    headers: dict
    body: bytes | str | dict | None
    mode: str


class Faults:
    """The fault-injection half of `FakeGitHub`'s public API."""

    def fail(
        self,
        method: str,
        path_regex: str,
        *,
        status: int = 500,
        times: int = 1,
        headers: dict | None = None,
        body: bytes | str | dict | None = None,
        mode: str = "status",
    ) -> None:
        """Make the next `times` matching requests fail (-1: forever). Faults apply in order.

        `method` is an HTTP method or "*"; `path_regex` is searched in the path, then in the
        path with its query string. Modes: "status" (answer status/headers/body), "timeout"
        (hold the answer 30 s, or until stop()), "reset" (TCP reset, no answer), "truncated"
        (200 whose Content-Length exceeds the body), "malformed" (200 with broken JSON),
        "redirect" (301 to headers["Location"], default: the /repositories/{id}/... form of
        the same URL, as GitHub answers for a renamed repository).
        """
        if mode not in FAULT_MODES:
            raise ValueError(f"unknown fault mode {mode!r}; one of {FAULT_MODES}")
        if times == 0 or times < -1:
            raise ValueError("times must be positive or -1 (forever)")
        with self._lock:
            self._faults.append(
                Fault(
                    method.upper(),
                    re.compile(path_regex),
                    status,
                    times,
                    dict(headers or {}),
                    body,
                    mode,
                )
            )

    def clear_faults(self) -> None:
        """Drop every pending fault (a test's "GitHub is healthy again")."""
        with self._lock:
            self._faults.clear()

    def _take_fault(self, method: str, target: str) -> Fault | None:
        split = urlsplit(target)
        canonical = self._canonical(unquote(split.path))
        # A regex written against /repos/o/r/... also catches the /repositories/{id}/... form
        # that Link headers and redirects use.
        candidates = [split.path, canonical, target, f"{canonical}?{split.query}"]
        with self._lock:
            for fault in self._faults:
                if fault.method not in ("*", method):
                    continue
                if not any(fault.pattern.search(c) for c in candidates):
                    continue
                if fault.times > 0:
                    fault.times -= 1
                    if fault.times == 0:
                        self._faults.remove(fault)
                return fault
        return None


def fault_reply(gh: FakeGitHub, fault: Fault, target: str) -> Reply:
    """The answer of a "status", "malformed" or "redirect" fault (costs one from the bucket)."""
    headers = dict(fault.headers)
    if fault.mode == "malformed":
        reply = Reply(200, b'{"oops": ', {"Content-Type": JSON_TYPE})
    elif fault.mode == "redirect":
        location = next((v for k, v in headers.items() if k.lower() == "location"), None)
        if location is None:
            split = urlsplit(target)
            location = gh.url + gh._link_path(gh._canonical(split.path), force=True)
            if split.query:
                location += "?" + split.query
            headers["Location"] = location
        body = {"message": "Moved Permanently", "url": location, "documentation_url": DOCS}
        reply = Reply(301, json_bytes(body), {"Content-Type": JSON_TYPE})
    else:
        body = fault.body
        if body is None:
            body = error_body(fault.status, _reason(fault.status))
        if isinstance(body, dict | list):
            reply = Reply(fault.status, json_bytes(body), {"Content-Type": JSON_TYPE})
        else:
            data = body.encode() if isinstance(body, str) else bytes(body)
            try:
                json.loads(data)
                ctype = JSON_TYPE
            except ValueError:
                ctype = "text/plain; charset=utf-8"
            reply = Reply(fault.status, data, {"Content-Type": ctype})
    for k, v in headers.items():  # the fault's headers win over the defaults
        for existing in [e for e in reply.headers if e.lower() == k.lower()]:
            del reply.headers[existing]
        reply.headers[k] = v
    gh._account(reply, authorized=False)
    return reply


def reset(handler: Handler) -> None:
    """Close with a TCP RST: the client sees 'connection reset by peer'."""
    handler.close_connection = True
    try:
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.rfile.close()
        handler.wfile.close()
        handler.connection.close()
    except OSError:
        pass


def truncated(handler: Handler, rec: Recorded, fault: Fault) -> None:
    """A 200 whose body stops short of its Content-Length, then the connection closes."""
    body = fault.body
    if body is None:
        body = b'[{"id": 1, "title": "cut off in the mid'
    data = json_bytes(body) if isinstance(body, dict | list) else body
    data = data.encode() if isinstance(data, str) else bytes(data)
    rec.status = 200
    handler.close_connection = True
    try:
        handler.send_response(200)
        handler.send_header("Content-Type", JSON_TYPE)
        handler.send_header("Content-Length", str(len(data) + 1024))
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()
    except OSError:
        pass


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
