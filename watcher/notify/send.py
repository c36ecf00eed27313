"""GitHub comments on the tracking issue: one sticky status comment per page, one per transition.

Maintainers follow one issue, so watcher keeps them informed there without noise. This module runs
notify: it reads the store, asks `notify_plan` what to say and do (pure), has `comments` say it to
GitHub, and records the outcome.

- a transition comment is posted exactly once, even if the process dies between the POST and the
  database commit: the intent (outbox row) is committed first, and before posting the comments are
  searched for the event's marker; a marker found means "already posted", never "post again";
- no request at all when nothing differs from what we last wrote;
- nothing here ever fails a cycle: errors are recorded (outbox rows, sticky rows, notify_state) and
  the next cycle retries.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from watcher.config.model import Config, Page
from watcher.core.clock import iso, parse_iso, utcnow
from watcher.core.errors import WatcherError
from watcher.github.comments import (
    DEFAULT_SECONDARY_WAIT,
    Comment,
    CommentAPI,
    CommentError,
    GithubComments,
    Pacer,
    WritesPaused,
    paced_write,
)
from watcher.judge.evaluate import Evaluation
from watcher.notify.plan import (
    ASK_LOG_LIMIT,
    Action,
    Ask,
    Bodies,
    ask_line,
    carries,
    command_ask,
    deferred_actions,
    event_action,
    event_marker,
    event_page,
    event_why,
    judge_ask,
    needs_reading,
    notified_pages,
    our_comments,
    pick_events,
    snoozed_until,
    status_marker,
    sticky_action,
    ticked_asks,
    unchanged_actions,
    unread_actions,
)
from watcher.publish.page import digest
from watcher.store.db import Store

log = logging.getLogger("watcher")

# Tests only: after an event comment's POST returns, write its id to this file and hang, so the
# test can SIGKILL the process before the database records the post.
PAUSE_AFTER_POST_ENV = "WATCHER_TEST_PAUSE_AFTER_POST"


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
    asks: list[str] = field(default_factory=list)  # requests read from the issue this run

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
    return pick_events(cfg, store.events(after=after), after, now)


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
        self.bodies = Bodies(
            cfg,
            ev,
            store.items(),
            store.smoke_runs(limit=200),
            store.statuses(),
            json.loads(store.notify_get("ask_log") or "[]"),
            bisects=store.bisects(limit=20),
            pins=store.pins(),
        )

    # -- plumbing
    def _open_api(self) -> CommentAPI | None:
        if self.api is None and self.repo and self.issue:
            from watcher.core.token import github_token

            token = github_token()
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
        comment = paced_write(fn, self.pacer, self.max_wait, self.now)
        self.result.writes += 1
        return comment

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
        dashboard = self.cfg.notify.dashboard and bool(self.repo and self.issue)
        if not needs_reading(rows, bodies, stored) and not dashboard:
            r.actions.extend(unchanged_actions(pages, bodies, stored))
            return

        paused = parse_iso(self.store.notify_get("paused_until"))
        if paused and paused > self.now and not self.dry_run:
            r.paused_until = iso(paused)
            why = f"GitHub asked us to wait; writes resume after {iso(paused)}"
            r.actions.extend(deferred_actions(pages, rows, bodies, why))
            return

        api = self._open_api() if self.repo and self.issue else None
        if api is None:
            why = (
                "no GITHUB_TOKEN to read the issue's comments"
                if self.repo
                else "no [notify] repo/issue"
            )
            r.actions.extend(
                unread_actions(pages, stored, bodies, rows, events_by_id, why, self.dry_run)
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
        ours, searched = our_comments(comments, login)
        if dashboard and self._asks(comments, ours, login, pages):
            self.bodies.ask_log = json.loads(self.store.notify_get("ask_log") or "[]")
            bodies = {p.id: self.bodies.status(p) for p in pages}

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
            r.actions.extend(deferred_actions(pages, rows, bodies, "rate limited", done))
        else:
            if not self.dry_run:
                self.store.notify_set("paused_until", None)

    # -- the dashboard
    def _asks(self, comments: list[Comment], ours: list[Comment], login: str, pages) -> bool:
        """Requests from the issue (ticks in our sticky comments, `/watcher` comments), judged
        and acted on; a line each in the ask log. True when there were any."""
        asks: list[Ask] = []
        ticked: dict[str, str] = {}  # page id -> digest of the ticked body acted on now
        for p in pages:
            sticky = next((c for c in ours if carries(c, status_marker(p.id))), None)
            if sticky is not None and (found := ticked_asks(sticky.body)):
                # a body whose ticks were acted on before is one whose clearing edit failed:
                # acting again would run the same smoke test twice
                seen = hashlib.sha256(sticky.body.encode("utf-8", "replace")).hexdigest()
                if self.store.notify_get(f"ticks_acted:{p.id}") == seen:
                    continue
                ticked[p.id] = seen
                asks.extend(a for a in found if a not in asks)
        mark = self.store.notify_get("asks_seen_comment")
        newest = max([c.id for c in comments], default=0)
        if mark is not None:  # the first read only sets the mark: history is not replayed
            asks.extend(
                a
                for c in comments
                # the token's owner may ask too; only watcher's own bodies (a marker first) are not asks
                if not _written_by_watcher(c, login)
                and c.id > int(mark)
                and (a := command_ask(c)) is not None
            )
        self.result.asks = [f"{a.kind} {a.target} by {a.who or 'a tick'}" for a in asks]
        if self.dry_run:
            return False
        self.store.notify_set("asks_seen_comment", str(max(newest, int(mark or 0))))
        for page_id, seen in ticked.items():
            self.store.notify_set(f"ticks_acted:{page_id}", seen)
        if not asks:
            return False
        kept = json.loads(self.store.notify_get("ask_log") or "[]")
        permissions: dict[str, str | None] = {}
        for a in asks:
            if a.who is not None and a.who not in permissions:
                try:
                    permissions[a.who] = self.api.permission(a.who)
                except CommentError as e:
                    self.result.errors.append(f"could not read @{a.who}'s permission: {e}")
                    permissions[a.who] = None
            refused = judge_ask(self.cfg, a, permissions.get(a.who) if a.who else None)
            outcome = f"ignored — {refused}" if refused else self._act(a)
            line = ask_line(self.cfg, a, self.at, outcome)
            kept.append(line)
            (log.warning if refused else log.info)("notify: %s", line)
        self.store.notify_set("ask_log", json.dumps(trimmed_ask_log(kept)))
        return True

    def _act(self, ask: Ask) -> str:
        """Record what the next cycle does for an accepted ask; returns what happened."""
        who = f"@{ask.who}" if ask.who else "a maintainer"
        if ask.kind == "run-smoke":
            old = self.store.triggers().get(ask.target)
            if old and old["state"] == "dispatched":
                return "already dispatched; not run twice"
            reason = f"asked by {who} on the tracking issue"
            if old:
                self.store.put_trigger(
                    ask.target, reasons=[*old["reasons"], reason], updated_at=self.at
                )
            else:
                self.store.put_trigger(
                    ask.target,
                    state="waiting",
                    reasons=[reason],
                    since=self.at,
                    updated_at=self.at,
                )
            return (
                "queued; it runs in the next check (within the budget of"
                f" {self.cfg.smoke.max_runs_per_day} runs a day)"
            )
        if ask.kind == "snooze":
            snoozes = json.loads(self.store.notify_get("snoozes") or "{}")
            snoozes[ask.target] = snoozed_until(self.now)
            self.store.notify_set("snoozes", json.dumps(snoozes, sort_keys=True))
            return f"done; quiet until {snoozes[ask.target]}"
        self.store.notify_set("recheck", self.at)
        return "the next check reads every item afresh (no cached answers)"

    def _sticky(
        self, page: Page, body: str, ours: list[Comment], login: str, searched: str
    ) -> None:
        action, mine = sticky_action(page.id, body, ours, login, searched)
        new_digest = digest(body)
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

    def _event(self, row: dict[str, Any], ours: list[Comment], login: str, events: dict) -> None:
        event_id = row["event_id"]
        action, found = event_action(row, ours, login, event_why(row, events))
        self.result.actions.append(action)
        if found is not None:
            if not self.dry_run:
                self.store.outbox_posted(event_id, found.id, found.url, self.at, found=True)
                action.done = True
            return
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


def _written_by_watcher(comment: Comment, login: str) -> bool:
    """A body watcher wrote: by our login and opening with a watcher marker."""
    return comment.login == login and comment.body.lstrip().startswith("<!-- watcher:")


OUTSIDER_LINES = 2  # of the ASK_LOG_LIMIT lines, at most this many for asks refused for access
_REFUSED_FOR_ACCESS = "access; asking needs write access"


def trimmed_ask_log(lines: list[str]) -> list[str]:
    """The newest ASK_LOG_LIMIT lines, of which at most OUTSIDER_LINES are asks refused for lack
    of write access: anyone may comment, so outsiders must not push maintainers' asks out."""
    refused = [i for i, line in enumerate(lines) if _REFUSED_FOR_ACCESS in line]
    drop = set(refused[: max(0, len(refused) - OUTSIDER_LINES)])
    return [line for i, line in enumerate(lines) if i not in drop][-ASK_LOG_LIMIT:]
