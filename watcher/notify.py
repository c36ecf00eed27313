"""GitHub comments on the tracking issue: one sticky status comment per page, one per transition.

Maintainers follow one issue, so watcher keeps them informed there without noise:

- the sticky comment is found by its hidden marker AND our own login (a human quoting the marker is
  never ours), across every page of comments, and edited only when its content changes;
- a transition comment is posted exactly once, even if the process dies between the POST and the
  database commit: the intent (outbox row) is committed first, and before posting the comments are
  searched for the event's marker; a marker found means "already posted", never "post again";
- writes go through PyGithub with no automatic retry (a duplicate is worse than a late comment),
  one at a time, at least `write_interval` seconds apart, honouring `retry-after`;
- nothing here ever fails a cycle: errors are recorded (outbox rows, sticky rows, notify_state) and
  the next cycle retries.
"""

from __future__ import annotations

import difflib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from watcher.config import Config, Page
from watcher.errors import GitHubError, WatcherError
from watcher.evaluate import CLEARED, Evaluation
from watcher.github import api_base_url
from watcher.render import BLOCKER_MARKS, PAGE_HEADLINES, digest, environment, page_context
from watcher.store import Store, iso, parse_iso, utcnow

log = logging.getLogger("watcher")

STATUS_MARKER = "<!-- watcher:status page={page} -->"
EVENT_MARKER = "<!-- watcher:event id={id} -->"
GITHUB_BODY_LIMIT = 65_536  # GitHub refuses a comment body of this many characters or more
MAX_BODY_CHARS = 65_000  # ours stays well under it
EVIDENCE_LIMITS = (
    None,
    20_000,
    5_000,
    1_000,
    200,
    0,
)  # evidence is cut first, and last in the body
NOTIFY_PAGE_STATUSES = ("ready-to-test", "validated", "regressed")
MAX_EVENT_AGE = timedelta(days=7)  # older transitions are history, not news: never announced
DEFAULT_SECONDARY_WAIT = 60.0  # a secondary rate limit without retry-after: wait at least a minute
# Tests only: after an event comment's POST returns, write its id to this file and hang, so the
# test can SIGKILL the process before the database records the post.
PAUSE_AFTER_POST_ENV = "WATCHER_TEST_PAUSE_AFTER_POST"


def carries(comment: Comment, marker: str) -> bool:
    """Our bodies open with their marker; a marker quoted further down (say, inside a log
    excerpt we show) does not count."""
    return comment.body.lstrip().split("\n", 1)[0].strip() == marker


def same_content(a: str, b: str) -> bool:
    """Equal apart from line endings, edge whitespace and `<!-- volatile -->` lines."""
    return digest(a.replace("\r\n", "\n").strip()) == digest(b.replace("\r\n", "\n").strip())


def status_marker(page_id: str) -> str:
    return STATUS_MARKER.format(page=page_id)


def event_marker(event_id: int) -> str:
    return EVENT_MARKER.format(id=int(event_id))


# ------------------------------------------------------------------ the GitHub side


@dataclass(frozen=True)
class Comment:
    id: int
    login: str
    body: str
    url: str | None = None


class CommentError(GitHubError):
    """A comment request failed. `rate_limited` with `retry_after` when GitHub asked us to wait."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        *,
        rate_limited: bool = False,
        retry_after: float | None = None,
    ):
        super().__init__(message, status)
        self.rate_limited = rate_limited
        self.retry_after = retry_after


class CommentAPI(Protocol):
    """What notify needs from GitHub; GithubComments is the real one."""

    def login(self) -> str: ...
    def list_comments(self) -> list[Comment]: ...
    def create(self, body: str) -> Comment: ...
    def edit(self, comment_id: int, body: str) -> Comment: ...


def _retry_after(headers: dict[str, Any] | None, now: float) -> float | None:
    h = {str(k).lower(): v for k, v in (headers or {}).items()}
    if h.get("retry-after") is not None:
        try:
            return max(0.0, float(h["retry-after"]))
        except ValueError:
            pass
    if str(h.get("x-ratelimit-remaining")) == "0" and h.get("x-ratelimit-reset"):
        try:
            return max(0.0, float(h["x-ratelimit-reset"]) - now)
        except ValueError:
            pass
    return None


class GithubComments:
    """PyGithub on the same base URL as the reads, with no automatic retry and no hidden sleeps.

    PyGithub's own GithubRetry would retry a POST and may sleep up to an hour on a rate limit;
    `retry=None` turns that off and its request spacing is replaced by notify's Pacer.
    """

    def __init__(
        self,
        repo: str,
        issue: int,
        *,
        token: str,
        base_url: str | None = None,
        timeout: float = 20.0,
        user_agent: str | None = None,
    ):
        import github

        self.repo, self.issue_number = repo, issue
        self.base_url = api_base_url(base_url)
        self._gh = github.Github(
            base_url=self.base_url,
            auth=github.Auth.Token(token),
            timeout=max(1, round(timeout)),  # PyGithub insists on an int
            user_agent=user_agent or "watcher",
            per_page=100,
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,
        )
        self._issue = self._gh.get_repo(repo).get_issue(issue)
        self._login: str | None = None
        self._objects: dict[int, Any] = {}  # comment id -> PyGithub IssueComment, for edits

    def close(self) -> None:
        self._gh.close()

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        import github
        import requests

        try:
            return fn()
        except github.GithubException as e:
            message = (e.data or {}).get("message") if isinstance(e.data, dict) else None
            status = e.status
            headers = e.headers or {}
            lower = {str(k).lower(): v for k, v in headers.items()}
            rate_limited = (
                isinstance(e, github.RateLimitExceededException)
                or status == 429
                or (
                    status == 403
                    and ("retry-after" in lower or lower.get("x-ratelimit-remaining") == "0")
                )
            )
            raise CommentError(
                f"{what}: HTTP {status}: {message or e}",
                status,
                rate_limited=rate_limited,
                retry_after=_retry_after(headers, time.time()),
            ) from None
        except requests.RequestException as e:
            raise CommentError(f"{what}: {type(e).__name__}: {e}") from None

    def _comment(self, c: Any) -> Comment:
        self._objects[c.id] = c
        return Comment(
            id=c.id, login=c.user.login if c.user else "", body=c.body or "", url=c.html_url
        )

    def login(self) -> str:
        if self._login is None:
            self._login = self._call("GET /user", lambda: self._gh.get_user().login)
        return self._login

    def list_comments(self) -> list[Comment]:
        where = f"GET {self.repo}#{self.issue_number} comments"
        return self._call(where, lambda: [self._comment(c) for c in self._issue.get_comments()])

    def create(self, body: str) -> Comment:
        where = f"POST {self.repo}#{self.issue_number} comment"
        return self._comment(self._call(where, lambda: self._issue.create_comment(body)))

    def edit(self, comment_id: int, body: str) -> Comment:
        obj = self._objects.get(comment_id)
        if obj is None:
            raise CommentError(f"comment {comment_id} was not in the listing; not editing it")
        self._call(f"PATCH comment {comment_id}", lambda: obj.edit(body))
        return self._comment(obj)


class Pacer:
    """Writes one at a time, at least `interval` seconds apart (GitHub's rule for content writes).

    `clock` and `sleep` are injectable so tests run fast and still check the spacing.
    """

    def __init__(
        self,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.interval = interval
        self.clock = clock
        self.sleep = sleep
        self._last: float | None = None

    def before_write(self) -> None:
        if self._last is not None:
            gap = self.clock() - self._last
            if gap < self.interval:
                self.sleep(self.interval - gap)

    def after_write(self) -> None:
        self._last = self.clock()


class WritesPaused(Exception):
    """GitHub asked us to wait longer than we may in one cycle: stop writing until `until`."""

    def __init__(self, until: datetime, reason: str):
        super().__init__(reason)
        self.until = until
        self.reason = reason


# ------------------------------------------------------------------ what to say


def notified_pages(cfg: Config) -> list[Page]:
    wanted = set(cfg.notify.pages)
    return [p for p in cfg.pages if not wanted or p.id in wanted]


def worth_a_comment(event: dict[str, Any]) -> bool:
    """Page blocked → ready-to-test → validated, regressed; a cleared blocker reproducing again.

    Never for a transition that only snoozed items caused.
    """
    old, new = event.get("old"), event.get("new")
    if not old or old == new:
        return False  # first sightings are not news
    if (event.get("data") or {}).get("snoozed") or event.get("snoozed"):
        return False  # caused only by snoozed items: the maintainers asked for quiet
    if event["kind"] == "page":
        return new in NOTIFY_PAGE_STATUSES
    if event["kind"] == "blocker":
        return new == "reproduces" and old in CLEARED
    return False


def event_page(cfg: Config, event: dict[str, Any]) -> Page | None:
    """The notified page an event belongs to (a blocker's first notified page), else None."""
    for page in notified_pages(cfg):
        if event["kind"] == "page" and event["subject"] == page.id:
            return page
        if event["kind"] == "blocker" and event["subject"] in page.blockers:
            return page
    return None


def cap_body(body: str, limit: int = MAX_BODY_CHARS) -> str:
    """Last resort: cut at a line end under the limit and say so; the marker (line 1) survives."""
    if len(body) <= limit:
        return body
    note = "\n\n… (truncated to fit GitHub's 65,536-character comment limit)\n"
    cut = body[: limit - len(note)]
    if "\n" in cut:
        cut = cut[: cut.rindex("\n")]
    return cut + note


def _evidence(text: str, limit: int | None) -> str:
    """The tail of a log excerpt (where failures show), at most `limit` characters."""
    if limit is None or len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    return f"… ({len(text) - limit} earlier characters cut)\n" + text[-limit:]


class Bodies:
    """Renders comment bodies from the stored state, once per notify run."""

    def __init__(self, cfg: Config, store: Store, ev: Evaluation):
        self.cfg, self.ev = cfg, ev
        self.env = environment(cfg)
        self.items = store.items()
        self.runs = store.smoke_runs(limit=200)
        self.statuses = store.statuses()

    def status(self, page: Page) -> str:
        ctx = page_context(self.cfg, page, self.items, self.ev, self.runs, [], None, None)
        since = (self.statuses.get(f"page:{page.id}") or {}).get("since")
        evidence = []
        for r in ctx["recipes"]:
            run = r["latest_target"] or r["latest"]
            if run and run.get("excerpt"):
                evidence.append({"recipe": r["id"], "run": run, "text": str(run["excerpt"])})
        template = self.env.get_template("comment_status.md.j2")
        body = ""
        for limit in EVIDENCE_LIMITS:
            cut = [dict(e, text=_evidence(e["text"], limit)) for e in evidence]
            body = _lead(
                status_marker(page.id),
                template.render(
                    **ctx,
                    marker=status_marker(page.id),
                    since=since,
                    evidence=[e for e in cut if e["text"]],
                    evidence_cut=limit is not None
                    and any(len(e["text"]) > limit for e in evidence),
                ),
            )
            if len(body) <= MAX_BODY_CHARS:
                return body
        return cap_body(body)

    def event(self, event: dict[str, Any], page: Page | None) -> str:
        ctx: dict[str, Any] = {
            "marker": event_marker(event["id"]),
            "event": event,
            "page": page,
            "headline": PAGE_HEADLINES.get(event.get("new") or "", event.get("new")),
            "marks": BLOCKER_MARKS,
            "blocker": None,
            "blockers": [],
            "reason": None,
        }
        if event["kind"] == "page" and event["subject"] in self.ev.pages:
            st = self.ev.pages[event["subject"]]
            ctx["reason"] = st.reason if st.status == event["new"] else None
        if event["kind"] == "blocker" and event["subject"] in self.ev.blockers:
            b = self.cfg.blocker(event["subject"])
            st = self.ev.blockers[b.id]
            ctx["blocker"] = {"id": b.id, "title": b.title, "signatures": list(b.signatures)}
            ctx["reason"] = st.reason if st.status == event["new"] else None
        if page is not None:
            ctx["blockers"] = [
                {
                    "id": b_id,
                    "title": self.cfg.blocker(b_id).title,
                    "status": self.ev.blockers[b_id].status,
                    "mark": BLOCKER_MARKS[self.ev.blockers[b_id].status],
                }
                for b_id in page.blockers
            ]
        body = self.env.get_template("comment_event.md.j2").render(**ctx)
        return cap_body(_lead(ctx["marker"], body))


def _lead(marker: str, body: str) -> str:
    """The marker must open the body (see `carries`), whatever a template override does."""
    body = body.lstrip()
    return body if body.startswith(marker) else f"{marker}\n{body}"


def _why_changed(old: str, new: str) -> str:
    """A one-line account of what differs between two bodies, for `watcher comment --dry-run`."""
    a = [line for line in old.splitlines() if "<!-- volatile -->" not in line]
    b = [line for line in new.splitlines() if "<!-- volatile -->" not in line]
    changed = [
        line[1:].strip()
        for line in difflib.unified_diff(a, b, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---")) and line[1:].strip()
    ]
    if not changed:
        return "content changed"
    first = changed[0] if len(changed[0]) <= 100 else changed[0][:99] + "…"
    return f"content changed ({len(changed)} line(s) differ, first: {first!r})"


# ------------------------------------------------------------------ the run


@dataclass
class Action:
    """One thing notify did or would do, and why."""

    what: str  # create | edit | unchanged | post | found | skip | deferred
    target: str  # "status:<page>" or "event:<id>"
    why: str
    body: str | None = None
    comment_id: int | None = None
    done: bool = False
    error: str | None = None

    def line(self, dry_run: bool) -> str:
        verb = {
            "create": "would create" if dry_run else "created",
            "edit": "would edit" if dry_run else "edited",
            "post": "would post" if dry_run else "posted",
            "found": "would record as already posted" if dry_run else "recorded as already posted",
            "unchanged": "unchanged",
            "skip": "skipped",
            "deferred": "deferred",
        }[self.what]
        if self.error:
            verb = f"FAILED to {self.what}"
        ref = f" comment {self.comment_id}" if self.comment_id else ""
        tail = f" — {self.error}" if self.error else ""
        return f"{self.target}: {verb}{ref} — {self.why}{tail}"


@dataclass
class NotifyResult:
    enabled: bool
    dry_run: bool
    repo: str | None
    issue: int | None
    actions: list[Action] = field(default_factory=list)
    writes: int = 0
    read_github: bool = False
    errors: list[str] = field(default_factory=list)
    paused_until: str | None = None
    note: str | None = None

    def as_dict(self, bodies: bool = False) -> dict[str, Any]:
        d = asdict(self)
        if not bodies:
            for a in d["actions"]:
                a.pop("body", None)
        return d


def _candidate_events(cfg: Config, store: Store, now: datetime) -> tuple[list[dict], int]:
    """Events after the watermark worth a comment, and the new watermark.

    With no watermark yet (notify never ran), only the latest cycle's events count: enabling
    notify on an old database must not replay its history onto the issue.
    """
    mark = store.notify_get("event_watermark")
    if mark is None:
        latest = store.db.execute("SELECT MAX(cycle_id) FROM events").fetchone()[0]
        row = store.db.execute(
            "SELECT COALESCE(MAX(id), 0) FROM events WHERE cycle_id IS NULL OR cycle_id < ?",
            (latest or 0,),
        ).fetchone()
        after = int(row[0])
    else:
        after = int(mark)
    events = sorted(store.events(after=after), key=lambda e: e["id"])
    oldest = now - MAX_EVENT_AGE
    picked = []
    for e in events:
        at = parse_iso(e.get("at"))
        if worth_a_comment(e) and event_page(cfg, e) is not None and (at is None or at >= oldest):
            picked.append(e)
    return picked, max([after, *(e["id"] for e in events)])


class Notifier:
    """One notify run over one store. `api` and `pacer` are injectable for tests."""

    def __init__(
        self,
        cfg: Config,
        store: Store,
        ev: Evaluation,
        *,
        api: CommentAPI | None = None,
        pacer: Pacer | None = None,
        now: datetime | None = None,
        dry_run: bool = False,
        max_wait: float | None = None,
    ):
        self.cfg, self.store, self.ev = cfg, store, ev
        self.now = now or utcnow()
        self.at = iso(self.now)
        n = cfg.notify
        self.dry_run = dry_run or not n.enabled
        self.repo, self.issue = n.repo, n.issue
        self.result = NotifyResult(
            enabled=n.enabled, dry_run=self.dry_run, repo=n.repo, issue=n.issue
        )
        self.api = api
        self._own_api = False
        self.pacer = pacer or Pacer()
        self.max_wait = cfg.settings.max_rate_limit_wait if max_wait is None else max_wait
        self.bodies = Bodies(cfg, store, ev)

    # -- plumbing
    def _open_api(self) -> CommentAPI | None:
        if self.api is None and self.repo and self.issue:
            token = os.environ.get("GITHUB_TOKEN")
            if token:
                self.api = GithubComments(
                    self.repo,
                    self.issue,
                    token=token,
                    base_url=self.cfg.settings.github_api_url,
                    timeout=self.cfg.settings.timeout,
                    user_agent=self.cfg.settings.user_agent,
                )
                self._own_api = True
        return self.api

    def _write(self, fn: Callable[[], Comment]) -> Comment:
        """One write, spaced; on a rate limit wait as asked (bounded) and try once more."""
        for attempt in (1, 2):
            self.pacer.before_write()
            try:
                comment = fn()
            except CommentError as e:
                self.pacer.after_write()
                if not e.rate_limited:
                    raise
                wait = e.retry_after if e.retry_after is not None else DEFAULT_SECONDARY_WAIT
                if attempt == 1 and wait <= self.max_wait:
                    log.warning("notify: %s; waiting %.0f s as GitHub asked", e, wait)
                    self.pacer.sleep(wait)
                    continue
                raise WritesPaused(self.now + timedelta(seconds=max(wait, 1.0)), str(e)) from None
            self.pacer.after_write()
            self.result.writes += 1
            return comment
        raise AssertionError("unreachable")

    def _fail(self, action: Action, error: str) -> None:
        action.error = error
        self.result.errors.append(f"{action.target}: {error}")
        log.warning("notify: %s: %s (retried next cycle)", action.target, error)

    # -- the run
    def run(self) -> NotifyResult:
        """Never raises for GitHub or rendering trouble: it is recorded and retried next cycle."""
        try:
            self._run()
        except WatcherError as e:
            self.result.errors.append(str(e))
        except Exception as e:  # a comment must never fail the cycle
            log.exception("notify failed")
            self.result.errors.append(f"{type(e).__name__}: {e}")
        finally:
            if self._own_api and self.api is not None:
                self.api.close()  # type: ignore[attr-defined]
        if not self.dry_run:
            self.store.notify_set("last_run_at", self.at)
            self.store.notify_set("last_error", "; ".join(self.result.errors)[:2000] or None)
        return self.result

    def _run(self) -> None:
        r = self.result
        if not self.repo or not self.issue:
            r.note = "[notify] has no repo and issue: nothing can be posted"
            if not self.dry_run:
                return
        pages = notified_pages(self.cfg)
        candidates, watermark = _candidate_events(self.cfg, self.store, self.now)
        if not self.dry_run:
            for e in candidates:
                page = event_page(self.cfg, e)
                self.store.outbox_add(
                    e["id"],
                    page.id if page else None,
                    self.repo,
                    self.issue,
                    event_marker(e["id"]),
                    self.bodies.event(e, page),
                    self.at,
                )
            self.store.notify_set("event_watermark", str(watermark))
            rows = self.store.outbox(("pending", "failed"))
        else:
            queued = {row["event_id"] for row in self.store.outbox()}
            rows = self.store.outbox(("pending", "failed")) + [
                {
                    "event_id": e["id"],
                    "marker": event_marker(e["id"]),
                    "body": self.bodies.event(e, event_page(self.cfg, e)),
                    "attempts": 0,
                    "state": "new",
                }
                for e in candidates
                if e["id"] not in queued
            ]
        events_by_id = {
            row["event_id"]: e
            for row in rows
            for e in self.store.events(after=row["event_id"] - 1, upto=row["event_id"])
        }

        bodies = {p.id: self.bodies.status(p) for p in pages}
        stored = {
            p.id: (self.store.sticky(p.id, self.repo, self.issue) if self.repo else None)
            for p in pages
        }
        need_read = bool(rows) or any(
            not s or not s.get("comment_id") or s.get("digest") != digest(bodies[pid])
            for pid, s in stored.items()
        )
        if not need_read:
            for p in pages:
                r.actions.append(
                    Action(
                        "unchanged",
                        f"status:{p.id}",
                        "same content as the comment we last wrote (no request made)",
                        bodies[p.id],
                        stored[p.id]["comment_id"],
                    )
                )
            return

        paused = parse_iso(self.store.notify_get("paused_until"))
        if paused and paused > self.now and not self.dry_run:
            r.paused_until = iso(paused)
            why = f"GitHub asked us to wait; writes resume after {iso(paused)}"
            r.actions.extend(Action("deferred", f"status:{p.id}", why, bodies[p.id]) for p in pages)
            r.actions.extend(Action("deferred", f"event:{row['event_id']}", why) for row in rows)
            return

        api = self._open_api() if self.repo and self.issue else None
        if api is None:
            why = (
                "no GITHUB_TOKEN to read the issue's comments"
                if self.repo
                else "no [notify] repo/issue"
            )
            for p in pages:
                s = stored[p.id]
                what = "create" if not s or not s.get("comment_id") else "edit"
                what = what if self.dry_run else "deferred"
                r.actions.append(
                    Action(
                        what,
                        f"status:{p.id}",
                        f"content differs from our record; {why}",
                        bodies[p.id],
                    )
                )
            for row in rows:
                r.actions.append(
                    Action(
                        "post" if self.dry_run else "deferred",
                        f"event:{row['event_id']}",
                        self._event_why(row, events_by_id),
                        row["body"],
                    )
                )
            if not self.dry_run:
                r.errors.append(f"cannot post: {why}")
            return

        try:
            login = api.login()
            comments = api.list_comments()
        except CommentError as e:
            for p in pages:
                self.store.put_sticky(
                    p.id, self.repo, self.issue, last_error=str(e), error_at=self.at
                )
            if e.rate_limited and not self.dry_run:
                wait = e.retry_after if e.retry_after is not None else DEFAULT_SECONDARY_WAIT
                r.paused_until = iso(self.now + timedelta(seconds=max(wait, 1.0)))
                self.store.notify_set("paused_until", r.paused_until)
            raise
        r.read_github = True
        ours = [c for c in comments if c.login == login]
        quoted_by_others = {
            c.id for c in comments if c.login != login and "<!-- watcher:" in c.body
        }
        searched = f"{len(comments)} comments searched"
        if quoted_by_others:
            searched += f"; {len(quoted_by_others)} by others carrying a watcher marker ignored"

        try:
            for p in pages:
                self._sticky(p, bodies[p.id], ours, login, searched)
            for row in rows:
                self._event(row, ours, login, events_by_id)
        except WritesPaused as e:
            if not self.dry_run:
                self.store.notify_set("paused_until", iso(e.until))
            r.paused_until = iso(e.until)
            done = {a.target for a in r.actions}
            for p in pages:
                if f"status:{p.id}" not in done:
                    r.actions.append(
                        Action("deferred", f"status:{p.id}", "rate limited", bodies[p.id])
                    )
            for row in rows:
                if f"event:{row['event_id']}" not in done:
                    r.actions.append(Action("deferred", f"event:{row['event_id']}", "rate limited"))
        else:
            if not self.dry_run:
                self.store.notify_set("paused_until", None)

    def _sticky(
        self, page: Page, body: str, ours: list[Comment], login: str, searched: str
    ) -> None:
        marker = status_marker(page.id)
        target = f"status:{page.id}"
        mine = next((c for c in ours if carries(c, marker)), None)
        new_digest = digest(body)
        if mine is None:
            action = Action(
                "create", target, f"no comment by @{login} carries {marker} ({searched})", body
            )
        elif same_content(mine.body, body):
            action = Action("unchanged", target, "content unchanged", body, mine.id)
        else:
            action = Action("edit", target, _why_changed(mine.body, body), body, mine.id)
        self.result.actions.append(action)
        if self.dry_run:
            return
        if action.what == "unchanged":
            self.store.put_sticky(
                page.id,
                self.repo,
                self.issue,
                comment_id=mine.id,
                comment_url=mine.url,
                digest=new_digest,
                checked_at=self.at,
                last_error=None,
                error_at=None,
            )
            return
        try:
            if action.what == "create":
                c = self._write(lambda: self.api.create(body))
            else:
                c = self._write(lambda: self.api.edit(mine.id, body))
        except CommentError as e:
            self._fail(action, str(e))
            self.store.put_sticky(
                page.id, self.repo, self.issue, last_error=str(e), error_at=self.at
            )
            return
        except WritesPaused as e:
            self._fail(action, f"rate limited: {e.reason}")
            self.store.put_sticky(
                page.id, self.repo, self.issue, last_error=action.error, error_at=self.at
            )
            raise
        action.done, action.comment_id = True, c.id
        if action.what == "create":
            ours.append(c)
        self.store.put_sticky(
            page.id,
            self.repo,
            self.issue,
            comment_id=c.id,
            comment_url=c.url,
            digest=new_digest,
            updated_at=self.at,
            checked_at=self.at,
            last_error=None,
            error_at=None,
        )

    def _event_why(self, row: dict[str, Any], events: dict[int, dict]) -> str:
        e = events.get(row["event_id"])
        what = e["message"] if e else "transition"
        tries = f" (attempt {row['attempts'] + 1})" if row.get("attempts") else ""
        return f"{what}{tries}"

    def _event(self, row: dict[str, Any], ours: list[Comment], login: str, events: dict) -> None:
        event_id, marker = row["event_id"], row["marker"]
        target = f"event:{event_id}"
        found = next((c for c in ours if carries(c, marker)), None)
        if found is not None:
            action = Action(
                "found",
                target,
                f"a comment by @{login} already carries {marker} (posted before the database "
                "recorded it); not posting again",
                row["body"],
                found.id,
            )
            self.result.actions.append(action)
            if not self.dry_run:
                self.store.outbox_posted(event_id, found.id, found.url, self.at, found=True)
                action.done = True
            return
        action = Action("post", target, self._event_why(row, events), row["body"])
        self.result.actions.append(action)
        if self.dry_run:
            return
        self.store.outbox_attempt(event_id, self.at)  # committed before the POST
        try:
            c = self._write(lambda: self.api.create(row["body"]))
        except CommentError as e:
            self._fail(action, str(e))
            self.store.outbox_failed(event_id, str(e), self.at)
            return
        except WritesPaused as e:
            self._fail(action, f"rate limited: {e.reason}")
            self.store.outbox_failed(event_id, action.error, self.at)
            raise
        _pause_after_post_for_tests(c)
        self.store.outbox_posted(event_id, c.id, c.url, self.at)
        action.done, action.comment_id = True, c.id
        ours.append(c)


def _pause_after_post_for_tests(comment: Comment) -> None:
    path = os.environ.get(PAUSE_AFTER_POST_ENV)
    if not path:
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(str(comment.id))
    while True:  # the test kills us here, between the POST and the database commit
        time.sleep(60)


def run_notify(
    cfg: Config,
    store: Store,
    ev: Evaluation,
    *,
    api: CommentAPI | None = None,
    pacer: Pacer | None = None,
    now: datetime | None = None,
    dry_run: bool = False,
) -> NotifyResult:
    """Bring the tracking issue's comments up to date (or, in a dry run, say what that would do).

    Never raises: whatever goes wrong is in the result's `errors` (and, when it could be
    written, in the store), and the next run retries.
    """
    try:
        return Notifier(cfg, store, ev, api=api, pacer=pacer, now=now, dry_run=dry_run).run()
    except Exception as e:  # e.g. the database locked while recording the run
        log.exception("notify failed")
        n = cfg.notify
        return NotifyResult(
            enabled=n.enabled,
            dry_run=dry_run or not n.enabled,
            repo=n.repo,
            issue=n.issue,
            errors=[f"{type(e).__name__}: {e}"],
        )


def notify_status(cfg: Config, store: Store, limit: int = 20) -> dict[str, Any]:
    """The `notify` part of the status document: what is posted, pending and failing."""
    n = cfg.notify
    counts = store.outbox_counts()
    failed = [
        {
            "event_id": r["event_id"],
            "page": r["page_id"],
            "attempts": r["attempts"],
            "last_error": r["last_error"],
            "attempted_at": r["attempted_at"],
        }
        for r in store.outbox(("failed",), limit=limit)
    ]
    sticky = [
        {
            "page": s["page_id"],
            "repo": s["repo"],
            "issue": s["issue"],
            "comment_id": s["comment_id"],
            "url": s["comment_url"],
            "updated_at": s["updated_at"],
            "checked_at": s["checked_at"],
            "last_error": s["last_error"],
            "error_at": s["error_at"],
        }
        for s in store.stickies()
        if s["repo"] == n.repo and s["issue"] == n.issue
    ]
    return {
        "enabled": n.enabled,
        "repo": n.repo,
        "issue": n.issue,
        "sticky": sticky,
        "events": {
            "pending": counts.get("pending", 0),
            "posted": counts.get("posted", 0),
            "failed": counts.get("failed", 0),
        },
        "failures": failed,
        "paused_until": store.notify_get("paused_until"),
        "last_run_at": store.notify_get("last_run_at"),
        "last_error": store.notify_get("last_error"),
    }
