"""What the registry client must refuse or pick, each a fault that once passed every test
(issue 32's mutation set): a manifest fetched by digest that hashes to something else, the
wrong platform of a multi-platform image, and a pull token carried along a redirect to another
host. Against the fake OCI registry, and one small redirecting server, over real HTTP."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from watcher.fakes.registry import INDEX, MANIFEST, FakeRegistry
from watcher.poll.registry import Registry, RegistryError


@pytest.fixture
def reg():
    with FakeRegistry() as r:
        yield r


def test_a_manifest_asked_by_digest_must_hash_to_it(reg):
    good = reg.add_image("ik/ik", "t", index=False)
    other = reg.add_image("ik/ik", "u", {"tampered": "yes"}, index=False)
    repo = reg.repos["ik/ik"]
    repo.manifests[good] = repo.manifests[other]  # the registry answers another body for it
    with Registry({"docker.io": reg.url}, timeout=2.0) as r:
        with pytest.raises(RegistryError, match="does not hash to it"):
            r.manifest("docker.io", "ik/ik", good)
        data, _ = r.manifest("docker.io", "ik/ik", "u")  # by tag, no digest to hold it to
        assert data["config"]["digest"]


def test_the_labels_are_linux_amd64s_whatever_the_index_lists_first(reg):
    arm = reg.add_image("vllm/vllm", None, {"org.opencontainers.image.revision": "a" * 40},
                        index=False)  # fmt: skip
    amd = reg.add_image("vllm/vllm", None, {"org.opencontainers.image.revision": "b" * 40},
                        index=False)  # fmt: skip
    repo = reg.repos["vllm/vllm"]

    def entry(digest: str, arch: str) -> dict:
        body = repo.manifests[digest][1]
        return {"mediaType": MANIFEST, "digest": digest, "size": len(body),
                "platform": {"architecture": arch, "os": "linux"}}  # fmt: skip

    index = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": INDEX,
            "manifests": [entry(arm, "arm64"), entry(amd, "amd64")],
        }  # fmt: skip
    ).encode()
    top = "sha256:" + hashlib.sha256(index).hexdigest()
    repo.manifests[top] = (INDEX, index)
    repo.tags["nightly"] = top
    with Registry({"docker.io": reg.url}, timeout=2.0) as r:
        labels = r.labels("docker.io", "vllm/vllm", "nightly")
    assert labels == {"org.opencontainers.image.revision": "b" * 40}


class _Redirecting(BaseHTTPRequestHandler):
    """127.0.0.1 asks for a token, then sends the authorised read on to `localhost` (another
    host by name: the token must not follow). Every request's Host and Authorization kept."""

    seen: list[tuple[str, str | None]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's names)
        host = self.headers.get("Host", "")
        auth = self.headers.get("Authorization")
        self.seen.append((host, auth))
        port = self.server.server_address[1]
        if self.path.startswith("/token"):
            return self._send(200, json.dumps({"token": "pull-token"}).encode())
        if host.startswith("127.0.0.1") and auth is None:
            realm = f'Bearer realm="http://127.0.0.1:{port}/token",scope="repository:x:pull"'
            return self._send(401, b"{}", {"WWW-Authenticate": realm})
        if host.startswith("127.0.0.1"):
            return self._send(307, b"", {"Location": f"http://localhost:{port}{self.path}"})
        return self._send(404, b"{}")

    def _send(self, code: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_redirect_to_another_host_does_not_carry_the_pull_token():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Redirecting.seen = []
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with Registry({"docker.io": base}, timeout=2.0) as r:
            with pytest.raises(RegistryError):
                r.manifest("docker.io", "x", "t")  # the other host has no such manifest
    finally:
        server.shutdown()
        server.server_close()
    hops = [(host.split(":")[0], auth) for host, auth in _Redirecting.seen]
    assert ("127.0.0.1", "Bearer pull-token") in hops  # the token was used where it was given
    assert [auth for host, auth in hops if host == "localhost"] == [None]
