"""One cycle: poll every item, store what changed, judge it, run the smoke tests and bisect steps
that are due, publish the pages, post the comments, build the site.

`check-now` runs it once; `serve` runs it on a schedule. GitHub trouble never fails a cycle: the
items it could not read keep their last known state, marked stale, and the page is still rendered.
One exception is loud: when every read was refused with 401/403 the token is wrong, and waiting
will not fix it, so the report carries `token_rejected` and `check-now` exits non-zero.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from watcher.config.model import Config, Item, Settings
from watcher.core.clock import iso, utcnow
from watcher.core.errors import WatcherError
from watcher.core.files import atomic_write
from watcher.judge.evaluate import Evaluation, evaluate, page_subjects, transitions
from watcher.judge.pins import tracker_check
from watcher.judge.states import evidence_key
from watcher.notify.plan import with_snoozes
from watcher.notify.send import notify_status, run_notify
from watcher.poll.poller import Observation, Poller
from watcher.publish.context import last_checked_at, page_sources
from watcher.publish.glance import GLANCE, publish_glance
from watcher.publish.page import digest, foreign_page, page_text
from watcher.publish.site import build_site
from watcher.publish.status import status_document
from watcher.publish.tracker import publish_tracker
from watcher.store.db import Store

if TYPE_CHECKING:  # httpx loads only when a cycle polls (not for `--offline` or `status`)
    from watcher.github.client import GitHubClient

log = logging.getLogger("watcher")


class CycleInterrupted(KeyboardInterrupt):
    """Ctrl-C during a cycle, with one truthful line on what the database and files kept."""

    def __init__(self, kept: str):
        super().__init__(kept)
        self.kept = kept


def _interrupted_line(stage: str, read: int, items: int) -> str:
    """What a Ctrl-C at `stage` left behind: each stage commits in one transaction, or not."""
    if stage == "start":
        return "Interrupted before GitHub was asked: nothing was read or changed."
    if stage == "poll":
        return (
            "Interrupted while reading GitHub: kept the last stored state, nothing half-written "
            f"({read} of {items} items read this cycle were not saved; reads in flight were "
            "abandoned); pages and site unchanged."
        )
    if stage == "save":
        return (
            "Interrupted while saving: the transaction was rolled back, so the last stored state "
            "is kept whole; pages and site unchanged."
        )
    return (
        "Interrupted after this cycle's reads were saved: pages, comments or the site may still "
        "show the previous cycle (each file is replaced whole or not at all); run "
        "`watcher check-now` again to bring them up to date."
    )


@dataclass
class CycleReport:
    """What a cycle did, for the log line, `--json` and tests."""

    cycle_id: int | None
    mode: str
    items: int = 0
    changes: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    item_errors: dict[str, str] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    pages: dict[str, dict[str, Any]] = field(default_factory=dict)
    status: dict[str, Any] = field(default_factory=dict)
    offline_note: str | None = None
    duration_s: float = 0.0
    site_error: str | None = None
    notify: dict[str, Any] | None = None  # what the comment step did (None: it did not run)
    smoke_runs: list[dict[str, Any]] = field(default_factory=list)
    token_rejected: str | None = None  # every read refused with 401/403: what to do about it
    tracker: dict[str, Any] | None = None  # the audited tracker ([tracker]); None: none configured

    def summary(self) -> str:
        s = self.stats
        return (
            f"cycle {self.cycle_id} ({self.mode}): {self.items} items, {self.changes} changes, "
            f"{s.get('requests', 0)} requests, {s.get('not_modified', 0)} not modified (304), "
            f"{len(self.item_errors)} errors, {self.duration_s:.2f} s"
        )


_REFUSED = re.compile(r"^HTTP (401|403)\b")
_LIMITED = re.compile(r"^rate limited; retry in (\d+) s")


def rate_limited(errors: list[str], has_token: bool, at: datetime) -> str | None:
    """One line when every read hit GitHub's rate limit: GitHub is reachable, so say what to
    do (GITHUB_TOKEN, when there is none) and when the limit resets (from `at`, the cycle's
    time, plus the longest wait GitHub asked for)."""
    waits = [int(m.group(1)) for e in errors if (m := _LIMITED.match(e or ""))]
    if not errors or len(waits) != len(errors):
        return None
    reset = (at + timedelta(seconds=max(waits))).strftime("%Y-%m-%d %H:%M UTC")
    if has_token:
        return f"GitHub's rate limit for this token is spent until {reset}; run `watcher check-now` again after it"
    return (
        f"GitHub's rate limit for unauthenticated reads (60 an hour) is spent until {reset}: set "
        "GITHUB_TOKEN (any token that can read public repositories: 5,000 an hour) or run "
        "`watcher check-now` again after it"
    )


def token_rejected(errors: list[str]) -> str | None:
    """One line with the fix when every error is GitHub refusing the token (not a rate limit)."""
    codes = {m.group(1) for e in errors if (m := _REFUSED.match(e or ""))}
    if not errors or not codes or any(not _REFUSED.match(e or "") for e in errors):
        return None
    code = "401" if "401" in codes else "403"
    fix = (
        "set GITHUB_TOKEN to a valid token (an expired or mistyped token is refused)"
        if code == "401"
        else "give the token read access to the watched repositories, or unset GITHUB_TOKEN"
        " to read public repositories anonymously"
    )
    return f"GitHub rejected the token (HTTP {code}) on every read: {fix}; then run `watcher check-now`"


def new_commits_clause(old: dict | None, obs: Observation) -> str:
    """The commits that caused a commit stream's event, newest first (not its headline, which
    ranks by relevance and may be months old): ", new: <sha> “subject”" (and how many more)."""
    before = {c.get("sha") for c in ((old or {}).get("details") or {}).get("commits") or []}
    newest = obs.details.get("newest") or obs.details["commits"][0]
    before_newest = (((old or {}).get("details") or {}).get("newest") or {}).get("sha")
    new = [c for c in obs.details["commits"] if c.get("sha") not in before]
    if newest.get("sha") != before_newest and all(c.get("sha") != newest.get("sha") for c in new):
        new.insert(0, newest)
    new.sort(key=lambda c: c.get("date") or "", reverse=True)
    if not new:  # a match left the list: name the newest that is still there
        return f", newest: {newest['sha'][:10]}"
    first = new[0]
    more = f" and {len(new) - 1} more" if len(new) > 1 else ""
    return f", new: {first['sha'][:10]} “{first.get('subject') or ''}”{more}"


def item_event_message(cfg: Config, item_id: str, old: dict | None, obs: Observation) -> str:
    item = cfg.item(item_id)
    ref = f"{item.repo}#{item.number}" if item.number else f"{item.repo} ({item.kind})"
    # a stream's title is its headline, which ranks by relevance: the event names its new commits
    what = f"{ref} “{obs.title}”" if obs.title and item.kind != "commits" else ref
    extra = ""
    if obs.superseded_by:
        extra += f", superseded by #{obs.superseded_by} ({obs.superseded_state})"
    if obs.in_release:
        extra += f", first in {obs.in_release}"
    if item.kind == "commits" and obs.details.get("commits"):
        extra += new_commits_clause(old, obs)
    if old is None or not old.get("state"):
        return f"now tracking {what}: {obs.state}{extra}"
    if old.get("state") != obs.state:
        return f"{what}: {old.get('state')} → {obs.state}{extra}"
    return f"{what} changed: {obs.state}{extra}"


def same_thing(row: dict[str, Any], item: Item) -> bool:
    """Is a stored row about the thing the item names now? A number fixed after a typo (or a
    repo changed) makes the old row another thread's: its title, state and link must go."""
    return (str(row.get("repo") or "").lower(), row.get("kind"), row.get("number")) == (
        item.repo.lower(),
        item.kind,
        item.number,
    )


def apply_observations(
    cfg: Config, store: Store, cycle_id: int, observations: dict[str, Observation], at: str
) -> tuple[int, list[dict[str, Any]]]:
    """Store observations. An error only marks the item stale: it is never a state change."""
    previous = store.items()
    changes, events = 0, []
    for item in cfg.items:
        obs = observations.get(item.id)
        if obs is None:
            continue
        prev = previous.get(item.id)
        if prev is not None and not same_thing(prev, item):
            prev = None  # its repo, kind or number changed in watch.toml: a first read
        base = {
            "id": item.id,
            "repo": item.repo,
            "kind": item.kind,
            "number": item.number,
            "label": item.label,
        }
        if obs.error:
            row = dict(prev or {}, **base)
            row.update(stale=True, error=obs.error)
            row.setdefault("details", {})
            store.upsert_item(row)
            store.add_observation(item.id, cycle_id, at, None, None, None, None, obs.error)
            continue
        fp = obs.fingerprint()
        changed = prev is None or prev.get("fingerprint") != fp
        row = dict(
            base,
            title=obs.title,
            state=obs.state,
            url=obs.url,
            superseded_by=obs.superseded_by,
            superseded_state=obs.superseded_state,
            in_release=obs.in_release,
            details=obs.details,
            fingerprint=fp,
            stale=False,
            error=None,
            moved_to=obs.moved_to,
            checked_at=at,
            changed_at=at if changed else (prev or {}).get("changed_at"),
            updated_at=obs.updated_at,
        )
        store.upsert_item(row)
        if changed:
            changes += 1
            store.add_observation(
                item.id,
                cycle_id,
                at,
                obs.state,
                obs.title,
                fp,
                {
                    "superseded_by": obs.superseded_by,
                    "superseded_state": obs.superseded_state,
                    "in_release": obs.in_release,
                    "details": obs.details,
                    "url": obs.url,
                },
                None,
            )
            if prev is not None and evidence_key(prev) == evidence_key(row):
                continue  # a title, a warning or a ref read at: stored, but no event (no x → x)
            message = item_event_message(cfg, item.id, prev, obs)
            snoozed = bool(item.snooze and item.snooze.until >= date.fromisoformat(at[:10]))
            old_state = (prev or {}).get("state")
            eid = store.add_event(
                at, cycle_id, "item", item.id, old_state, obs.state, message, {"snoozed": snoozed}
            )
            events.append(
                {
                    "id": eid,
                    "kind": "item",
                    "subject": item.id,
                    "old": old_state,
                    "new": obs.state,
                    "snoozed": snoozed,
                    "message": message,
                }
            )
    return changes, events


def record_transitions(
    store: Store,
    cycle_id: int,
    ev: Evaluation,
    at: str,
    snoozed: bool = False,
    kinds: tuple[str, ...] = ("blocker", "page"),
) -> list[dict[str, Any]]:
    """Store status transitions as events and remember the new statuses (of `kinds` only).

    `snoozed`: every change that caused them came from snoozed items, so the events are marked
    and neither smoke triggers nor comments act on them.
    """
    if not store.count_smoke_runs() and not any(
        r.get("checked_at") for r in store.items().values()
    ):
        return []  # nothing read or tested yet: no status is known, so none is recorded
    previous = store.statuses()
    current = {k: v for k, v in ev.statuses().items() if k.partition(":")[0] in kinds}
    events = []
    for key, old, new in transitions(previous, current):
        kind, _, subject = key.partition(":")
        if kind == "blocker" and ev.blockers[subject].stale:
            continue  # can't check right now: no transition, no comment (a first sighting too)
        reason = current[key][1]
        title = subject
        message = (
            f"{kind} {title}: {old} → {new} ({reason})"
            if old
            else f"{kind} {title} is {new} ({reason})"
        )
        eid = store.add_event(at, cycle_id, kind, subject, old, new, message, {"snoozed": snoozed})
        events.append(
            {
                "id": eid,
                "kind": kind,
                "subject": subject,
                "old": old,
                "new": new,
                "message": message,
                "snoozed": snoozed,
            }
        )
    for key, (status, reason) in current.items():
        prev = previous.get(key) or {}
        since = prev.get("since") if prev.get("status") == status else at
        store.set_status(key, status, since or at, reason, at)
    return events


def _last_attempt(store: Store, report: CycleReport, at: str, polls: bool) -> dict[str, Any]:
    """When GitHub was last asked and whether that failed outright (every read an error)."""
    if report.mode == "poll" and polls:
        return {"at": at, "failed": bool(report.offline_note)}
    last = store.last_finished_cycle(polled_only=True) or {}
    failed = bool(last.get("items")) and (last.get("errors") or 0) >= last["items"]
    return {"at": last.get("started_at"), "failed": failed}


def render_pages(
    cfg: Config,
    store: Store,
    ev: Evaluation,
    at: str,
    offline_note: str | None,
    write: bool = True,
    attempt: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Render every page; record a new page version when new events belong on it."""
    sources = page_sources(store)
    last_checked = last_checked_at(store, sources["items"])
    newest = store.last_event_id()
    out = {}
    for page in cfg.pages:
        subjects = page_subjects(cfg, page)
        cv = store.current_page_version(page.id)
        lo, hi = (
            (cv["to_event"], newest)
            if cv and newest > cv["to_event"]
            else ((cv["from_event"], cv["to_event"]) if cv else (0, newest))
        )
        changes = store.events(after=lo, upto=hi, limit=30, subjects=subjects)
        if (
            cv and not changes and newest > cv["to_event"]
        ):  # nothing new for this page: keep its range
            lo, hi = cv["from_event"], cv["to_event"]
            changes = store.events(after=lo, upto=hi, limit=30, subjects=subjects)
        text = page_text(cfg, page, ev, sources, changes, last_checked, offline_note, attempt)
        d = digest(text)
        if cv is None or (hi != cv["to_event"] and d != cv["digest"]):
            store.add_page_version(page.id, at, lo, hi, d)
        path = cfg.resolve(page.output)
        written = False
        refused = foreign_page(path) if write else None
        if write and not refused:
            written = atomic_write(path, text)
        out[page.id] = {
            "path": str(path),
            "written": written,
            "refused": refused,
            "text": text,
            "status": ev.pages[page.id].status,
        }
    return out


def poll_deadline(settings: Settings) -> float:
    """Seconds the polling stage may take in all; each request also ends within `timeout`.

    `[watcher] cycle_timeout` when set, else max(60 s, 10 x timeout): one slow repository
    must not hold the cycle lock for long."""
    if settings.cycle_timeout is not None:
        return settings.cycle_timeout
    return max(60.0, 10 * settings.timeout)


def run_cycle(
    cfg: Config,
    *,
    offline: bool = False,
    dry_run: bool = False,
    now: datetime | None = None,
    client: GitHubClient | None = None,
    no_smoke: bool = False,
    notify_kw: dict[str, Any] | None = None,
) -> CycleReport:
    """One full cycle. In dry-run mode it works on a copy of the database and writes no file.

    `notify_kw` goes to `notify.run_notify` (tests pass `api=` and `pacer=`).
    """
    if dry_run:
        return _dry_run(cfg, offline=offline, now=now, client=client)
    return _cycle(
        cfg,
        Store(cfg.db_path),
        offline=offline,
        now=now,
        client=client,
        write=True,
        no_smoke=no_smoke,
        notify_kw=notify_kw,
    )


def _dry_run(cfg: Config, **kw) -> CycleReport:
    tmp = Path(tempfile.mkdtemp(prefix="watcher-dry-"))
    try:
        copy = tmp / "watcher.db"
        if cfg.db_path.exists():
            src = sqlite3.connect(str(cfg.db_path))
            dst = sqlite3.connect(str(copy))
            with dst:
                src.backup(dst)
            src.close()
            dst.close()
        report = _cycle(cfg, Store(copy), write=False, no_smoke=True, **kw)
        report.mode = "dry-run"
        return report
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class _Run:
    """One cycle as it passes through the stages: what each stage hands the next, and how far a
    Ctrl-C got (`stage`, `poller`: see _interrupted_line)."""

    cfg: Config
    store: Store
    now: datetime
    at: str
    offline: bool
    started: float
    client: GitHubClient | None  # the caller's, or the one this cycle opened (`own_client`)
    report: CycleReport = field(init=False)
    recheck: bool = False
    own_client: GitHubClient | None = None
    observations: dict[str, Observation] = field(default_factory=dict)
    ev: Evaluation | None = None
    stage: str = "start"
    poller: Poller | None = None
    # pins are read after the judge: page transitions wait for them (no ready-then-blocked flap)
    pins_due: bool = False
    quiet: bool = False


def _cycle(
    cfg: Config,
    store: Store,
    *,
    offline: bool,
    now: datetime | None,
    client: GitHubClient | None,
    write: bool,
    no_smoke: bool,
    notify_kw: dict[str, Any] | None = None,
) -> CycleReport:
    started = time.monotonic()
    now = now or utcnow()
    run = _Run(cfg, store, now, iso(now), offline, started, client)
    run.pins_due = write and not offline and bool(cfg.recipes)
    try:
        _begin(run)
        _poll(run)
        _save(run)  # store and judge, in one transaction
        # Smoke runs take minutes (hours when dispatched): they run outside any transaction, so
        # readers and `watcher smoke` are never locked out; each result is stored as it lands.
        if run.pins_due:
            _pins(run)
        if write and not no_smoke and not offline:
            _smoke_triggers(run)
            _bisect_step(run)
        _publish(run, write)
        if write and not offline and run.cfg.notify.enabled:
            _notify(run, notify_kw)
        run.report.status["notify"] = notify_status(run.cfg, store)
        if write:
            _site(run)
        return run.report
    except KeyboardInterrupt as e:
        if isinstance(e, CycleInterrupted):
            raise
        read = run.poller.finished if run.poller else 0
        raise CycleInterrupted(_interrupted_line(run.stage, read, len(run.cfg.items))) from e
    finally:
        store.close()


def _begin(run: _Run) -> None:
    """What was asked for on the tracking issue (notify's dashboard): snoozes, and a fresh
    re-read; then the cycle's row."""
    store = run.store
    run.cfg = with_snoozes(run.cfg, json.loads(store.notify_get("snoozes") or "{}"), run.now.date())
    run.recheck = not run.offline and bool(store.notify_get("recheck"))
    mode = "offline" if run.offline else "poll"
    cycle_id = store.start_cycle(run.at, mode)
    run.report = CycleReport(cycle_id=cycle_id, mode=mode, items=len(run.cfg.items))


def _poll(run: _Run) -> None:
    """Read GitHub, unless the cycle is offline (the page says so) or watches no item."""
    if run.offline:
        run.report.offline_note = "Rendered offline from the stored state; GitHub was not asked."
    elif run.cfg.items:
        _read_items(run)


def _read_items(run: _Run) -> None:
    """Read every item from GitHub, within the cycle's deadline; say so when every read failed."""
    cfg, store, report = run.cfg, run.store, run.report
    client = run.client
    if client is None:
        from watcher.github.client import GitHubClient

        run.own_client = client = run.client = GitHubClient(
            cfg.settings.github_api_url,
            etags={} if run.recheck else store.etag_index(),
            timeout=cfg.settings.timeout,
            max_rate_limit_wait=cfg.settings.max_rate_limit_wait,
            user_agent=cfg.settings.user_agent,
        )
    elif not run.recheck:
        client.etags.update(store.etag_index())
    # past this deadline nothing more is asked: the items not yet read go stale
    client.cycle_deadline = time.monotonic() + poll_deadline(cfg.settings)
    try:
        settings = cfg.settings
        run.poller = Poller(
            client, settings.concurrency, settings.full_read_every, settings.interval
        )
        run.stage = "poll"
        run.observations = run.poller.poll_all(list(cfg.items))
    finally:
        client.cycle_deadline = None
        report.stats = client.stats.as_dict()
        if run.own_client:
            run.own_client.close()
    observations = run.observations
    report.item_errors = {i: o.error for i, o in observations.items() if o.error}
    if observations and len(report.item_errors) == len(observations):
        report.offline_note = _unread_note(store, run.at, next(iter(report.item_errors.values())))
        report.token_rejected = token_rejected(list(report.item_errors.values()))


def _unread_note(store: Store, at: str, first: str) -> str:
    """The page's line when no item could be read this cycle."""
    known = [r["checked_at"] for r in store.items().values() if r.get("checked_at")]
    shown = (
        f"the last known state (read {max(known)}) is shown, marked stale."
        if known
        else "nothing has been read yet, so the page lists the watch list and the "
        "recipes without live facts."
    )
    return f"GitHub could not be read on the check at {at} ({first}); {shown}"


def _save(run: _Run) -> None:
    """Store what was read and judge it, in one transaction: all of it lands, or none. When the
    pins are read this cycle, the pages' transitions are recorded after them (see _pins)."""
    run.stage = "save"
    with run.store.transaction():
        _store_observations(run)
        _judge(run)
    run.stage = "saved"


def _store_observations(run: _Run) -> None:
    store, report = run.store, run.report
    if run.observations:
        report.changes, item_events = apply_observations(
            run.cfg, store, report.cycle_id, run.observations, run.at
        )
        report.events.extend(item_events)
        store.put_etags(run.client.etag_updates)
    if run.recheck and run.observations:
        store.notify_set("recheck", None)


def _judge(run: _Run) -> None:
    """Evaluate every blocker, recipe and page; record the status changes as events."""
    store, report = run.store, run.report
    run.ev = evaluate(
        run.cfg, store.items(), store.evaluation_runs(), store.statuses(), run.now, store.pins()
    )
    run.quiet = bool(report.events) and all(e.get("snoozed") for e in report.events)
    kinds = ("blocker",) if run.pins_due else ("blocker", "page")
    report.events.extend(
        record_transitions(store, report.cycle_id, run.ev, run.at, snoozed=run.quiet, kinds=kinds)
    )


def _pins(run: _Run) -> None:
    """Each recipe's pin: resolved, compared with the tracked fixes, and (on its own schedule,
    [smoke] pin_check_every) checked to still exist. A registry or GitHub failure makes a pin
    stale; nothing here stops the cycle. Then the pages are judged and their transitions
    recorded: a fix merged upstream but not in a recipe's pin holds its page from the cycle it
    merged in, so the page never flips ready-to-test and back in one cycle."""
    from datetime import timedelta

    from watcher.github.client import GitHubClient
    from watcher.poll.pins import refresh_pins

    run.stage = "pins"
    cfg, store = run.cfg, run.store
    client = _callers_client(run)
    own = client is None
    try:
        if own:  # conditional reads too: a git ref that did not move is a 304
            client = GitHubClient(
                cfg.settings.github_api_url,
                etags=store.etag_index(),
                timeout=cfg.settings.timeout,
                max_rate_limit_wait=cfg.settings.max_rate_limit_wait,
                user_agent=cfg.settings.user_agent,
            )
        try:
            every = timedelta(seconds=cfg.smoke.pin_check_every)
            refresh_pins(cfg, store, client, run.now, every=every)
            if own:
                store.put_etags(client.etag_updates)
        finally:
            if own:
                client.close()
    except Exception as e:  # noqa: BLE001 (one stage's failure is logged, never the cycle's)
        log.warning("pins: not refreshed this cycle: %s: %s", type(e).__name__, e)
    with store.transaction():
        run.ev = evaluate(
            cfg, store.items(), store.evaluation_runs(), store.statuses(), run.now, store.pins()
        )
        run.report.events.extend(
            record_transitions(store, run.report.cycle_id, run.ev, run.at, snoozed=run.quiet)
        )


def _smoke_triggers(run: _Run) -> None:
    """Run or dispatch the smoke tests that are due; if any ran, evaluate and record again."""
    from watcher.smoke.trigger import run_triggers

    cfg, store, report = run.cfg, run.store, run.report
    docs, smoke_events = run_triggers(
        cfg,
        store,
        run.ev,
        report.events,
        run.now,
        cycle_id=report.cycle_id,
        at=run.at,
        client=_callers_client(run),
    )
    if docs:
        report.smoke_runs.extend(docs)
        report.events.extend(smoke_events)
        with store.transaction():
            run.ev = evaluate(
                cfg, store.items(), store.evaluation_runs(), store.statuses(), run.now, store.pins()
            )
            report.events.extend(record_transitions(store, report.cycle_id, run.ev, run.at))


def _bisect_step(run: _Run) -> None:
    """Bisects: automatic starts ([bisect] auto), one step each, Actions steps collected."""
    from watcher.bisect.auto import cycle_bisects

    cycle_bisects(run.cfg, run.store, run.report.events, _callers_client(run))


def _callers_client(run: _Run) -> GitHubClient | None:
    """The client a later stage may use: the caller's; the one this cycle opened is closed."""
    return None if run.own_client else run.client


def _publish(run: _Run, write: bool) -> None:
    """Render the pages and the status document, and finish the cycle's row, in one transaction."""
    cfg, store, report = run.cfg, run.store, run.report
    with store.transaction():
        attempt = _last_attempt(store, report, run.at, bool(cfg.items))
        report.pages = render_pages(
            cfg, store, run.ev, run.at, report.offline_note, write=write, attempt=attempt
        )
        if cfg.engines is not None and cfg.engines.glance:  # the At-a-glance table, same evaluation
            report.pages[GLANCE] = publish_glance(cfg, store, run.ev, write, attempt=attempt)
        if cfg.tracker is not None:
            report.tracker = publish_tracker(
                cfg, store.items(), run.at, write=write, pins=tracker_check(store.pins())
            )
            if report.tracker.get("error"):
                log.warning("tracker: %s", report.tracker["error"])
        report.status = status_document(
            cfg,
            store.items(),
            run.ev,
            _cycle_row(store, report.cycle_id, report, run.started),
            store.smoke_runs(limit=20),
            run.at,
            attempt=attempt,
            triggers=store.triggers(),
            pins=store.pins(),
        )
        report.duration_s = round(time.monotonic() - run.started, 3)
        _finish_cycle(store, report)


def _finish_cycle(store: Store, report: CycleReport) -> None:
    s = report.stats
    store.finish_cycle(
        report.cycle_id,
        finished_at=iso(utcnow()),
        items=report.items,
        changes=report.changes,
        requests=s.get("requests", 0),
        not_modified=s.get("not_modified", 0),
        errors=len(report.item_errors),
        duration_s=report.duration_s,
        rate_limit=s.get("rate_limit"),
        rate_remaining=s.get("rate_remaining"),
        rate_reset=s.get("rate_reset"),
        error="; ".join(f"{k}: {v}" for k, v in sorted(report.item_errors.items()))[:2000] or None,
    )


def _notify(run: _Run, notify_kw: dict[str, Any] | None) -> None:
    """GitHub comments: after the cycle's data is committed, in their own transactions;
    run_notify never raises, so a failed comment never fails the cycle."""
    result = run_notify(run.cfg, run.store, run.ev, now=run.now, **(notify_kw or {}))
    run.report.notify = result.as_dict()


def _site(run: _Run) -> None:
    """Build the status site (status.json too, swapped in at once): after the commit, so readers
    never wait on it, and after the comments, so it shows this cycle's comment failures. A
    failure keeps the previous site and never loses the cycle's data."""
    try:
        build_site(
            run.cfg,
            store=run.store,
            ev=run.ev,
            status_doc=run.report.status,
            now=run.now,
        )
    except (OSError, WatcherError) as e:  # a read-only folder, a file in the way: said once,
        # by check-now (its exit code) or serve (its log), with no traceback
        if isinstance(e, OSError):
            site, name = run.cfg.site_dir, str(e.filename or "")
            ours = not name or name.startswith((str(site), str(site.parent / f".{site.name}-")))
            run.report.site_error = f"{site if ours else name}: {e.strerror or e}"
        else:
            run.report.site_error = str(e)
        log.debug("status site not rebuilt", exc_info=True)
    except Exception as e:  # noqa: BLE001 - one bad stage never stops the cycle
        log.error("status site not rebuilt (the previous one stays): %s", e, exc_info=True)
        run.report.site_error = f"{type(e).__name__}: {e}"
    else:
        run.report.site_error = None


def _cycle_row(store: Store, cycle_id: int, report: CycleReport, started: float) -> dict[str, Any]:
    s = report.stats
    row = {
        "id": cycle_id,
        "started_at": None,
        "finished_at": iso(utcnow()),
        "mode": report.mode,
        "items": report.items,
        "changes": report.changes,
        "requests": s.get("requests", 0),
        "not_modified": s.get("not_modified", 0),
        "errors": len(report.item_errors),
        "duration_s": round(time.monotonic() - started, 3),
        "rate_remaining": s.get("rate_remaining"),
        "rate_limit": s.get("rate_limit"),
    }
    if report.mode == "offline":
        last = store.last_finished_cycle(polled_only=True)
        if last:
            row["finished_at"] = last["finished_at"]
    return row
