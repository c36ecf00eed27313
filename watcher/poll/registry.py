"""An OCI registry, read anonymously: does a pinned image still exist, its digest, its labels.

The distribution API (`HEAD /v2/<name>/manifests/<ref>`, `Docker-Content-Digest`, the
anonymous bearer-token flow of Docker Hub and GHCR: a 401 with `WWW-Authenticate: Bearer
realm=…,service=…,scope=…`, then GET the realm for a pull token). `docker` is not needed.

Bounded and hostile-safe: a client of its own with no credentials (the GitHub token never goes
here, nor .netrc), a total deadline per request, answers cut at a size cap and checked for
shape, a config blob checked against its digest, plain HTTP only for loopback hosts. Every
failure is a RegistryError for one pin; it never stops a cycle.
`WATCHER_REGISTRY_MAP="docker.io=http://127.0.0.1:5000,ghcr.io=…"` points hosts elsewhere.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from watcher import __version__
from watcher.core.errors import ConfigError, WatcherError

MAP_ENV = "WATCHER_REGISTRY_MAP"
DEFAULT_BASES = {"docker.io": "https://registry-1.docker.io"}
MANIFEST_TYPES = ", ".join(
    (
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)
MAX_MANIFEST_BYTES = 4 * 1024 * 1024  # the distribution spec's own suggested limit
MAX_CONFIG_BYTES = 1024 * 1024
MAX_TOKEN_BYTES = 64 * 1024
MAX_INDEX_BYTES = 8 * 1024 * 1024  # a project's simple page (vLLM's lists hundreds of files)
DEFAULT_INDEX = "https://pypi.org/simple"
DEADLINE = 20.0  # seconds, whole request, body included
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_PARAM = re.compile(r'(\w+)="([^"]*)"')


class RegistryError(WatcherError):
    """A registry could not say (unreachable, slow, too large, malformed, refused)."""


class Unreachable(RegistryError):
    """No answer in time (or no connection): the host is not asked again in this check."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_url(url: str) -> bool:
    """https anywhere; plain http only to a loopback address, as docker allows."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return bool(parts.hostname)
    return parts.scheme == "http" and is_loopback(parts.hostname or "")


def registry_map(environ: dict[str, str] | None = None) -> dict[str, str]:
    """WATCHER_REGISTRY_MAP read: host -> base URL; a bad entry is a ConfigError naming it."""
    text = (os.environ if environ is None else environ).get(MAP_ENV, "")
    out: dict[str, str] = {}
    for entry in filter(None, (e.strip() for e in text.split(","))):
        host, sep, url = entry.partition("=")
        if not sep or not host.strip() or not url.strip():
            raise ConfigError(f"{MAP_ENV}: {entry!r} is not host=URL")
        if not allowed_url(url.strip()):
            raise ConfigError(
                f"{MAP_ENV}: {url.strip()!r} for {host.strip()} must be https, or http on a"
                " loopback address (127.0.0.1, ::1, localhost)"
            )
        out[host.strip()] = url.strip().rstrip("/")
    return out


@dataclass
class Head:
    """A manifest's existence: `exists` False only on a 404 (the registry says it is gone)."""

    exists: bool
    digest: str = ""
    etag: str = ""
    not_modified: bool = False
    requests: int = 0


class Registry:
    """One anonymous client for every registry a cycle asks; pull tokens kept per scope."""

    def __init__(self, mapping: dict[str, str] | None = None, timeout: float = DEADLINE):
        self.mapping = registry_map() if mapping is None else mapping
        self.timeout = timeout
        self.requests = 0
        self._tokens: dict[tuple[str, str], str] = {}  # (registry, scope) -> token
        self._down: dict[str, str] = {}  # registry -> why it is not asked again
        self._by_repo: dict[tuple[str, str], str] = {}  # (registry, /v2/name) -> token
        # trust_env=False: no proxy credentials, no .netrc; no Authorization unless a token
        self.http = httpx.Client(
            timeout=httpx.Timeout(timeout),
            trust_env=False,
            follow_redirects=False,
            headers={"User-Agent": f"watcher/{__version__}"},
        )

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def base(self, registry: str) -> str:
        url = self.mapping.get(registry) or DEFAULT_BASES.get(registry) or f"https://{registry}"
        if not allowed_url(url):
            raise RegistryError(f"{registry}: refusing {url} (plain http off loopback)")
        return url

    # ------------------------------------------------------------------ transport

    def _send(
        self, method: str, url: str, headers: dict[str, str], cap: int, redirects: int = 3
    ) -> tuple[httpx.Response, bytes]:
        """One request, its body read within `cap` bytes and the deadline; redirects followed
        only to https (or loopback), and never with our Authorization to another host."""
        end = time.monotonic() + self.timeout
        for _ in range(redirects + 1):
            if not allowed_url(url):
                raise RegistryError(f"refusing to follow to {url}")
            self.requests += 1
            try:
                with self.http.stream(method, url, headers=headers) as r:
                    body = bytearray()
                    if method != "HEAD":
                        for chunk in r.iter_bytes():
                            body += chunk
                            if len(body) > cap:
                                raise RegistryError(f"{url}: answer larger than {cap} bytes")
                            if time.monotonic() > end:
                                raise Unreachable(f"{url}: no full answer in {self.timeout:g} s")
            except (httpx.TimeoutException, httpx.NetworkError) as e:
                raise Unreachable(f"{url}: {type(e).__name__}: {e}") from None
            except httpx.HTTPError as e:
                raise RegistryError(f"{url}: {type(e).__name__}: {e}") from None
            if r.status_code in (301, 302, 303, 307, 308) and r.headers.get("location"):
                nxt = str(httpx.URL(url).join(r.headers["location"]))
                if urlsplit(nxt).netloc != urlsplit(url).netloc:
                    headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
                url = nxt
                continue
            return r, bytes(body)
        raise RegistryError(f"{url}: too many redirects")

    def _token(self, registry: str, challenge: str) -> str:
        """The anonymous pull token a `Bearer realm=…` challenge points at."""
        if not challenge.lower().startswith("bearer "):
            raise RegistryError(f"{registry}: asks for {challenge.split(' ')[0]!r} auth")
        params = dict(_PARAM.findall(challenge))
        realm = params.get("realm", "")
        if not allowed_url(realm):
            raise RegistryError(f"{registry}: token realm {realm!r} refused (https or loopback)")
        key = (registry, params.get("scope", ""))
        if key in self._tokens:
            return self._tokens[key]
        query = httpx.QueryParams({k: v for k, v in params.items() if k in ("service", "scope")})
        r, body = self._send("GET", f"{realm}?{query}", {}, MAX_TOKEN_BYTES)
        if r.status_code != 200:
            raise RegistryError(f"{registry}: token endpoint answered HTTP {r.status_code}")
        data = _json(body, f"{registry} token")
        token = data.get("token") or data.get("access_token")
        if not isinstance(token, str) or not token or len(token) > 8192:
            raise RegistryError(f"{registry}: token endpoint gave no token")
        self._tokens[key] = token
        return token

    def _request(
        self, method: str, registry: str, path: str, headers: dict[str, str], cap: int
    ) -> tuple[httpx.Response, bytes]:
        """A request to the registry, with the pull token its repository was last given (so a
        second read costs no 401 round), or after a 401 challenge with a fresh one."""
        if registry in self._down:
            raise RegistryError(
                f"{registry}: not asked again in this check ({self._down[registry]})"
            )
        try:
            return self._ask(method, registry, path, headers, cap)
        except Unreachable as e:
            self._down[registry] = str(e)
            raise

    def _ask(
        self, method: str, registry: str, path: str, headers: dict[str, str], cap: int
    ) -> tuple[httpx.Response, bytes]:
        url = self.base(registry) + path
        key = (registry, path.split("/manifests/")[0].split("/blobs/")[0])
        sent = dict(headers)
        if key in self._by_repo:
            sent["Authorization"] = f"Bearer {self._by_repo[key]}"
        r, body = self._send(method, url, sent, cap)
        if r.status_code == 401 and "www-authenticate" in r.headers:
            self._tokens.pop((registry, _scope(r.headers["www-authenticate"])), None)
            token = self._token(registry, r.headers["www-authenticate"])
            self._by_repo[key] = token
            r, body = self._send(method, url, {**headers, "Authorization": f"Bearer {token}"}, cap)
        return r, body

    # ------------------------------------------------------------------ reads

    def head(self, registry: str, name: str, ref: str, etag: str = "") -> Head:
        """Does `name:ref` (or `name@digest`) exist? A 404 says no; anything else unclear
        raises RegistryError (the pin is then stale, its last state kept)."""
        before = self.requests
        headers = {"Accept": MANIFEST_TYPES}
        if etag:
            headers["If-None-Match"] = etag
        r, _ = self._request("HEAD", registry, f"/v2/{name}/manifests/{ref}", headers, 0)
        spent = self.requests - before
        if r.status_code == 304:
            return Head(True, etag=etag, not_modified=True, requests=spent)
        if r.status_code == 404:
            return Head(False, requests=spent)
        if r.status_code != 200:
            raise RegistryError(f"{registry}/{name}:{ref}: HTTP {r.status_code}")
        digest = r.headers.get("docker-content-digest", "")
        if not digest:  # some registries omit it on HEAD: the body's hash is the digest
            digest = "sha256:" + hashlib.sha256(self.manifest(registry, name, ref)[1]).hexdigest()
            spent = self.requests - before
        if not _DIGEST.match(digest):
            raise RegistryError(f"{registry}/{name}:{ref}: digest {digest[:80]!r} is malformed")
        if _DIGEST.match(ref) and digest != ref:
            raise RegistryError(f"{registry}/{name}@{ref}: answered for another digest {digest}")
        return Head(True, digest, r.headers.get("etag", ""), requests=spent)

    def manifest(self, registry: str, name: str, ref: str) -> tuple[dict[str, Any], bytes]:
        r, body = self._request(
            "GET", registry, f"/v2/{name}/manifests/{ref}", {"Accept": MANIFEST_TYPES},
            MAX_MANIFEST_BYTES,
        )  # fmt: skip
        if r.status_code != 200:
            raise RegistryError(f"{registry}/{name}:{ref}: manifest answered HTTP {r.status_code}")
        if _DIGEST.match(ref) and "sha256:" + hashlib.sha256(body).hexdigest() != ref:
            raise RegistryError(f"{registry}/{name}@{ref}: the manifest does not hash to it")
        return _json(body, f"{registry}/{name}:{ref} manifest"), body

    def labels(self, registry: str, name: str, ref: str) -> dict[str, str]:
        """The image config's labels (linux/amd64 of a multi-platform image)."""
        data, _ = self.manifest(registry, name, ref)
        if isinstance(data.get("manifests"), list):
            chosen = _platform(data["manifests"])
            if chosen is None:
                raise RegistryError(f"{registry}/{name}:{ref}: no linux/amd64 image in its index")
            data, _ = self.manifest(registry, name, chosen)
        config = data.get("config")
        digest = config.get("digest") if isinstance(config, dict) else None
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            raise RegistryError(f"{registry}/{name}:{ref}: its manifest names no config blob")
        r, body = self._request("GET", registry, f"/v2/{name}/blobs/{digest}", {}, MAX_CONFIG_BYTES)
        if r.status_code != 200:
            raise RegistryError(f"{registry}/{name}: config blob answered HTTP {r.status_code}")
        if "sha256:" + hashlib.sha256(body).hexdigest() != digest:
            raise RegistryError(f"{registry}/{name}: the config blob does not hash to {digest}")
        blob = _json(body, f"{registry}/{name} config")
        inner = blob.get("config") if isinstance(blob.get("config"), dict) else {}
        labels = inner.get("Labels") or {}
        if not isinstance(labels, dict):
            return {}
        return {str(k)[:200]: str(v)[:500] for k, v in list(labels.items())[:200]}

    def package(self, index: str, project: str, version: str) -> bool:
        """Does `project==version` have a file on the PEP 503/691 simple index `index`?"""
        normal = re.sub(r"[-_.]+", "-", project).lower()
        url = f"{(index or DEFAULT_INDEX).rstrip('/')}/{normal}/"
        accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
        r, body = self._send("GET", url, {"Accept": accept}, MAX_INDEX_BYTES)
        if r.status_code == 404:
            return False
        if r.status_code != 200:
            raise RegistryError(f"{url}: HTTP {r.status_code}")
        if "json" in r.headers.get("content-type", ""):
            files = _json(body, url).get("files") or []
            names = [f.get("filename", "") for f in files if isinstance(f, dict)]
        else:
            text = body.decode("utf-8", "replace")
            names = [
                h.split("#")[0].rsplit("/", 1)[-1] for h in re.findall(r'href="([^"]+)"', text)
            ]
        stem = re.sub(r"[-_.]+", "[-_.]", re.escape(normal).replace("\\-", "-"))
        pattern = re.compile(rf"^{stem}-{re.escape(version)}(?:-|\.tar|\.zip)", re.I)
        return any(pattern.match(str(n)) for n in names)


def _scope(challenge: str) -> str:
    return dict(_PARAM.findall(challenge)).get("scope", "")


def _platform(entries: list[Any]) -> str | None:
    for e in entries:
        if not isinstance(e, dict):
            continue
        p = e.get("platform") or {}
        if p.get("os") == "linux" and p.get("architecture") == "amd64":
            d = e.get("digest")
            return d if isinstance(d, str) and _DIGEST.match(d) else None
    return None


def _json(body: bytes, what: str) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise RegistryError(f"{what} is not JSON") from None
    if not isinstance(data, dict):
        raise RegistryError(f"{what} is not a JSON object")
    return data
