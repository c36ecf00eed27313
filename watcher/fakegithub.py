"""A fake GitHub REST v3 server: real HTTP on 127.0.0.1, GitHub's documented shapes.

Tests and `watcher demo` point the GitHub client at `FakeGitHub().start().url` instead of
https://api.github.com. It is threaded (slow answers overlap), keeps rate-limit accounting,
answers conditional requests with 304, paginates with `Link` headers and can inject faults
(error statuses, timeouts, resets, truncated or malformed bodies, redirects).

Only the standard library is used: this module ships in the package and must run offline.
Every response object is built here, in code, with the fields GitHub's OpenAPI description
requires; `tests/test_fakegithub.py` validates them against that description.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import re
import socket
import struct
import sys
import threading
import time
import traceback
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import formatdate, parsedate_to_datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

__all__ = ["FakeGitHub", "Recorded", "real_threads"]

WEB = "https://github.com"
DOCS = "https://docs.github.com/rest"
JSON_TYPE = "application/json; charset=utf-8"
TIMEOUT_FAULT_S = 30.0
FAULT_MODES = ("status", "timeout", "reset", "truncated", "malformed", "redirect")

# Fields an issue or pull record keeps; `update()` puts anything else into "extra", which is
# laid over the rendered JSON (so a test can set e.g. locked=True).
_RECORD_FIELDS = {
    "title",
    "state",
    "state_reason",
    "created_at",
    "updated_at",
    "closed_at",
    "labels",
    "body",
    "user",
    "draft",
    "merged",
    "merge_commit_sha",
    "merged_at",
    "head_ref",
    "base_ref",
}
_DATE_FIELDS = {"created_at", "updated_at", "closed_at", "merged_at"}


@dataclass
class Recorded:
    """One request as the server saw it. `status` is 0 until an answer is sent (or never is)."""

    method: str
    path: str
    query: dict
    headers: dict
    status: int
    body: bytes


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern
    status: int
    times: int
    headers: dict
    body: bytes | str | dict | None
    mode: str


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: dict = field(default_factory=dict)
    cacheable: bool = False  # a GET 200 that gets an ETag and may become a 304
    last_modified: str | None = None  # ISO 8601, sent as Last-Modified
    rate_free: bool = False  # costs no rate limit and carries no x-ratelimit-* headers


class _HTTPError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


# --------------------------------------------------------------------------- small helpers


def _num(*parts: object) -> int:
    """A stable positive id from names, so the same seed data always renders the same JSON."""
    digest = hashlib.sha1("|".join(str(p) for p in parts).encode()).hexdigest()
    return int(digest[:8], 16) + 1


def _node(kind: str, ident: int) -> str:
    return base64.b64encode(f"0{len(kind)}:{kind}{ident}".encode()).decode().rstrip("=")


def _sha(*parts: object) -> str:
    return hashlib.sha1("\n".join(str(p) for p in parts).encode()).hexdigest()


def _parse_time(value: str | datetime) -> datetime:
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


def _iso(value: str | datetime | None) -> str | None:
    """Normalise to GitHub's `2026-06-12T15:04:11Z`."""
    if value is None:
        return None
    return _parse_time(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _later(iso: str, seconds: float) -> str:
    return _iso(_parse_time(iso) + timedelta(seconds=seconds))


def _http_date(iso: str) -> str:
    return formatdate(_parse_time(iso).timestamp(), usegmt=True)


def _json_bytes(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def _error_body(status: int, message: str) -> dict:
    return {"message": message, "documentation_url": DOCS, "status": str(status)}


def _split_repo(repo: str) -> tuple[str, str]:
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise ValueError(f"repo must look like 'owner/name', got {repo!r}")
    return owner, name


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default


# --------------------------------------------------------------------------- data records


class _Repo:
    def __init__(self, full_name: str):
        self.full_name = full_name
        self.owner, self.name = _split_repo(full_name)
        self.id = _num("repo", full_name.lower())
        self.issues: dict[int, dict] = {}
        self.timelines: dict[int, list[dict]] = {}
        self.commits: list[dict] = []
        self.sha_index: dict[str, int] = {}
        self.tags: dict[str, str] = {}
        self.releases: list[dict] = []
        self.workflows: dict[str, dict] = {}


# --------------------------------------------------------------------------- the server


class FakeGitHub:
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
    ):
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
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        self._repos: dict[str, _Repo] = {}
        self._repo_ids: dict[int, _Repo] = {}
        self._faults: list[_Fault] = []
        self._comments: dict[int, dict] = {}
        self._next_comment_id = 3_000_000_001
        self._runs: dict[int, dict] = {}
        self._next_run_id = 17_000_000_001
        self._artifacts: dict[int, dict] = {}
        self._next_artifact_id = 2_400_000_001
        self._event_seq = 0

    # ---------------------------------------------------------------- lifecycle

    def _bind(self) -> _Server:
        if self._server is None:
            self._server = _Server(("127.0.0.1", 0), _Handler)
            self._server.fake = self
        return self._server

    @property
    def url(self) -> str:
        """The base URL, e.g. http://127.0.0.1:54321 (the socket is bound on first use)."""
        return f"http://127.0.0.1:{self._bind().server_address[1]}"

    def start(self) -> FakeGitHub:
        """Bind 127.0.0.1:0 and serve from a daemon thread. Returns self."""
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

    # ---------------------------------------------------------------- seeding: issues, pulls

    def _repo(self, repo: str, create: bool = True) -> _Repo:
        key = repo.lower()
        found = self._repos.get(key)
        if found is None:
            if not create:
                raise KeyError(f"unknown repo {repo}")
            found = self._repos[key] = _Repo(repo)
            self._repo_ids[found.id] = found
        return found

    def _record(self, repo: str, number: int) -> dict:
        with self._lock:
            found = self._repos.get(repo.lower())
            if found is None or number not in found.issues:
                raise KeyError(f"no issue or pull {repo}#{number}")
            return found.issues[number]

    def add_issue(
        self,
        repo: str,
        number: int,
        *,
        title: str,
        state: str = "open",
        state_reason: str | None = None,
        created_at: str | None = None,
        updated_at: str | None = None,
        closed_at: str | None = None,
        labels: Iterable[str | dict] = (),
        body: str = "",
        user: str = "someone",
    ) -> dict:
        """Seed an issue. A closed issue without a state_reason reads "completed", like GitHub."""
        if state == "closed" and state_reason is None:
            state_reason = "completed"
        return self._add(repo, number, False, locals())

    def add_pull(
        self,
        repo: str,
        number: int,
        *,
        title: str,
        state: str = "open",
        draft: bool = False,
        merged: bool = False,
        merge_commit_sha: str | None = None,
        merged_at: str | None = None,
        closed_at: str | None = None,
        created_at: str | None = None,
        updated_at: str | None = None,
        body: str = "",
        user: str = "someone",
        head_ref: str = "feature",
        base_ref: str = "main",
        labels: Iterable[str | dict] = (),
    ) -> dict:
        """Seed a pull request (it is an issue too). merged=True implies state "closed"."""
        return self._add(repo, number, True, locals())

    def _add(self, repo: str, number: int, is_pull: bool, args: dict) -> dict:
        with self._lock:
            r = self._repo(repo)
            rec = {k: args.get(k) for k in _RECORD_FIELDS}
            rec.update(repo=r, number=number, is_pull=is_pull, extra={})
            rec["labels"] = list(args.get("labels") or ())
            rec["draft"] = bool(rec["draft"])
            rec["merged"] = bool(rec["merged"])
            for k in _DATE_FIELDS:
                rec[k] = _iso(rec[k])
            rec["created_at"] = rec["created_at"] or "2026-01-05T09:00:00Z"
            self._settle(rec, fallback=rec["updated_at"] or rec["created_at"])
            if not rec["updated_at"]:
                stamps = [rec["created_at"], rec["closed_at"], rec["merged_at"]]
                rec["updated_at"] = max(s for s in stamps if s)
            r.issues[number] = rec
            r.timelines.setdefault(number, [])
            return self._issue_json(rec) if not is_pull else self._pull_json(rec)

    @staticmethod
    def _settle(rec: dict, fallback: str) -> None:
        """Make merged/closed fields agree with each other, the way GitHub keeps them."""
        if rec["merged"]:
            rec["state"] = "closed"
            rec["merged_at"] = rec["merged_at"] or rec["closed_at"] or fallback
            rec["merge_commit_sha"] = rec["merge_commit_sha"] or _sha(
                "merge", rec["repo"].full_name, rec["number"]
            )
        if rec["state"] == "closed":
            rec["closed_at"] = rec["closed_at"] or rec["merged_at"] or fallback
        else:
            rec["closed_at"] = None
            rec["merged_at"] = None

    def update(self, repo: str, number: int, **fields: object) -> None:
        """Change fields of an issue or pull; updated_at moves forward, so the ETag changes.

        Known fields (those of add_issue/add_pull) change the record; any other key is laid
        over the rendered JSON as-is. Closing sets closed_at, merging sets merged_at and the
        state, reopening clears closed_at and reads state_reason "reopened".
        """
        with self._lock:
            rec = self._record(repo, number)
            was_closed = rec["state"] == "closed"
            for key, value in fields.items():
                if key in _DATE_FIELDS:
                    value = _iso(value)
                if key == "labels":
                    value = list(value or ())
                if key in _RECORD_FIELDS:
                    rec[key] = value
                else:
                    rec["extra"][key] = value
            if "updated_at" in fields and fields["updated_at"]:
                stamp = rec["updated_at"]
            else:
                stamps = [_later(rec["updated_at"], 1)]
                stamps += [rec[k] for k in ("closed_at", "merged_at") if k in fields and rec[k]]
                stamp = max(stamps)
            self._settle(rec, fallback=stamp)
            if rec["state"] == "closed" and not was_closed and "state_reason" not in fields:
                rec["state_reason"] = None if rec["is_pull"] else "completed"
            if rec["state"] == "open" and was_closed and "state_reason" not in fields:
                rec["state_reason"] = "reopened"
            rec["updated_at"] = stamp

    # ---------------------------------------------------------------- seeding: timeline

    def add_cross_reference(
        self,
        repo: str,
        number: int,
        *,
        source_repo: str,
        source_number: int,
        created_at: str | None = None,
    ) -> None:
        """repo#number gets a `cross-referenced` event from source_repo#source_number.

        The source must already be seeded; its issue JSON is rendered at request time, so the
        event shows the source's current state (as GitHub does).
        """
        with self._lock:
            self._record(repo, number)
            source = self._record(source_repo, source_number)
            stamp = _iso(created_at) or source["created_at"]
            self._repo(repo).timelines[number].append(
                {
                    "_cross_ref": (source_repo, source_number),
                    "event": "cross-referenced",
                    "created_at": stamp,
                    "updated_at": stamp,
                }
            )

    def add_timeline_event(self, repo: str, number: int, event: dict) -> None:
        """Append any timeline event; missing common fields (id, actor, urls...) are filled in.

        `actor` may be a login string. A `label` given as a string becomes {"name", "color"}.
        """
        with self._lock:
            self._record(repo, number)
            r = self._repo(repo)
            self._event_seq += 1
            ident = _num("event", r.full_name, number, self._event_seq)
            ev = dict(event)
            ev.setdefault("id", ident)
            ev.setdefault("node_id", _node("IssueEvent", ev["id"]))
            ev.setdefault("url", f"/repos/{r.full_name}/issues/events/{ev['id']}")
            ev.setdefault("actor", "someone")
            ev.setdefault("event", "commented")
            ev.setdefault("commit_id", None)
            ev.setdefault("commit_url", None)
            ev["created_at"] = (
                _iso(ev.get("created_at")) or self._record(repo, number)["updated_at"]
            )
            ev.setdefault("performed_via_github_app", None)
            if isinstance(ev.get("label"), str):
                ev["label"] = {"name": ev["label"], "color": _color(ev["label"])}
            r.timelines[number].append(ev)

    # ---------------------------------------------------------------- seeding: git

    def add_commit(
        self,
        repo: str,
        sha: str | None = None,
        *,
        message: str,
        date: str,
        files: Iterable[str] = (),
        author: str = "dev",
    ) -> dict:
        """Append a commit to the repo's default branch (a linear history, insertion order)."""
        with self._lock:
            r = self._repo(repo)
            date = _iso(date)
            sha = sha or _sha(r.full_name, len(r.commits), message, date)
            if sha in r.sha_index:
                raise ValueError(f"commit {sha} already in {repo}")
            parent = r.commits[-1]["sha"] if r.commits else None
            rec = {
                "sha": sha,
                "message": message,
                "date": date,
                "files": list(files),
                "author": author,
                "parent": parent,
            }
            r.sha_index[sha] = len(r.commits)
            r.commits.append(rec)
            return self._commit_json(r, rec, detail=True)

    def add_tag(self, repo: str, name: str, sha: str | None = None) -> None:
        """A lightweight tag at `sha` (a full or abbreviated sha; default: the head commit)."""
        with self._lock:
            r = self._repo(repo)
            if not r.commits:
                raise ValueError(f"{repo} has no commits to tag")
            idx = len(r.commits) - 1 if sha is None else self._resolve(r, sha)
            if idx is None:
                raise ValueError(f"no commit {sha} in {repo}")
            r.tags[name] = r.commits[idx]["sha"]

    def add_release(
        self,
        repo: str,
        tag: str,
        *,
        published_at: str,
        name: str | None = None,
        draft: bool = False,
        prerelease: bool = False,
        sha: str | None = None,
        body: str = "",
    ) -> dict:
        """A release; also creates the tag (at `sha`, default head) unless it exists."""
        with self._lock:
            r = self._repo(repo)
            if tag not in r.tags or sha is not None:
                self.add_tag(repo, tag, sha)
            ident = _num("release", r.full_name, tag)
            rec = {
                "id": ident,
                "tag": tag,
                "name": name if name is not None else tag,
                "draft": draft,
                "prerelease": prerelease,
                "published_at": _iso(published_at),
                "body": body,
                "seq": len(r.releases),
            }
            r.releases = [x for x in r.releases if x["tag"] != tag] + [rec]
            return self._release_json(r, rec)

    # ---------------------------------------------------------------- seeding: comments

    def add_comment(
        self,
        repo: str,
        number: int,
        *,
        body: str,
        user: str = "someone",
        created_at: str | None = None,
    ) -> dict:
        """Seed a comment. Without created_at it is one minute after the previous one."""
        with self._lock:
            issue = self._record(repo, number)
            if created_at is None:
                prior = [c["created_at"] for c in self._issue_comments(issue)]
                created_at = _later(max(prior, default=issue["created_at"]), 60)
            return self._comment_json(self._new_comment(issue, body, user, _iso(created_at)))

    def _new_comment(self, issue: dict, body: str, user: str, stamp: str) -> dict:
        ident = self._next_comment_id
        self._next_comment_id += 1
        rec = {
            "id": ident,
            "issue": issue,
            "body": body,
            "user": user,
            "created_at": stamp,
            "updated_at": stamp,
        }
        self._comments[ident] = rec
        return rec

    def _issue_comments(self, issue: dict) -> list[dict]:
        return [c for c in self._comments.values() if c["issue"] is issue]

    def comments(self, repo: str, number: int) -> list[dict]:
        """The comments now stored on repo#number, oldest first, as GitHub renders them."""
        with self._lock:
            issue = self._record(repo, number)
            return [self._comment_json(c) for c in self._issue_comments(issue)]

    # ---------------------------------------------------------------- seeding: actions

    def add_workflow(
        self,
        repo: str,
        workflow_id: str,
        *,
        on_dispatch: Callable[[dict], dict[str, bytes]] | None = None,
        name: str | None = None,
        run_name: str | None = None,
        artifact_name: str = "artifact",
    ) -> None:
        """A dispatchable workflow (e.g. "smoke.yml").

        on_dispatch(inputs) runs in a thread when a run is dispatched; the files it returns
        become the run's single artifact (a zip called `artifact_name`). If it raises, the run
        concludes "failure" with no artifact. `run_name` is a str.format template over the
        inputs for the run's display_title (like `run-name:` in a workflow file).
        Each GET of actions/runs/{id} moves the run one step: queued -> in_progress -> completed.
        """
        with self._lock:
            r = self._repo(repo)
            r.workflows[workflow_id] = {
                "key": workflow_id,
                "id": _num("workflow", r.full_name, workflow_id),
                "name": name or workflow_id.rsplit(".", 1)[0],
                "path": f".github/workflows/{workflow_id}",
                "on_dispatch": on_dispatch,
                "run_name": run_name,
                "artifact_name": artifact_name,
                "runs": 0,
            }

    # ---------------------------------------------------------------- fault injection

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
                _Fault(
                    method.upper(),
                    re.compile(path_regex),
                    status,
                    times,
                    dict(headers or {}),
                    body,
                    mode,
                )
            )

    def _take_fault(self, method: str, target: str) -> _Fault | None:
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

    # ---------------------------------------------------------------- rendering

    def _api(self, r: _Repo) -> str:
        return f"{self.url}/repos/{r.full_name}"

    def _user(self, login: str) -> dict:
        ident = _num("user", login.lower())
        api = f"{self.url}/users/{quote(login)}"
        return {
            "login": login,
            "id": ident,
            "node_id": _node("User", ident),
            "avatar_url": f"https://avatars.githubusercontent.com/u/{ident}?v=4",
            "gravatar_id": "",
            "url": api,
            "html_url": f"{WEB}/{quote(login)}",
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": "Bot" if login.endswith("[bot]") else "User",
            "user_view_type": "public",
            "site_admin": False,
        }

    def _repo_json(self, r: _Repo) -> dict:
        api = self._api(r)
        owner = self._user(r.owner)
        owner["type"] = "Organization"
        pushed = r.commits[-1]["date"] if r.commits else "2026-01-01T00:00:00Z"
        return {
            "id": r.id,
            "node_id": _node("Repository", r.id),
            "name": r.name,
            "full_name": r.full_name,
            "private": False,
            "owner": owner,
            "html_url": f"{WEB}/{r.full_name}",
            "description": None,
            "fork": False,
            "url": api,
            "archive_url": f"{api}/{{archive_format}}{{/ref}}",
            "assignees_url": f"{api}/assignees{{/user}}",
            "blobs_url": f"{api}/git/blobs{{/sha}}",
            "branches_url": f"{api}/branches{{/branch}}",
            "collaborators_url": f"{api}/collaborators{{/collaborator}}",
            "comments_url": f"{api}/comments{{/number}}",
            "commits_url": f"{api}/commits{{/sha}}",
            "compare_url": f"{api}/compare/{{base}}...{{head}}",
            "contents_url": f"{api}/contents/{{+path}}",
            "contributors_url": f"{api}/contributors",
            "deployments_url": f"{api}/deployments",
            "downloads_url": f"{api}/downloads",
            "events_url": f"{api}/events",
            "forks_url": f"{api}/forks",
            "git_commits_url": f"{api}/git/commits{{/sha}}",
            "git_refs_url": f"{api}/git/refs{{/sha}}",
            "git_tags_url": f"{api}/git/tags{{/sha}}",
            "git_url": f"git://github.com/{r.full_name}.git",
            "issue_comment_url": f"{api}/issues/comments{{/number}}",
            "issue_events_url": f"{api}/issues/events{{/number}}",
            "issues_url": f"{api}/issues{{/number}}",
            "keys_url": f"{api}/keys{{/key_id}}",
            "labels_url": f"{api}/labels{{/name}}",
            "languages_url": f"{api}/languages",
            "merges_url": f"{api}/merges",
            "milestones_url": f"{api}/milestones{{/number}}",
            "notifications_url": f"{api}/notifications{{?since,all,participating}}",
            "pulls_url": f"{api}/pulls{{/number}}",
            "releases_url": f"{api}/releases{{/id}}",
            "ssh_url": f"git@github.com:{r.full_name}.git",
            "stargazers_url": f"{api}/stargazers",
            "statuses_url": f"{api}/statuses/{{sha}}",
            "subscribers_url": f"{api}/subscribers",
            "subscription_url": f"{api}/subscription",
            "tags_url": f"{api}/tags",
            "teams_url": f"{api}/teams",
            "trees_url": f"{api}/git/trees{{/sha}}",
            "clone_url": f"{WEB}/{r.full_name}.git",
            "mirror_url": None,
            "hooks_url": f"{api}/hooks",
            "svn_url": f"{WEB}/{r.full_name}",
            "homepage": None,
            "language": "Python",
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "size": 0,
            "default_branch": "main",
            "open_issues_count": sum(1 for i in r.issues.values() if i["state"] == "open"),
            "is_template": False,
            "topics": [],
            "has_issues": True,
            "has_projects": True,
            "has_wiki": False,
            "has_pages": False,
            "has_downloads": True,
            "has_discussions": False,
            "archived": False,
            "disabled": False,
            "visibility": "public",
            "pushed_at": pushed,
            "created_at": "2023-01-01T00:00:00Z",
            "updated_at": pushed,
            "license": None,
            "forks": 0,
            "open_issues": sum(1 for i in r.issues.values() if i["state"] == "open"),
            "watchers": 0,
        }

    def _labels(self, r: _Repo, labels: list) -> list[dict]:
        out = []
        for label in labels:
            spec = {"name": label} if isinstance(label, str) else dict(label)
            name = spec["name"]
            ident = _num("label", r.full_name, name)
            out.append(
                {
                    "id": ident,
                    "node_id": _node("Label", ident),
                    "url": f"{self._api(r)}/labels/{quote(name)}",
                    "name": name,
                    "description": spec.get("description"),
                    "color": spec.get("color") or _color(name),
                    "default": bool(spec.get("default", False)),
                }
            )
        return out

    @staticmethod
    def _reactions(url: str) -> dict:
        counts = dict.fromkeys(
            ("+1", "-1", "laugh", "hooray", "confused", "heart", "rocket", "eyes"), 0
        )
        return {"url": f"{url}/reactions", "total_count": 0, **counts}

    def _issue_json(self, rec: dict, with_repo: bool = False) -> dict:
        r, n = rec["repo"], rec["number"]
        api = self._api(r)
        ident = _num("issue", r.full_name.lower(), n)
        kind = "pull" if rec["is_pull"] else "issues"
        out = {
            "id": ident,
            "node_id": _node("PullRequest" if rec["is_pull"] else "Issue", ident),
            "url": f"{api}/issues/{n}",
            "repository_url": api,
            "labels_url": f"{api}/issues/{n}/labels{{/name}}",
            "comments_url": f"{api}/issues/{n}/comments",
            "events_url": f"{api}/issues/{n}/events",
            "html_url": f"{WEB}/{r.full_name}/{kind}/{n}",
            "number": n,
            "state": rec["state"],
            "title": rec["title"],
            "body": rec["body"] or None,
            "user": self._user(rec["user"]),
            "labels": self._labels(r, rec["labels"]),
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "locked": False,
            "active_lock_reason": None,
            "comments": len(self._issue_comments(rec)),
            "closed_at": rec["closed_at"],
            "created_at": rec["created_at"],
            "updated_at": rec["updated_at"],
            "closed_by": self._user(rec["user"]) if rec["state"] == "closed" else None,
            "author_association": "CONTRIBUTOR",
            "state_reason": rec["state_reason"],
            "reactions": self._reactions(f"{api}/issues/{n}"),
            "timeline_url": f"{api}/issues/{n}/timeline",
            "performed_via_github_app": None,
        }
        if rec["is_pull"]:
            html = f"{WEB}/{r.full_name}/pull/{n}"
            out["draft"] = rec["draft"]
            out["pull_request"] = {
                "url": f"{api}/pulls/{n}",
                "html_url": html,
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
                "merged_at": rec["merged_at"],
            }
        if with_repo:
            out["repository"] = self._repo_json(r)
        out.update({k: v for k, v in rec["extra"].items() if k in out})
        return out

    def _branch(self, rec: dict, ref: str, sha: str) -> dict:
        r = rec["repo"]
        return {
            "label": f"{r.owner}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": self._user(r.owner),
            "repo": self._repo_json(r),
        }

    def _pull_json(self, rec: dict) -> dict:
        r, n = rec["repo"], rec["number"]
        api = self._api(r)
        html = f"{WEB}/{r.full_name}/pull/{n}"
        ident = _num("pull", r.full_name.lower(), n)
        head_sha = _sha("head", r.full_name, n, rec["head_ref"])
        base_sha = r.commits[-1]["sha"] if r.commits else _sha("base", r.full_name, n)
        is_open = rec["state"] == "open"
        links = {
            "self": f"{api}/pulls/{n}",
            "html": html,
            "issue": f"{api}/issues/{n}",
            "comments": f"{api}/issues/{n}/comments",
            "review_comments": f"{api}/pulls/{n}/comments",
            "review_comment": f"{api}/pulls/comments{{/number}}",
            "commits": f"{api}/pulls/{n}/commits",
            "statuses": f"{api}/statuses/{head_sha}",
        }
        out = {
            "url": f"{api}/pulls/{n}",
            "id": ident,
            "node_id": _node("PullRequest", ident),
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "issue_url": f"{api}/issues/{n}",
            "commits_url": f"{api}/pulls/{n}/commits",
            "review_comments_url": f"{api}/pulls/{n}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{api}/issues/{n}/comments",
            "statuses_url": f"{api}/statuses/{head_sha}",
            "number": n,
            "state": rec["state"],
            "locked": False,
            "title": rec["title"],
            "user": self._user(rec["user"]),
            "body": rec["body"] or None,
            "labels": self._labels(r, rec["labels"]),
            "milestone": None,
            "active_lock_reason": None,
            "created_at": rec["created_at"],
            "updated_at": rec["updated_at"],
            "closed_at": rec["closed_at"],
            "merged_at": rec["merged_at"],
            "merge_commit_sha": rec["merge_commit_sha"],
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "head": self._branch(rec, rec["head_ref"], head_sha),
            "base": self._branch(rec, rec["base_ref"], base_sha),
            "_links": {k: {"href": v} for k, v in links.items()},
            "author_association": "CONTRIBUTOR",
            "auto_merge": None,
            "draft": rec["draft"],
            "merged": rec["merged"],
            "mergeable": (not rec["draft"]) if is_open else None,
            "rebaseable": (not rec["draft"]) if is_open else None,
            "mergeable_state": ("draft" if rec["draft"] else "clean") if is_open else "unknown",
            "merged_by": self._user(rec["user"]) if rec["merged"] else None,
            "comments": len(self._issue_comments(rec)),
            "review_comments": 0,
            "maintainer_can_modify": False,
            "commits": 1,
            "additions": 12,
            "deletions": 3,
            "changed_files": 2,
        }
        out.update({k: v for k, v in rec["extra"].items() if k in out})
        return out

    def _comment_json(self, c: dict) -> dict:
        issue = c["issue"]
        r = issue["repo"]
        api = self._api(r)
        kind = "pull" if issue["is_pull"] else "issues"
        return {
            "url": f"{api}/issues/comments/{c['id']}",
            "html_url": f"{WEB}/{r.full_name}/{kind}/{issue['number']}#issuecomment-{c['id']}",
            "issue_url": f"{api}/issues/{issue['number']}",
            "id": c["id"],
            "node_id": _node("IssueComment", c["id"]),
            "user": self._user(c["user"]),
            "created_at": c["created_at"],
            "updated_at": c["updated_at"],
            "author_association": "NONE",
            "body": c["body"],
            "reactions": self._reactions(f"{api}/issues/comments/{c['id']}"),
            "performed_via_github_app": None,
        }

    def _event_json(self, r: _Repo, ev: dict) -> dict:
        if "_cross_ref" in ev:
            src_repo, src_number = ev["_cross_ref"]
            source = self._record(src_repo, src_number)
            return {
                "event": "cross-referenced",
                "created_at": ev["created_at"],
                "updated_at": ev["updated_at"],
                "actor": self._user(source["user"]),
                "source": {"type": "issue", "issue": self._issue_json(source, with_repo=True)},
            }
        out = dict(ev)
        if isinstance(out.get("actor"), str):
            out["actor"] = self._user(out["actor"])
        if isinstance(out.get("url"), str) and out["url"].startswith("/"):
            out["url"] = self.url + out["url"]
        return out

    def _git_user(self, login: str, date: str) -> dict:
        return {"name": login, "email": f"{login}@users.noreply.github.com", "date": date}

    def _commit_json(self, r: _Repo, c: dict, detail: bool = False) -> dict:
        api = self._api(r)
        sha = c["sha"]
        tree = _sha("tree", sha)
        parents = []
        if c["parent"]:
            p = c["parent"]
            parents.append(
                {
                    "sha": p,
                    "url": f"{api}/commits/{p}",
                    "html_url": f"{WEB}/{r.full_name}/commit/{p}",
                }
            )
        out = {
            "sha": sha,
            "node_id": _node("Commit", _num("commit", sha)),
            "commit": {
                "author": self._git_user(c["author"], c["date"]),
                "committer": {"name": "GitHub", "email": "noreply@github.com", "date": c["date"]},
                "message": c["message"],
                "tree": {"sha": tree, "url": f"{api}/git/trees/{tree}"},
                "url": f"{api}/git/commits/{sha}",
                "comment_count": 0,
                "verification": {
                    "verified": False,
                    "reason": "unsigned",
                    "signature": None,
                    "payload": None,
                    "verified_at": None,
                },
            },
            "url": f"{api}/commits/{sha}",
            "html_url": f"{WEB}/{r.full_name}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "author": self._user(c["author"]),
            "committer": self._user("web-flow"),
            "parents": parents,
        }
        if detail:
            files = self._files_json(r, [c])
            adds = sum(f["additions"] for f in files)
            dels = sum(f["deletions"] for f in files)
            out["stats"] = {"total": adds + dels, "additions": adds, "deletions": dels}
            out["files"] = files
        return out

    def _files_json(self, r: _Repo, commits: list[dict]) -> list[dict]:
        seen: dict[str, dict] = {}
        for c in commits:
            for name in c["files"]:
                blob = _sha("blob", c["sha"], name)
                seen[name] = {
                    "sha": blob,
                    "filename": name,
                    "status": "modified",
                    "additions": 3,
                    "deletions": 1,
                    "changes": 4,
                    "blob_url": f"{WEB}/{r.full_name}/blob/{c['sha']}/{quote(name)}",
                    "raw_url": f"{WEB}/{r.full_name}/raw/{c['sha']}/{quote(name)}",
                    "contents_url": f"{self._api(r)}/contents/{quote(name)}?ref={c['sha']}",
                    "patch": "@@ -1,2 +1,4 @@",
                }
        return list(seen.values())

    def _release_json(self, r: _Repo, rel: dict) -> dict:
        api = self._api(r)
        tag = rel["tag"]
        published = None if rel["draft"] else rel["published_at"]
        return {
            "url": f"{api}/releases/{rel['id']}",
            "html_url": f"{WEB}/{r.full_name}/releases/tag/{quote(tag)}",
            "assets_url": f"{api}/releases/{rel['id']}/assets",
            "upload_url": f"{api}/releases/{rel['id']}/assets{{?name,label}}",
            "tarball_url": f"{api}/tarball/{quote(tag)}",
            "zipball_url": f"{api}/zipball/{quote(tag)}",
            "id": rel["id"],
            "node_id": _node("Release", rel["id"]),
            "tag_name": tag,
            "target_commitish": "main",
            "name": rel["name"],
            "body": rel["body"],
            "draft": rel["draft"],
            "prerelease": rel["prerelease"],
            "immutable": False,
            "created_at": _later(rel["published_at"], -600),
            "updated_at": rel["published_at"],
            "published_at": published,
            "author": self._user("release-manager"),
            "assets": [],
        }

    def _tag_json(self, r: _Repo, name: str, sha: str) -> dict:
        api = self._api(r)
        return {
            "name": name,
            "commit": {"sha": sha, "url": f"{api}/commits/{sha}"},
            "zipball_url": f"{api}/zipball/refs/tags/{quote(name)}",
            "tarball_url": f"{api}/tarball/refs/tags/{quote(name)}",
            "node_id": _node("Ref", _num("tag", r.full_name, name)),
        }

    def _run_json(self, run: dict) -> dict:
        r: _Repo = run["repo"]
        wf = run["workflow"]
        api = self._api(r)
        ident = run["id"]
        url = f"{api}/actions/runs/{ident}"
        suite = _num("suite", ident)
        return {
            "id": ident,
            "name": wf["name"],
            "node_id": _node("WorkflowRun", ident),
            "head_branch": run["ref"],
            "head_sha": run["head_sha"],
            "path": wf["path"],
            "display_title": run["display_title"],
            "run_number": run["run_number"],
            "run_attempt": 1,
            "event": "workflow_dispatch",
            "status": run["status"],
            "conclusion": run["conclusion"],
            "workflow_id": wf["id"],
            "check_suite_id": suite,
            "check_suite_node_id": _node("CheckSuite", suite),
            "url": url,
            "html_url": f"{WEB}/{r.full_name}/actions/runs/{ident}",
            "pull_requests": [],
            "created_at": run["created_at"],
            "updated_at": run["updated_at"],
            "run_started_at": run["created_at"],
            "actor": self._user(run["actor"]),
            "triggering_actor": self._user(run["actor"]),
            "jobs_url": f"{url}/jobs",
            "logs_url": f"{url}/logs",
            "check_suite_url": f"{api}/check-suites/{suite}",
            "artifacts_url": f"{url}/artifacts",
            "cancel_url": f"{url}/cancel",
            "rerun_url": f"{url}/rerun",
            "previous_attempt_url": None,
            "workflow_url": f"{api}/actions/workflows/{wf['id']}",
            "head_commit": {
                "id": run["head_sha"],
                "tree_id": _sha("tree", run["head_sha"]),
                "message": run["head_message"],
                "timestamp": run["created_at"],
                "author": {"name": "dev", "email": "dev@users.noreply.github.com"},
                "committer": {"name": "GitHub", "email": "noreply@github.com"},
            },
            "repository": self._repo_json(r),
            "head_repository": self._repo_json(r),
        }

    def _artifact_json(self, art: dict) -> dict:
        r: _Repo = art["repo"]
        api = self._api(r)
        run = self._runs[art["run_id"]]
        return {
            "id": art["id"],
            "node_id": _node("Artifact", art["id"]),
            "name": art["name"],
            "size_in_bytes": len(art["zip"]),
            "url": f"{api}/actions/artifacts/{art['id']}",
            "archive_download_url": f"{api}/actions/artifacts/{art['id']}/zip",
            "expired": False,
            "digest": "sha256:" + hashlib.sha256(art["zip"]).hexdigest(),
            "created_at": art["created_at"],
            "updated_at": art["created_at"],
            "expires_at": _later(art["created_at"], 90 * 86400),
            "workflow_run": {
                "id": run["id"],
                "repository_id": r.id,
                "head_repository_id": r.id,
                "head_branch": run["ref"],
                "head_sha": run["head_sha"],
            },
        }

    def _rate_json(self) -> dict:
        def bucket(limit: int, remaining: int, resource: str) -> dict:
            return {
                "limit": limit,
                "remaining": remaining,
                "reset": self.rate_reset,
                "used": limit - remaining,
                "resource": resource,
            }

        core = bucket(self.rate_limit, self.rate_remaining, "core")
        return {
            "resources": {
                "core": core,
                "search": bucket(30, 30, "search"),
                "graphql": bucket(5000, 5000, "graphql"),
                "integration_manifest": bucket(5000, 5000, "integration_manifest"),
                "code_search": bucket(10, 10, "code_search"),
            },
            "rate": dict(core),
        }

    def _public_user(self, login: str) -> dict:
        out = self._user(login)
        out.update(
            {
                "name": login,
                "company": None,
                "blog": "",
                "location": None,
                "email": None,
                "hireable": None,
                "bio": None,
                "twitter_username": None,
                "public_repos": 1,
                "public_gists": 0,
                "followers": 0,
                "following": 0,
                "created_at": "2024-01-01T00:00:00Z",
                "updated_at": "2026-01-01T00:00:00Z",
            }
        )
        return out

    # ---------------------------------------------------------------- refs and history

    def _resolve(self, r: _Repo, ref: str) -> int | None:
        """Index in the linear history of a tag, branch ("main"/"HEAD") or (abbreviated) sha."""
        if not r.commits:
            return None
        for prefix in ("refs/tags/", "tags/", "refs/heads/", "heads/"):
            if ref.startswith(prefix):
                ref = ref[len(prefix) :]
        if ref in r.tags:
            return r.sha_index[r.tags[ref]]
        if ref in ("main", "HEAD"):
            return len(r.commits) - 1
        if ref in r.sha_index:
            return r.sha_index[ref]
        if len(ref) >= 4 and re.fullmatch(r"[0-9a-fA-F]+", ref):
            hits = [i for s, i in r.sha_index.items() if s.startswith(ref.lower())]
            if len(hits) == 1:
                return hits[0]
        return None

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

    def _serve(self, method: str, target: str, headers: dict, body: bytes) -> _Reply:
        split = urlsplit(target)
        path = self._canonical(unquote(split.path))
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        if path.startswith("/_fake/"):
            return self._blob(path)  # the "blob host": not the API, no auth, no rate limit
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
            who = f"user ID {_num('user', login.lower())}" if login else "127.0.0.1"
            reply = self._error(
                403,
                f"API rate limit exceeded for {who}. (But here's the good news: Authenticated "
                "requests get a higher rate limit. Check out the documentation for more details.)",
            )
        else:
            try:
                reply = self._route(method, path, query, headers, body, login, split.query)
            except _HTTPError as e:
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

    def _conditional(self, reply: _Reply, headers: dict) -> None:
        etag = '"' + hashlib.sha256(reply.body).hexdigest() + '"'
        reply.headers["ETag"] = etag
        if reply.last_modified:
            reply.headers["Last-Modified"] = _http_date(reply.last_modified)
        inm = headers.get("if-none-match")
        ims = headers.get("if-modified-since")
        fresh = False
        if inm is not None:
            wanted = {t.strip().removeprefix("W/") for t in inm.split(",")}
            fresh = "*" in wanted or etag in wanted
        elif ims and reply.last_modified:
            try:
                fresh = _parse_time(reply.last_modified) <= parsedate_to_datetime(ims)
            except (TypeError, ValueError):
                fresh = False
        if fresh:
            reply.status = 304
            reply.body = b""
            reply.headers.pop("Content-Type", None)

    def _account(self, reply: _Reply, authorized: bool) -> None:
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

    def _error(self, status: int, message: str) -> _Reply:
        return _Reply(
            status, _json_bytes(_error_body(status, message)), {"Content-Type": JSON_TYPE}
        )

    def _json(
        self,
        obj: object,
        status: int = 200,
        *,
        links: list[tuple[str, str]] | None = None,
        link_base: str = "",
        last_modified: str | None = None,
        headers: dict | None = None,
    ) -> _Reply:
        reply = _Reply(status, _json_bytes(obj), {"Content-Type": JSON_TYPE})
        reply.cacheable = True
        reply.last_modified = last_modified
        if links:
            reply.headers["Link"] = ", ".join(f'<{link_base}{q}>; rel="{rel}"' for rel, q in links)
        reply.headers.update(headers or {})
        return reply

    def _paginate(self, items: list, query: dict, raw_query: str, path: str) -> tuple[list, dict]:
        """Slice one page; return it with the kwargs that put GitHub's Link header on the reply."""
        per_page = min(max(_int(query.get("per_page"), self.per_page_default), 1), 100)
        page = max(_int(query.get("page"), 1), 1)
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
    ) -> _Reply:
        for verb, pattern, name in _ROUTES:
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
                    raise _HTTPError(404, "Not Found")
            ctx = _Ctx(method, path, query, headers, body, login, raw_query, repo, params)
            return getattr(self, name)(ctx)
        raise _HTTPError(404, "Not Found")

    def _issue_for(self, ctx: _Ctx) -> dict:
        rec = ctx.repo.issues.get(int(ctx.params["number"]))
        if rec is None:
            raise _HTTPError(404, "Not Found")
        return rec

    def _need_login(self, ctx: _Ctx) -> str:
        if ctx.login is None:
            raise _HTTPError(401, "Requires authentication")
        return ctx.login

    def _body_json(self, ctx: _Ctx) -> dict:
        try:
            data = json.loads(ctx.body or b"{}")
        except ValueError as e:
            raise _HTTPError(400, "Problems parsing JSON") from e
        if not isinstance(data, dict):
            raise _HTTPError(400, "Problems parsing JSON")
        return data

    def get_repo(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            return self._json(self._repo_json(ctx.repo))

    def get_issue(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            rec = self._issue_for(ctx)
            return self._json(self._issue_json(rec), last_modified=rec["updated_at"])

    def get_pull(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            rec = self._issue_for(ctx)
            if not rec["is_pull"]:
                raise _HTTPError(404, "Not Found")
            return self._json(self._pull_json(rec), last_modified=rec["updated_at"])

    def get_timeline(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            rec = self._issue_for(ctx)
            events = [self._event_json(ctx.repo, ev) for ev in ctx.repo.timelines[rec["number"]]]
            page, link = self._paginate(events, ctx.query, ctx.raw_query, ctx.path)
            return self._json(page, **link)

    def list_comments(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            rec = self._issue_for(ctx)
            items = self._issue_comments(rec)
            since = ctx.query.get("since")
            if since:
                try:
                    cutoff = _iso(since)
                except ValueError as e:
                    raise _HTTPError(422, f"Invalid since: {since}") from e
                items = [c for c in items if c["updated_at"] >= cutoff]
            rendered = [self._comment_json(c) for c in items]
            page, link = self._paginate(rendered, ctx.query, ctx.raw_query, ctx.path)
            return self._json(page, **link)

    def create_comment(self, ctx: _Ctx) -> _Reply:
        login = self._need_login(ctx)
        data = self._body_json(ctx)
        if not isinstance(data.get("body"), str):
            raise _HTTPError(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
        with self._lock:
            rec = self._issue_for(ctx)
            c = self._new_comment(rec, data["body"], login, _now())
            out = self._comment_json(c)
            rec["updated_at"] = max(rec["updated_at"], c["created_at"])
        reply = self._json(out, 201, headers={"Location": out["url"]})
        reply.cacheable = False
        reply.headers["ETag"] = '"' + hashlib.sha256(reply.body).hexdigest() + '"'
        return reply

    def _comment_for(self, ctx: _Ctx) -> dict:
        c = self._comments.get(int(ctx.params["comment_id"]))
        if c is None or c["issue"]["repo"] is not ctx.repo:
            raise _HTTPError(404, "Not Found")
        return c

    def get_comment(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            c = self._comment_for(ctx)
            return self._json(self._comment_json(c), last_modified=c["updated_at"])

    def update_comment(self, ctx: _Ctx) -> _Reply:
        login = self._need_login(ctx)
        data = self._body_json(ctx)
        if not isinstance(data.get("body"), str):
            raise _HTTPError(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
        with self._lock:
            c = self._comment_for(ctx)
            if c["user"].lower() != login.lower():
                raise _HTTPError(403, "You must be the author of this comment to edit it.")
            c["body"] = data["body"]
            c["updated_at"] = max(_now(), _later(c["updated_at"], 1))
            reply = self._json(self._comment_json(c))
        reply.cacheable = False
        return reply

    def delete_comment(self, ctx: _Ctx) -> _Reply:
        login = self._need_login(ctx)
        with self._lock:
            c = self._comment_for(ctx)
            if c["user"].lower() != login.lower():
                raise _HTTPError(403, "You must be the author of this comment to delete it.")
            del self._comments[c["id"]]
        return _Reply(204)

    def list_commits(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            r = ctx.repo
            if not r.commits:
                raise _HTTPError(409, "Git Repository is empty.")
            ref = ctx.query.get("sha") or "main"
            top = self._resolve(r, ref)
            if top is None:
                raise _HTTPError(404, f"No commit found for SHA: {ref}")
            chosen = list(reversed(r.commits[: top + 1]))
            path = ctx.query.get("path", "").strip("/")
            if path:
                chosen = [
                    c
                    for c in chosen
                    if any(f == path or f.startswith(path + "/") for f in c["files"])
                ]
            try:
                since = _iso(ctx.query["since"]) if ctx.query.get("since") else None
                until = _iso(ctx.query["until"]) if ctx.query.get("until") else None
            except ValueError as e:
                raise _HTTPError(422, "Invalid time in since/until") from e
            if since:
                chosen = [c for c in chosen if c["date"] >= since]
            if until:
                chosen = [c for c in chosen if c["date"] <= until]
            rendered = [self._commit_json(r, c) for c in chosen]
            page, link = self._paginate(rendered, ctx.query, ctx.raw_query, ctx.path)
            newest = chosen[0]["date"] if chosen else None
            return self._json(page, last_modified=newest, **link)

    def get_commit(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            r = ctx.repo
            ref = ctx.params["ref"]
            idx = self._resolve(r, ref)
            if idx is None:
                raise _HTTPError(422, f"No commit found for SHA: {ref}")
            c = r.commits[idx]
            if "application/vnd.github.sha" in ctx.headers.get("accept", ""):
                reply = _Reply(
                    200, c["sha"].encode(), {"Content-Type": "text/plain; charset=utf-8"}
                )
                reply.cacheable = True
                return reply
            return self._json(self._commit_json(r, c, detail=True), last_modified=c["date"])

    def compare(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            r = ctx.repo
            base_ref, sep, head_ref = ctx.params["basehead"].partition("...")
            if not sep:
                raise _HTTPError(404, "Not Found")
            bi, hi = self._resolve(r, base_ref), self._resolve(r, head_ref)
            if bi is None or hi is None:
                raise _HTTPError(404, "Not Found")
            if hi > bi:
                status, ahead, behind, merge_base = "ahead", hi - bi, 0, bi
                between = r.commits[bi + 1 : hi + 1]
            elif hi < bi:
                status, ahead, behind, merge_base = "behind", 0, bi - hi, hi
                between = []
            else:
                status, ahead, behind, merge_base, between = "identical", 0, 0, bi, []
            api = self._api(r)
            spec = f"{base_ref}...{head_ref}"
            html = f"{WEB}/{r.full_name}/compare/{spec}"
            base_sha, head_sha = r.commits[bi]["sha"], r.commits[hi]["sha"]
            permalink = f"{r.owner}:{base_sha}...{r.owner}:{head_sha}"
            out = {
                "url": f"{api}/compare/{spec}",
                "html_url": html,
                "permalink_url": f"{WEB}/{r.full_name}/compare/{permalink}",
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
                "base_commit": self._commit_json(r, r.commits[bi]),
                "merge_base_commit": self._commit_json(r, r.commits[merge_base]),
                "status": status,
                "ahead_by": ahead,
                "behind_by": behind,
                "total_commits": len(between),
                "commits": [self._commit_json(r, c) for c in between[-250:]],
                "files": self._files_json(r, between)[:300],
            }
            return self._json(out)

    def _sorted_releases(self, r: _Repo) -> list[dict]:
        return sorted(r.releases, key=lambda x: (x["published_at"], x["seq"]), reverse=True)

    def list_releases(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            r = ctx.repo
            rendered = [self._release_json(r, x) for x in self._sorted_releases(r)]
            page, link = self._paginate(rendered, ctx.query, ctx.raw_query, ctx.path)
            return self._json(page, **link)

    def latest_release(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            r = ctx.repo
            for rel in self._sorted_releases(r):
                if not rel["draft"] and not rel["prerelease"]:
                    return self._json(self._release_json(r, rel), last_modified=rel["published_at"])
            raise _HTTPError(404, "Not Found")

    def release_by_tag(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            r = ctx.repo
            for rel in r.releases:
                if rel["tag"] == ctx.params["tag"]:
                    return self._json(self._release_json(r, rel), last_modified=rel["published_at"])
            raise _HTTPError(404, "Not Found")

    def list_tags(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            r = ctx.repo
            rendered = [self._tag_json(r, n, s) for n, s in reversed(list(r.tags.items()))]
            page, link = self._paginate(rendered, ctx.query, ctx.raw_query, ctx.path)
            return self._json(page, **link)

    def rate_limit_route(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            # Rendered with this request already counted (it is free, so nothing changes).
            reply = self._json(self._rate_json())
        reply.cacheable = False
        reply.rate_free = True
        return reply

    def get_user(self, ctx: _Ctx) -> _Reply:
        login = self._need_login(ctx)
        with self._lock:
            return self._json(self._public_user(login))

    def _workflow_for(self, ctx: _Ctx) -> dict:
        key = ctx.params["workflow"]
        for wf in ctx.repo.workflows.values():
            if key in (wf["key"], str(wf["id"])):
                return wf
        raise _HTTPError(404, "Not Found")

    def dispatch(self, ctx: _Ctx) -> _Reply:
        login = self._need_login(ctx)
        data = self._body_json(ctx)
        if not isinstance(data.get("ref"), str):
            raise _HTTPError(422, 'Invalid request.\n\n"ref" wasn\'t supplied.')
        inputs = data.get("inputs") or {}
        if not isinstance(inputs, dict):
            raise _HTTPError(
                422, "Invalid request.\n\nFor 'properties/inputs', it is not an object."
            )
        with self._lock:
            r = ctx.repo
            wf = self._workflow_for(ctx)
            idx = self._resolve(r, data["ref"])
            if idx is None and r.commits:
                raise _HTTPError(422, f"No ref found for: {data['ref']}")
            head = r.commits[idx] if idx is not None else None
            wf["runs"] += 1
            ident = self._next_run_id
            self._next_run_id += 1
            title = wf["name"]
            if wf["run_name"]:
                try:
                    title = wf["run_name"].format(**inputs)
                except (KeyError, IndexError, ValueError):
                    title = wf["run_name"]
            stamp = _now()
            run = {
                "id": ident,
                "repo": r,
                "workflow": wf,
                "run_number": wf["runs"],
                "ref": data["ref"],
                "inputs": inputs,
                "actor": login,
                "display_title": title,
                "head_sha": head["sha"] if head else _sha("run", ident),
                "head_message": head["message"] if head else "",
                "created_at": stamp,
                "updated_at": stamp,
                "status": "queued",
                "conclusion": None,
                "done": threading.Event(),
                "files": None,
                "error": None,
                "artifacts": [],
            }
            self._runs[ident] = run
        threading.Thread(target=self._work, args=(run,), daemon=True).start()
        if data.get("return_run_details"):
            api = self._api(r)
            out = {
                "workflow_run_id": ident,
                "run_url": f"{api}/actions/runs/{ident}",
                "html_url": f"{WEB}/{r.full_name}/actions/runs/{ident}",
            }
            reply = self._json(out)
            reply.cacheable = False
            return reply
        return _Reply(204)

    def _work(self, run: dict) -> None:
        callback = run["workflow"]["on_dispatch"]
        try:
            run["files"] = dict(callback(dict(run["inputs"]))) if callback else None
        except Exception as e:  # the "job" failed: the run concludes failure
            run["error"] = e
        finally:
            run["done"].set()

    def list_runs(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            wf = self._workflow_for(ctx)
            runs = [x for x in self._runs.values() if x["workflow"] is wf]
            runs.sort(key=lambda x: x["id"], reverse=True)
            q = ctx.query
            if q.get("status"):
                runs = [x for x in runs if q["status"] in (x["status"], x["conclusion"])]
            if q.get("event"):
                runs = [x for x in runs if q["event"] == "workflow_dispatch"]
            if q.get("branch"):
                runs = [x for x in runs if x["ref"] == q["branch"]]
            if q.get("head_sha"):
                runs = [x for x in runs if x["head_sha"] == q["head_sha"]]
            if q.get("actor"):
                runs = [x for x in runs if x["actor"] == q["actor"]]
            created = q.get("created", "")
            if created.startswith(">="):
                runs = [x for x in runs if x["created_at"] >= _iso(created[2:])]
            rendered = [self._run_json(x) for x in runs]
            page, link = self._paginate(rendered, q, ctx.raw_query, ctx.path)
            return self._json({"total_count": len(rendered), "workflow_runs": page}, **link)

    def _run_for(self, ctx: _Ctx) -> dict:
        run = self._runs.get(int(ctx.params["run_id"]))
        if run is None or run["repo"] is not ctx.repo:
            raise _HTTPError(404, "Not Found")
        return run

    def get_run(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            run = self._run_for(ctx)
        if run["status"] == "in_progress":
            run["done"].wait(5.0)  # a quick callback finishes in step; a slow one keeps running
        with self._lock:
            if run["status"] == "queued":
                run["status"] = "in_progress"
                run["updated_at"] = _now()
            elif run["status"] == "in_progress" and run["done"].is_set():
                self._complete(run)
            return self._json(self._run_json(run), last_modified=run["updated_at"])

    def _complete(self, run: dict) -> None:
        run["status"] = "completed"
        run["conclusion"] = "failure" if run["error"] is not None else "success"
        run["updated_at"] = _now()
        if run["files"]:
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for name, content in sorted(run["files"].items()):
                    data = content.encode() if isinstance(content, str) else bytes(content)
                    zf.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
            ident = self._next_artifact_id
            self._next_artifact_id += 1
            self._artifacts[ident] = {
                "id": ident,
                "repo": run["repo"],
                "run_id": run["id"],
                "name": run["workflow"]["artifact_name"],
                "zip": buf.getvalue(),
                "created_at": run["updated_at"],
            }
            run["artifacts"].append(ident)

    def list_artifacts(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            run = self._run_for(ctx)
            arts = [self._artifact_json(self._artifacts[i]) for i in run["artifacts"]]
            if ctx.query.get("name"):
                arts = [a for a in arts if a["name"] == ctx.query["name"]]
            page, link = self._paginate(arts, ctx.query, ctx.raw_query, ctx.path)
            return self._json({"total_count": len(arts), "artifacts": page}, **link)

    def download_artifact(self, ctx: _Ctx) -> _Reply:
        with self._lock:
            art = self._artifacts.get(int(ctx.params["artifact_id"]))
            if art is None or art["repo"] is not ctx.repo or ctx.params["format"] != "zip":
                raise _HTTPError(404, "Not Found")
            location = f"{self.url}/_fake/artifacts/{art['id']}.zip"
        return _Reply(302, b"", {"Location": location})

    def _blob(self, path: str) -> _Reply:
        m = re.fullmatch(r"/_fake/artifacts/(\d+)\.zip", path)
        with self._lock:
            art = self._artifacts.get(int(m.group(1))) if m else None
        if art is None:
            return _Reply(404, b"BlobNotFound", {"Content-Type": "text/plain"}, rate_free=True)
        return _Reply(200, art["zip"], {"Content-Type": "application/zip"}, rate_free=True)


def _color(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()[:6]


@dataclass
class _Ctx:
    method: str
    path: str
    query: dict
    headers: dict
    body: bytes
    login: str | None
    raw_query: str
    repo: _Repo | None
    params: dict


_R = r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
_ROUTES = [
    (verb, re.compile(pattern + "$"), name)
    for verb, pattern, name in [
        ("GET", _R, "get_repo"),
        ("GET", _R + r"/issues/(?P<number>\d+)", "get_issue"),
        ("GET", _R + r"/pulls/(?P<number>\d+)", "get_pull"),
        ("GET", _R + r"/issues/(?P<number>\d+)/timeline", "get_timeline"),
        ("GET", _R + r"/issues/(?P<number>\d+)/comments", "list_comments"),
        ("POST", _R + r"/issues/(?P<number>\d+)/comments", "create_comment"),
        ("GET", _R + r"/issues/comments/(?P<comment_id>\d+)", "get_comment"),
        ("PATCH", _R + r"/issues/comments/(?P<comment_id>\d+)", "update_comment"),
        ("DELETE", _R + r"/issues/comments/(?P<comment_id>\d+)", "delete_comment"),
        ("GET", _R + r"/commits", "list_commits"),
        ("GET", _R + r"/commits/(?P<ref>.+)", "get_commit"),
        ("GET", _R + r"/compare/(?P<basehead>.+)", "compare"),
        ("GET", _R + r"/releases", "list_releases"),
        ("GET", _R + r"/releases/latest", "latest_release"),
        ("GET", _R + r"/releases/tags/(?P<tag>.+)", "release_by_tag"),
        ("GET", _R + r"/tags", "list_tags"),
        ("POST", _R + r"/actions/workflows/(?P<workflow>[^/]+)/dispatches", "dispatch"),
        ("GET", _R + r"/actions/workflows/(?P<workflow>[^/]+)/runs", "list_runs"),
        ("GET", _R + r"/actions/runs/(?P<run_id>\d+)", "get_run"),
        ("GET", _R + r"/actions/runs/(?P<run_id>\d+)/artifacts", "list_artifacts"),
        (
            "GET",
            _R + r"/actions/artifacts/(?P<artifact_id>\d+)/(?P<format>[^/]+)",
            "download_artifact",
        ),
        ("GET", r"^/rate_limit", "rate_limit_route"),
        ("GET", r"^/user", "get_user"),
    ]
]


# --------------------------------------------------------------------------- HTTP plumbing


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # a benchmark opens ~50 connections at once
    fake: FakeGitHub

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], OSError | ValueError):
            return  # a client that went away (timeouts, resets): not worth a traceback
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "github.com"
    sys_version = ""
    server: _Server

    def setup(self) -> None:
        super().setup()
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
        length = _int(headers.get("content-length"), 0)
        body = self.rfile.read(length) if length > 0 else b""
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        rec = Recorded(self.command, split.path, query, headers, 0, body)
        with gh._lock:
            gh.requests.append(rec)
        if gh.latency > 0 and gh._stopping.wait(gh.latency):
            return self._drop()
        fault = gh._take_fault(self.command, self.path)
        if fault is not None and fault.mode == "timeout":
            if gh._stopping.wait(TIMEOUT_FAULT_S):
                return self._drop()
            fault = None
        if fault is not None and fault.mode == "reset":
            return self._reset()
        if fault is not None and fault.mode == "truncated":
            return self._truncated(rec, fault)
        if fault is not None:
            reply = self._fault_reply(gh, fault, split.path)
        else:
            reply = gh._serve(self.command, self.path, headers, body)
        rec.status = reply.status
        self._send(reply)

    def _fault_reply(self, gh: FakeGitHub, fault: _Fault, path: str) -> _Reply:
        headers = dict(fault.headers)
        if fault.mode == "malformed":
            reply = _Reply(200, b'{"oops": ', {"Content-Type": JSON_TYPE})
        elif fault.mode == "redirect":
            location = next((v for k, v in headers.items() if k.lower() == "location"), None)
            if location is None:
                location = gh.url + gh._link_path(gh._canonical(path), force=True)
                if split_query := urlsplit(self.path).query:
                    location += "?" + split_query
                headers["Location"] = location
            body = {"message": "Moved Permanently", "url": location, "documentation_url": DOCS}
            reply = _Reply(301, _json_bytes(body), {"Content-Type": JSON_TYPE})
        else:
            body = fault.body
            if body is None:
                body = _error_body(fault.status, _reason(fault.status))
            if isinstance(body, dict | list):
                reply = _Reply(fault.status, _json_bytes(body), {"Content-Type": JSON_TYPE})
            else:
                data = body.encode() if isinstance(body, str) else bytes(body)
                try:
                    json.loads(data)
                    ctype = JSON_TYPE
                except ValueError:
                    ctype = "text/plain; charset=utf-8"
                reply = _Reply(fault.status, data, {"Content-Type": ctype})
        for k, v in headers.items():  # the fault's headers win over the defaults
            for existing in [e for e in reply.headers if e.lower() == k.lower()]:
                del reply.headers[existing]
            reply.headers[k] = v
        gh._account(reply, authorized=False)
        return reply

    def _send(self, reply: _Reply) -> None:
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

    def _reset(self) -> None:
        """Close with a TCP RST: the client sees 'connection reset by peer'."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.rfile.close()
            self.wfile.close()
            self.connection.close()
        except OSError:
            pass

    def _truncated(self, rec: Recorded, fault: _Fault) -> None:
        body = fault.body
        if body is None:
            body = b'[{"id": 1, "title": "cut off in the mid'
        data = _json_bytes(body) if isinstance(body, dict | list) else body
        data = data.encode() if isinstance(data, str) else bytes(data)
        rec.status = 200
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", JSON_TYPE)
            self.send_header("Content-Length", str(len(data) + 1024))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            pass


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


# --------------------------------------------------------------------------- seed data

VLLM = "vllm-project/vllm"
FLA = "fla-org/flash-linear-attention"
SGLANG = "sgl-project/sglang"


def real_threads(gh: FakeGitHub) -> None:
    """Seed data shaped like the upstream threads watcher tracks (design.md, "real world").

    - vllm#40361, the Marlin pad PR: closed WITHOUT merge on 2026-06-12, cross-referenced by
      #45295, which merged the same day; its merge commit is in tag v0.24.0, not v0.23.0.
    - vllm#39931: a merged TurboQuant PR (nothing about rollback: the label lies).
    - vllm#40124: an open issue about Gated DeltaNet KV rollback for spec decode.
    - flash-linear-attention: commits that fool naive filters ("find_spec", "Roll back
      initializer_range", "gradient checkpointing") and one true rollback commit under
      fla/ops/gated_delta_rule/.
    - sglang: Marlin and linear-attention commits among unrelated ones; releases v0.5.9, v0.6.0.
    Deterministic: the same call always yields the same ids, shas and bodies.
    """
    # vLLM: a linear history with the two releases around the Marlin fix.
    turbo = gh.add_commit(
        VLLM,
        message=(
            "[Quantization] TurboQuant: 4-bit KV cache compression with Hadamard rotation (#39931)"
        ),
        date="2026-04-02T16:41:09Z",
        files=[
            "vllm/model_executor/layers/quantization/turboquant.py",
            "vllm/v1/attention/backends/flash_attn.py",
            "tests/quantization/test_turboquant.py",
        ],
        author="quant-dev",
    )
    gh.add_commit(
        VLLM,
        message="[Model] Qwen3-Next: fuse GDN gating into one kernel (#43010)",
        date="2026-05-20T09:12:44Z",
        files=["vllm/model_executor/models/qwen3_next.py"],
    )
    gh.add_commit(
        VLLM,
        message="[Release] Bump version to v0.23.0 (#44720)",
        date="2026-05-29T21:03:00Z",
        files=["vllm/version.py"],
        author="release-manager",
    )
    gh.add_release(VLLM, "v0.23.0", published_at="2026-06-01T18:00:00Z", name="v0.23.0")
    fix = gh.add_commit(
        VLLM,
        message=(
            "[Kernel] Marlin: support size_n not divisible by tile_n for int4 (#45295)\n\n"
            "Pads the sub-tile n dimension instead of asserting. Supersedes #40361."
        ),
        date="2026-06-12T15:04:11Z",
        files=[
            "csrc/quantization/gptq_marlin/gptq_marlin.cu",
            "vllm/model_executor/layers/quantization/utils/marlin_utils.py",
            "tests/kernels/quantization/test_marlin_gemm.py",
        ],
        author="kernel-dev",
    )
    gh.add_commit(
        VLLM,
        message="[Bugfix] Fix prefix caching with sliding-window layers (#45410)",
        date="2026-06-18T11:30:00Z",
        files=["vllm/v1/core/kv_cache_manager.py"],
    )
    gh.add_commit(
        VLLM,
        message="[Release] Bump version to v0.24.0 (#45800)",
        date="2026-06-30T20:45:00Z",
        files=["vllm/version.py"],
        author="release-manager",
    )
    gh.add_release(VLLM, "v0.24.0", published_at="2026-07-02T17:30:00Z", name="v0.24.0")

    gh.add_pull(
        VLLM,
        39931,
        title="[Quantization] TurboQuant: 4-bit KV cache compression with Hadamard rotation",
        merged=True,
        merge_commit_sha=turbo["sha"],
        merged_at="2026-04-02T16:41:09Z",
        created_at="2026-03-20T08:15:00Z",
        body="Adds TurboQuant, a 4-bit KV-cache quantization method with Hadamard rotation.",
        user="quant-dev",
        head_ref="turboquant",
        labels=["quantization", "ready"],
    )
    gh.add_issue(
        VLLM,
        40124,
        title=(
            "[Feature]: KV cache rollback for hybrid (Gated DeltaNet) layers "
            "in speculative decoding"
        ),
        created_at="2026-04-08T13:02:00Z",
        updated_at="2026-06-20T07:45:00Z",
        labels=["feature request"],
        body=(
            "EAGLE/MTP speculative decoding needs to roll back rejected tokens. Linear-attention "
            "(DeltaNet/GDN) layers keep a recurrent state that cannot simply be truncated."
        ),
        user="hybrid-user",
    )
    gh.add_pull(
        VLLM,
        45295,
        title="[Kernel] Marlin: support size_n not divisible by tile_n for int4",
        merged=True,
        merge_commit_sha=fix["sha"],
        merged_at="2026-06-12T15:04:11Z",
        created_at="2026-06-05T10:00:00Z",
        body=(
            "Fixes `size_n = 96 is not divisible by tile_n_size = 64` for int4 Marlin with "
            "TP=2 by padding the sub-tile n dimension. Supersedes #40361."
        ),
        user="kernel-dev",
        head_ref="marlin-pad-n",
        labels=["ready"],
    )
    gh.add_pull(
        VLLM,
        40361,
        title="[Kernel] Marlin: pad sub-tile n for int4",
        state="closed",
        closed_at="2026-06-12T15:20:00Z",
        created_at="2026-04-14T19:30:00Z",
        body="Pad size_n up to tile_n_size so int4 Marlin works on 3090s with TP=2.",
        user="club-3090",
        head_ref="marlin-pad-sub-tile-n",
    )
    gh.add_timeline_event(
        VLLM,
        40361,
        {"event": "labeled", "label": "ready", "actor": "maintainer", "created_at": "2026-04-20"},
    )
    gh.add_cross_reference(
        VLLM, 40361, source_repo=VLLM, source_number=45295, created_at="2026-06-05T10:00:00Z"
    )
    gh.add_timeline_event(
        VLLM,
        40361,
        {
            "event": "closed",
            "actor": "maintainer",
            "created_at": "2026-06-12T15:20:00Z",
            "state_reason": None,
        },
    )

    # flash-linear-attention: word-boundary traps and one real hit.
    for date, message, files in [
        ("2026-03-03T10:00:00Z", "Use importlib find_spec for optional deps", ["fla/utils.py"]),
        (
            "2026-03-10T14:20:00Z",
            "Roll back initializer_range default",
            ["fla/models/gated_deltanet/configuration_gated_deltanet.py"],
        ),
        (
            "2026-03-18T09:45:00Z",
            "Support gradient checkpointing in GLA",
            ["fla/layers/gla.py", "fla/models/gla/modeling_gla.py"],
        ),
        ("2026-04-01T16:05:00Z", "[KDA] Tune chunk size for sm86", ["fla/ops/kda/chunk.py"]),
        (
            "2026-04-22T12:00:00Z",
            "Add state rollback for speculative decoding",
            [
                "fla/ops/gated_delta_rule/fused_recurrent.py",
                "fla/ops/gated_delta_rule/chunk.py",
                "tests/ops/test_gated_delta.py",
            ],
        ),
        (
            "2026-05-06T08:30:00Z",
            "[GatedDeltaNet] Fix varlen cu_seqlens dtype",
            ["fla/layers/gated_deltanet.py"],
        ),
    ]:
        gh.add_commit(FLA, message=message, date=date, files=files, author="fla-dev")

    # SGLang: Marlin loader and linear-attention changes among unrelated ones.
    marlin = "python/sglang/srt/layers/quantization/marlin_utils.py"
    linear = "python/sglang/srt/layers/attention/linear/"
    for date, message, files, tag in [
        (
            "2026-04-10T09:00:00Z",
            "[Docs] Update quick start",
            ["docs/get_started/install.md"],
            None,
        ),
        (
            "2026-04-25T15:10:00Z",
            "[Quant] Marlin: check size_n against tile size in weight loader",
            [marlin],
            None,
        ),
        (
            "2026-05-08T11:00:00Z",
            "[Router] Add cache-aware load balancing metrics",
            ["sgl-router/src/policies/cache_aware.rs"],
            None,
        ),
        (
            "2026-05-12T18:00:00Z",
            "Bump version to 0.5.9",
            ["python/pyproject.toml", "python/sglang/version.py"],
            "v0.5.9",
        ),
        (
            "2026-06-02T13:40:00Z",
            "[Linear Attention] Resolve linear-attn backends per runner",
            [linear + "gdn_backend.py", linear + "utils.py"],
            None,
        ),
        (
            "2026-06-20T10:25:00Z",
            "[Quant] Marlin: pad sub-tile size_n in the int4 loader",
            [marlin, "python/sglang/srt/model_loader/weight_utils.py"],
            None,
        ),
        (
            "2026-06-28T17:55:00Z",
            "[Spec] EAGLE: roll back GDN recurrent state on rejected drafts",
            [linear + "gdn_backend.py", "python/sglang/srt/speculative/eagle_worker.py"],
            None,
        ),
        (
            "2026-07-06T08:15:00Z",
            "[CI] Pin flashinfer for the nightly",
            [".github/workflows/nightly.yml"],
            None,
        ),
        (
            "2026-07-08T19:30:00Z",
            "Bump version to 0.6.0",
            ["python/pyproject.toml", "python/sglang/version.py"],
            "v0.6.0",
        ),
    ]:
        gh.add_commit(SGLANG, message=message, date=date, files=files, author="sglang-dev")
        if tag:
            gh.add_tag(SGLANG, tag)
    gh.add_release(SGLANG, "v0.5.9", published_at="2026-05-15T02:00:00Z", name="Release v0.5.9")
    gh.add_release(SGLANG, "v0.6.0", published_at="2026-07-10T02:00:00Z", name="Release v0.6.0")
