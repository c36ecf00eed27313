"""A fake OCI registry on 127.0.0.1, after the distribution spec: manifests and image indexes
by tag and by digest (HEAD and GET, `Docker-Content-Digest`, `ETag` / `If-None-Match`), config
blobs with labels, the anonymous bearer-token flow (401 + `WWW-Authenticate: Bearer realm=…`,
then a token endpoint), 404 `MANIFEST_UNKNOWN` for a purged tag, and a simple package index
(PEP 691 JSON). Faults for the hostile tests: a hang, a lying digest, an oversized answer.

As a command, for trying `watcher bisect` or `watcher pins` by hand (docs/bisect.md's worked
example): it publishes the named images, prints the WATCHER_REGISTRY_MAP to export, and serves
until interrupted.

    python -m watcher.fakes.registry --port 5000 --publish lmsysorg/sglang:v0.1.{0..15}
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import secrets
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"


def _digest(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


@dataclass
class Repo:
    tags: dict[str, str] = field(default_factory=dict)  # tag -> manifest digest
    manifests: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # digest -> (type, body)
    blobs: dict[str, bytes] = field(default_factory=dict)


class FakeRegistry:
    """Start with `with FakeRegistry() as reg:`; `reg.url` is its base URL."""

    def __init__(self, auth: bool = True, port: int = 0):
        self.auth = auth
        self.repos: dict[str, Repo] = {}
        self.packages: dict[str, list[str]] = {}  # normalized project -> file names
        self.tokens: set[str] = set()
        self.requests: list[dict] = []  # {method, path, authorization, if_none_match, status}
        self.hang: set[str] = set()  # paths (substrings) that never answer in time
        self.lie: dict[str, str] = {}  # ref -> a wrong Docker-Content-Digest to send
        self.huge: set[str] = set()  # paths (substrings) answered with an endless body
        self.hang_seconds = 30.0
        self.realm: str | None = None  # where the 401 challenge sends clients for a token
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeRegistry:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ seeding

    def add_image(
        self,
        name: str,
        tag: str | None = None,
        labels: dict[str, str] | None = None,
        *,
        index: bool = True,
    ) -> str:
        """An image (linux/amd64, in an OCI index unless `index` is False) -> its digest."""
        repo = self.repos.setdefault(name, Repo())
        config = json.dumps(
            {"architecture": "amd64", "os": "linux", "config": {"Labels": labels or {}}},
            sort_keys=True,
        ).encode()
        repo.blobs[_digest(config)] = config
        man = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST,
                "config": {"mediaType": CONFIG, "digest": _digest(config), "size": len(config)},
                "layers": [],
            }
        ).encode()
        repo.manifests[_digest(man)] = (MANIFEST, man)
        top = man
        if index:
            top = json.dumps(
                {
                    "schemaVersion": 2,
                    "mediaType": INDEX,
                    "manifests": [
                        {
                            "mediaType": MANIFEST,
                            "digest": _digest(man),
                            "size": len(man),
                            "platform": {"architecture": "amd64", "os": "linux"},
                        }
                    ],
                }
            ).encode()
            repo.manifests[_digest(top)] = (INDEX, top)
        if tag:
            repo.tags[tag] = _digest(top)
        return _digest(top)

    def purge(self, name: str, ref: str) -> None:
        """Delete a tag (and, for a digest, the manifest): the registry answers 404 after."""
        repo = self.repos[name]
        repo.tags.pop(ref, None)
        repo.manifests.pop(ref, None)

    def add_package(self, project: str, *files: str) -> None:
        self.packages.setdefault(re.sub(r"[-_.]+", "-", project).lower(), []).extend(files)

    # ------------------------------------------------------------------ answering

    def answer(self, method: str, path: str, query: dict, headers: dict) -> tuple[int, dict, bytes]:
        if path == "/token":
            token = secrets.token_hex(8)
            self.tokens.add(token)
            return 200, {"Content-Type": "application/json"}, json.dumps({"token": token}).encode()
        m = re.match(r"^/simple/([^/]+)/$", path)
        if m:
            files = self.packages.get(m.group(1))
            if files is None:
                return 404, {}, b"not found"
            body = {"meta": {"api-version": "1.0"}, "name": m.group(1)}
            body["files"] = [{"filename": f, "url": f"/files/{f}", "hashes": {}} for f in files]
            return (
                200,
                {"Content-Type": "application/vnd.pypi.simple.v1+json"},
                json.dumps(body).encode(),
            )
        m = re.match(r"^/v2/(.+)/(manifests|blobs)/([^/]+)$", path)
        if not m:
            return 404, {}, b""
        name, what, ref = m.groups()
        if self.auth:
            auth = headers.get("authorization", "")
            if not auth.startswith("Bearer ") or auth[7:] not in self.tokens:
                challenge = (
                    f'Bearer realm="{self.realm or self.url + "/token"}",service="fake-registry",'
                    f'scope="repository:{name}:pull"'
                )
                return 401, {"WWW-Authenticate": challenge}, _error("UNAUTHORIZED")
        repo = self.repos.get(name)
        if repo is None:
            return 404, {}, _error("NAME_UNKNOWN")
        if what == "blobs":
            blob = repo.blobs.get(ref)
            return (
                (200, {"Content-Type": CONFIG}, blob) if blob else (404, {}, _error("BLOB_UNKNOWN"))
            )
        digest = repo.tags.get(ref, ref if ref in repo.manifests else None)
        if digest is None or digest not in repo.manifests:
            return 404, {}, _error("MANIFEST_UNKNOWN")
        media, body = repo.manifests[digest]
        etag = f'"{digest}"'
        out = {
            "Content-Type": media,
            "Docker-Content-Digest": self.lie.get(ref, digest),
            "ETag": etag,
        }
        if headers.get("if-none-match") == etag:
            return 304, out, b""
        return 200, out, body


def _error(code: str) -> bytes:
    return json.dumps({"errors": [{"code": code, "message": code.lower()}]}).encode()


def _handler(reg: FakeRegistry):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _serve(self, method: str) -> None:
            parts = urlsplit(self.path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            record = {
                "method": method,
                "path": parts.path,
                "authorization": headers.get("authorization"),
                "if_none_match": headers.get("if-none-match"),
                "status": 0,
            }
            with reg._lock:
                reg.requests.append(record)
            if any(h in parts.path for h in reg.hang):
                time.sleep(reg.hang_seconds)
                return
            if any(h in parts.path for h in reg.huge):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Docker-Content-Digest", "sha256:" + "0" * 64)
                self.end_headers()
                if method == "GET":
                    try:
                        for _ in range(64 * 1024):
                            self.wfile.write(b" " * 1024)
                    except OSError:
                        pass
                self.close_connection = True
                return
            with reg._lock:
                status, out, body = reg.answer(method, parts.path, parse_qs(parts.query), headers)
            record["status"] = status
            self.send_response(status)
            for k, v in out.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if method != "HEAD" and status != 304:
                self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (http.server's names)
            self._serve("GET")

        def do_HEAD(self) -> None:  # noqa: N802
            self._serve("HEAD")

    return Handler


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m watcher.fakes.registry", description=__doc__.splitlines()[0]
    )
    ap.add_argument(
        "--publish",
        nargs="+",
        default=[],
        metavar="NAME:TAG",
        help="images to publish (docker.io names: lmsysorg/sglang:v0.1.0); any other tag is a 404",
    )
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    args = ap.parse_args(argv)
    images = []
    for ref in args.publish:
        name, sep, tag = ref.rpartition(":")
        if not sep or not name or "/" in tag:
            print(f"error: --publish {ref!r} is not NAME:TAG", file=sys.stderr)
            return 2
        images.append((name if "/" in name else f"library/{name}", tag))  # docker's rule
    try:
        reg = FakeRegistry(port=args.port)
    except OSError as e:
        print(f"error: cannot serve on 127.0.0.1:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 1
    for name, tag in images:
        reg.add_image(name, tag, {"org.opencontainers.image.version": tag.removeprefix("v")})
    with reg:
        print(f"export WATCHER_REGISTRY_MAP=docker.io={reg.url}", flush=True)
        print(
            f"fake registry on {reg.url} ({len(args.publish)} images); Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )
        done = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: done.set())
        try:
            done.wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
