"""Small pure helpers of the fake GitHub: stable ids, node ids, shas and GitHub's time format."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import formatdate

WEB = "https://github.com"
DOCS = "https://docs.github.com/rest"
JSON_TYPE = "application/json; charset=utf-8"


def num(*parts: object) -> int:
    """A stable positive id from names, so the same seed data always renders the same JSON."""
    digest = hashlib.sha1("|".join(str(p) for p in parts).encode()).hexdigest()
    return int(digest[:8], 16) + 1


def node(kind: str, ident: int) -> str:
    return base64.b64encode(f"0{len(kind)}:{kind}{ident}".encode()).decode().rstrip("=")


def sha(*parts: object) -> str:
    return hashlib.sha1("\n".join(str(p) for p in parts).encode()).hexdigest()


def blob_sha(data: bytes) -> str:
    """Git's blob id, so a sha the fake gives matches what `git hash-object` says."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def color(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()[:6]


def parse_time(value: str | datetime) -> datetime:
    if isinstance(value, datetime):
        dt = value
    else:
        text = value.strip()
        if len(text) == 10:
            text += "T00:00:00"
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def iso(value: str | datetime | None) -> str | None:
    """Normalise to GitHub's `2026-06-12T15:04:11Z`."""
    if value is None:
        return None
    return parse_time(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def later(stamp: str, seconds: float) -> str:
    return iso(parse_time(stamp) + timedelta(seconds=seconds))


def http_date(stamp: str) -> str:
    return formatdate(parse_time(stamp).timestamp(), usegmt=True)


def json_bytes(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def error_body(status: int, message: str) -> dict:
    return {"message": message, "documentation_url": DOCS, "status": str(status)}


def split_repo(repo: str) -> tuple[str, str]:
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise ValueError(f"repo must look like 'owner/name', got {repo!r}")
    return owner, name


def to_int(value: str | None, default: int) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


@dataclass
class Reply:
    status: int
    body: bytes = b""
    headers: dict = field(default_factory=dict)
    cacheable: bool = False  # a GET 200 that gets an ETag and may become a 304
    last_modified: str | None = None  # ISO 8601, sent as Last-Modified
    rate_free: bool = False  # costs no rate limit and carries no x-ratelimit-* headers
