"""What to say on the tracking issue, and whether to post, edit or leave a comment alone.

The deciding side of notify, as pure as the evaluator: every function here takes stored state, the
evaluation and (for the decisions) the listing of comments, and returns bodies or Actions. Nothing
here reads the database or talks to GitHub; `notify` does both and applies what this decides.

- a sticky comment is ours when it opens with its page's marker AND is by our own login (a human
  quoting the marker is never ours), and is edited only when its content changes;
- a transition comment whose marker is already in the thread was posted before the database knew:
  "found", never "post again";
- bodies are redacted once more as they leave, whatever a template override does.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from watcher.config.model import Config, Page
from watcher.core.clock import parse_iso
from watcher.core.redact import redact
from watcher.github.comments import Comment
from watcher.judge.evaluate import CLEARED, Evaluation
from watcher.publish.context import BLOCKER_MARKS, PAGE_HEADLINES, hand_since, page_context
from watcher.publish.page import digest, environment

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
    """Renders comment bodies from the stored state (read once per notify run, passed in)."""

    def __init__(
        self,
        cfg: Config,
        ev: Evaluation,
        items: dict[str, dict],
        runs: list[dict[str, Any]],
        statuses: dict[str, dict[str, Any]],
        ask_log: list[str] | tuple[str, ...] = (),
        bisects: list[dict[str, Any]] | tuple = (),
        pins: dict[str, dict[str, Any]] | None = None,
    ):
        self.pins = pins or {}  # recipe -> stored pin (watcher.poll.pins)
        self.bisects = list(bisects)  # newest first; the status comment shows each recipe's last
        self.cfg, self.ev = cfg, ev
        self.env = environment(cfg)
        self.items, self.runs, self.statuses = items, runs, statuses
        self.ask_log = list(ask_log)

    def status(self, page: Page) -> str:
        ctx = page_context(
            self.cfg, page, self.items, self.ev, self.runs, [], None, None, pins=self.pins
        )
        since = (self.statuses.get(f"page:{page.id}") or {}).get("since")
        since = (
            hand_since(self.ev.pages[page.id]) or since
        )  # the maintainers' day, as the page says
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
                    asks=dashboard_asks(self.cfg, page) if self.cfg.notify.dashboard else [],
                    ask_log=self.ask_log,
                    bisects=bisect_lines(self.bisects, page.recipes),
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


def bisect_lines(bisects: list[dict[str, Any]], recipes: tuple[str, ...]) -> list[dict]:
    """Each recipe's newest finished bisect (no run ids or times: the comment is edited only
    when its text changes)."""
    out, seen = [], set()
    for b in bisects:
        r = b.get("report") or {}
        if b.get("recipe") not in recipes or b["recipe"] in seen or not r.get("before"):
            continue
        seen.add(b["recipe"])
        out.append(dict(r, recipe=b["recipe"]))
    return out


def _lead(marker: str, body: str) -> str:
    """The marker must open the body (see `carries`) and no secret may leave in it, whatever a
    template override does."""
    body = redact(body).lstrip()
    return body if body.startswith(marker) else f"{marker}\n{body}"


def why_changed(old: str, new: str) -> str:
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


# ------------------------------------------------------------------ what to do


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


def pick_events(
    cfg: Config, events: list[dict[str, Any]], after: int, now: datetime
) -> tuple[list[dict[str, Any]], int]:
    """Of the events after the watermark `after`: those worth a comment, and the new watermark."""
    events = sorted(events, key=lambda e: e["id"])
    oldest = now - MAX_EVENT_AGE
    picked = []
    for e in events:
        at = parse_iso(e.get("at"))
        if worth_a_comment(e) and event_page(cfg, e) is not None and (at is None or at >= oldest):
            picked.append(e)
    return picked, max([after, *(e["id"] for e in events)])


def needs_reading(
    rows: list[dict[str, Any]], bodies: dict[str, str], stored: dict[str, dict | None]
) -> bool:
    """Is the issue worth a request? Only with events to post or a status unlike our last write."""
    return bool(rows) or any(
        not s or not s.get("comment_id") or s.get("digest") != digest(bodies[pid])
        for pid, s in stored.items()
    )


def unchanged_actions(
    pages: list[Page], bodies: dict[str, str], stored: dict[str, dict]
) -> list[Action]:
    return [
        Action(
            "unchanged",
            f"status:{p.id}",
            "same content as the comment we last wrote (no request made)",
            bodies[p.id],
            stored[p.id]["comment_id"],
        )
        for p in pages
    ]


def deferred_actions(
    pages: list[Page],
    rows: list[dict[str, Any]],
    bodies: dict[str, str],
    why: str,
    done: set[str] | frozenset[str] = frozenset(),
) -> list[Action]:
    """Everything not yet `done` waits for the next run (status comments keep their body)."""
    out = [
        Action("deferred", f"status:{p.id}", why, bodies[p.id])
        for p in pages
        if f"status:{p.id}" not in done
    ]
    out.extend(
        Action("deferred", f"event:{row['event_id']}", why)
        for row in rows
        if f"event:{row['event_id']}" not in done
    )
    return out


def event_why(row: dict[str, Any], events: dict[int, dict]) -> str:
    e = events.get(row["event_id"])
    what = e["message"] if e else "transition"
    tries = f" (attempt {row['attempts'] + 1})" if row.get("attempts") else ""
    return f"{what}{tries}"


def unread_actions(
    pages: list[Page],
    stored: dict[str, dict | None],
    bodies: dict[str, str],
    rows: list[dict[str, Any]],
    events: dict[int, dict],
    why: str,
    dry_run: bool,
) -> list[Action]:
    """What we would do without reading the issue (no token, no repo): a dry run says it, a real
    run defers it."""
    out = []
    for p in pages:
        s = stored[p.id]
        what = "create" if not s or not s.get("comment_id") else "edit"
        what = what if dry_run else "deferred"
        out.append(
            Action(what, f"status:{p.id}", f"content differs from our record; {why}", bodies[p.id])
        )
    out.extend(
        Action(
            "post" if dry_run else "deferred",
            f"event:{row['event_id']}",
            event_why(row, events),
            row["body"],
        )
        for row in rows
    )
    return out


def our_comments(comments: list[Comment], login: str) -> tuple[list[Comment], str]:
    """Our comments in the thread, and a note of what was searched (others quoting a marker)."""
    mine = [c for c in comments if c.login == login]
    quoted_by_others = {c.id for c in comments if c.login != login and "<!-- watcher:" in c.body}
    searched = f"{len(comments)} comments searched"
    if quoted_by_others:
        searched += f"; {len(quoted_by_others)} by others carrying a watcher marker ignored"
    return mine, searched


def sticky_action(
    page_id: str, body: str, mine: list[Comment], login: str, searched: str
) -> tuple[Action, Comment | None]:
    """Create, edit or leave the page's status comment; with the comment of ours it found."""
    marker = status_marker(page_id)
    target = f"status:{page_id}"
    found = next((c for c in mine if carries(c, marker)), None)
    if found is None:
        why = f"no comment by @{login} carries {marker} ({searched})"
        return Action("create", target, why, body), None
    if same_content(found.body, body):
        return Action("unchanged", target, "content unchanged", body, found.id), found
    return Action("edit", target, why_changed(found.body, body), body, found.id), found


def event_action(
    row: dict[str, Any], mine: list[Comment], login: str, why: str
) -> tuple[Action, Comment | None]:
    """Post a transition comment, or record it as posted when its marker is already ours."""
    marker = row["marker"]
    target = f"event:{row['event_id']}"
    found = next((c for c in mine if carries(c, marker)), None)
    if found is None:
        return Action("post", target, why, row["body"]), None
    why_found = (
        f"a comment by @{login} already carries {marker} (posted before the database "
        "recorded it); not posting again"
    )
    return Action("found", target, why_found, row["body"], found.id), found


# ------------------------------------------------------------------ the dashboard (asks)
#
# The sticky comment ends with checkboxes, as Renovate's dependency dashboard does. A request
# comes in two ways: a tick in the sticky comment, or a comment `/watcher run-smoke RECIPE`
# (`snooze ITEM`, `recheck`). GitHub lets only the comment's author and people with write access
# edit watcher's comment, and its REST API does not say who edited it: a tick is acted on as
# "a maintainer" (unnamed). A command comment names its author, whose permission is asked of
# GitHub (never read from the comment): write, maintain or admin is acted on, anything else is
# ignored. Either way the request is acted on in the next cycle, the box is cleared (the body is
# always written with empty boxes) and a line says who asked and what happened.

ASK_MARK = "<!-- watcher:ask {kind}={target} -->"
ASK_KINDS = ("run-smoke", "snooze", "recheck")
_TICK = re.compile(
    r"^\s*[-*] \[[xX]\] .*?<!-- watcher:ask (run-smoke|snooze|recheck)=([a-z0-9._-]*) -->",
    re.MULTILINE,
)
_COMMAND = re.compile(r"^\s*/watcher\s+(run-smoke|snooze|recheck)\b[ \t]*([a-z0-9._-]*)", re.M)
WRITE_PERMISSIONS = ("admin", "maintain", "write")
SNOOZE_DAYS = 14
ASK_LOG_LIMIT = 8


@dataclass(frozen=True)
class Ask:
    """One request from the tracking issue."""

    kind: str  # run-smoke | snooze | recheck
    target: str  # recipe id, item id, or "" for recheck
    who: str | None  # the author of a command comment; None for a tick (REST cannot say who)
    comment_id: int | None = None  # the command comment, so it is read once


def dashboard_asks(cfg: Config, page: Page) -> list[dict[str, str]]:
    """The checkboxes of a page's sticky comment: [{mark, text}]."""
    out = []
    for r_id in page.recipes:
        r = cfg.recipe(r_id)
        out.append(
            {
                "mark": ASK_MARK.format(kind="run-smoke", target=r.id),
                "text": f"Run the smoke test of {r.title or r.id} now (`{r.id}`)",
            }
        )
    seen = set()
    for b_id in page.blockers:
        b = cfg.blocker(b_id)
        for i in (*b.items, *b.watch):
            if i in seen:
                continue
            seen.add(i)
            item = cfg.item(i)
            out.append(
                {
                    "mark": ASK_MARK.format(kind="snooze", target=i),
                    "text": f"Snooze {item.label or i} for {SNOOZE_DAYS} days (`{i}`)",
                }
            )
    out.append(
        {
            "mark": ASK_MARK.format(kind="recheck", target=""),
            "text": "Re-check every item now, reading everything afresh",
        }
    )
    return out


def ticked_asks(body: str) -> list[Ask]:
    """The boxes ticked in a sticky comment (watcher always writes them empty)."""
    return [Ask(kind, target, None) for kind, target in _TICK.findall(body or "")]


def command_ask(comment: Comment) -> Ask | None:
    """A `/watcher KIND [TARGET]` comment, with its author."""
    m = _COMMAND.search(comment.body or "")
    if not m:
        return None
    return Ask(m.group(1), m.group(2), comment.login, comment.id)


def ask_phrase(cfg: Config, ask: Ask) -> str:
    if ask.kind == "run-smoke":
        r = next((r for r in cfg.recipes if r.id == ask.target), None)
        return f"run the smoke test of {(r.title or r.id) if r else ask.target}"
    if ask.kind == "snooze":
        i = next((i for i in cfg.items if i.id == ask.target), None)
        return f"snooze {(i.label or i.id) if i else ask.target} for {SNOOZE_DAYS} days"
    return "re-check every item"


def judge_ask(cfg: Config, ask: Ask, permission: str | None) -> str | None:
    """Why an ask is refused, or None when it is to be acted on."""
    if ask.kind == "run-smoke" and ask.target not in {r.id for r in cfg.recipes}:
        return f"no recipe {ask.target!r}"
    if ask.kind == "snooze" and ask.target not in {i.id for i in cfg.items}:
        return f"no item {ask.target!r}"
    if ask.who is None:
        return None  # a tick: only people with write access can edit watcher's comment
    if permission not in WRITE_PERMISSIONS:
        return f"@{ask.who} has {permission or 'no'} access; asking needs write access"
    return None


def ask_line(cfg: Config, ask: Ask, at: str, outcome: str) -> str:
    who = f"@{ask.who}" if ask.who else "a maintainer (a tick in this comment)"
    return f"{at[:16].replace('T', ' ')} UTC — {who} asked to {ask_phrase(cfg, ask)}: {outcome}"


def snoozed_until(at: datetime) -> str:
    return (at + timedelta(days=SNOOZE_DAYS)).date().isoformat()


def with_snoozes(cfg: Config, snoozes: dict[str, str], today: date) -> Config:
    """The config with snoozes asked for on the issue laid over watch.toml's (the later wins)."""
    from dataclasses import replace

    from watcher.config.model import Snooze

    items = []
    for item in cfg.items:
        until = snoozes.get(item.id)
        if until and date.fromisoformat(until) >= today:
            mine = date.fromisoformat(until)
            if item.snooze is None or item.snooze.until < mine:
                item = replace(item, snooze=Snooze(mine, "asked on the tracking issue"))
        items.append(item)
    return replace(cfg, items=tuple(items))
