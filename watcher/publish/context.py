"""The page context: what every reader sees, built once for the Markdown pages and the site.

Markdown pages (page.py) and the site (site.py) render from here and only render: the state a
reader is shown (statuses, headlines, blocker marks, "not checked yet" before the first read),
item and run views, freshness in words, the feed's events and the charts. Upstream text is
cleaned by core.text's rule; each renderer escapes it for its own format.
"""

from __future__ import annotations

import hashlib
import html
import math
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from watcher.config.model import Config, Page
from watcher.core.clock import iso, parse_iso
from watcher.core.text import UNSAFE, clean_tree
from watcher.judge import pins as pins_rule
from watcher.judge.evaluate import Evaluation, latest_target_runs
from watcher.judge.fresh import freshness as judged_freshness
from watcher.judge.states import item_satisfied
from watcher.judge.views import item_view
from watcher.publish import prose
from watcher.publish.matrix import build_matrix, cell_summary
from watcher.smoke.launch import fill_placeholders
from watcher.store.smokerun import SmokeResult

if TYPE_CHECKING:
    from watcher.store.db import Store

KIND_WORDS = {
    "pull": "pull request",
    "issue": "issue",
    "commits": "commit stream",
    "releases": "release stream",
    "code": "code check",
    "commit": "commit",
    "discussion": "discussion",
}
PAGE_HEADLINES = {
    "blocked": "currently blocked, watch list",
    "ready-to-test": "ready to test, not yet validated",
    "validated": "validated alternative",
    "regressed": "regressed, was validated",
    "parked": "parked by the maintainers",
    "untested": "not tested yet",
}
FLOOR_HEADLINE = "parked: it runs, but slower than the validated path"
BLOCKER_MARKS = {"blocked": "❌", "reproduces": "❌", "fix-merged": "⚠️", "verified": "✅"}
NOT_CHECKED_MARK = "❔"  # before the first good read: no blocker is known to be blocked
STALE_MARK = "❔"  # its items cannot be read now: the last known status, never "❌ waiting"


def blocker_mark(st: Any) -> str:
    return STALE_MARK if getattr(st, "stale", None) else BLOCKER_MARKS.get(st.status, "")


FEED_LIMIT = 200  # newest events in feed.xml
TIMELINE_LIMIT = 100  # newest events on the index
RUNS_LIMIT = 50  # newest smoke runs in the index table
CHART_LIMIT = 200  # newest smoke runs in the charts
TAG_PREFIX = "tag:watcher,2026:"
_SAFE_HREF = re.compile(r"^(?:https?://|mailto:|#|[^:/?#]*(?:[/?#]|$))", re.IGNORECASE)
STATUS_TONES = {
    "validated": "good",
    "verified": "good",
    "ready-to-test": "warn",
    "fix-merged": "warn",
    "blocked": "bad",
    "reproduces": "bad",
    "regressed": "bad",
    "parked": "muted",
    "untested": "muted",
}


def safe_href(url: Any) -> str:
    """http(s), mailto, fragments and scheme-less relative links survive; the rest becomes '#'."""
    s = str(url or "").strip()
    seen = html.unescape(s)  # what a browser reads: `java&#115;cript:` is javascript:
    if not s or UNSAFE.search(seen) or re.search(r"\s", seen) or not _SAFE_HREF.match(seen):
        return "#"
    return s


def every_text(seconds: float) -> str:
    """How often upstream is checked, as the page and the site say it: "1 min", "30 min", "2 h"."""
    if seconds < 90:
        return f"{seconds:g} s" if seconds != 60 else "1 min"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:g} h"


# ------------------------------------------------------------------ what the store says
def page_sources(store: Store) -> dict[str, Any]:
    """What every page reads from the store, read once per render rather than once per page."""
    return {
        "items": store.items(),
        "runs": store.smoke_runs(limit=200),
        "triggers": store.triggers(),
        "statuses": store.statuses(),
        "pins": store.pins(),
    }


def age_text(seconds: float) -> str:
    """'12 minutes ago': coarse on purpose, so a rebuild a few seconds later reads the same."""
    if seconds < 60:
        return "less than a minute ago"
    minutes = int(seconds // 60)
    if minutes < 120:
        return f"{minutes} minute{'s' if minutes != 1 else ''} ago"
    hours = int(seconds // 3600)
    if hours < 48:
        return f"{hours} hours ago"
    return f"{int(seconds // 86400)} days ago"


def duration_text(seconds: float) -> str:
    if seconds % 86400 == 0:
        return f"{int(seconds // 86400)} d"
    if seconds % 3600 == 0:
        return f"{int(seconds // 3600)} h"
    if seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return f"{seconds:g} s"


def freshness(cfg: Config, last_checked: str | None, generated_at: str) -> dict[str, Any]:
    """judge.fresh's rule in the site's words; never read is "not checked yet", not stopped."""
    f = judged_freshness(cfg, last_checked, parse_iso(generated_at))
    return {
        "last_checked": last_checked,
        "limit_s": int(f.stale_after_s),
        "limit_text": f"{cfg.settings.stale_after:g} × the {duration_text(cfg.settings.interval)} "
        "interval",
        "age_text": "never" if f.age_s is None else age_text(f.age_s),
        "stale": f.stale,
        "not_checked_yet": None,
        "every_text": duration_text(cfg.settings.interval),
    }


def last_checked_at(store: Store, items: dict[str, dict]) -> str | None:
    """The last successful read: the newest item read without error (None before the first).

    A cycle that asked GitHub and read nothing is an attempt, not a check (`last_attempt`)."""
    return max((r["checked_at"] for r in items.values() if r.get("checked_at")), default=None)


def last_attempt(store: Store) -> dict[str, Any]:
    """When GitHub was last asked, and whether every read of that cycle failed."""
    last = store.last_finished_cycle(polled_only=True) or {}
    failed = bool(last.get("items")) and (last.get("errors") or 0) >= last["items"]
    return {"at": last.get("started_at"), "failed": failed}


# ------------------------------------------------------------------ a page
def shown_status(status: str, never_read: bool) -> str:
    """The status a reader sees: before the first successful read the evaluation only knows
    nothing is fixed yet, which is not the same as blocked, so `blocked` shows as `unknown`."""
    return "unknown" if never_read and status == "blocked" else status


def seen_beside(override: dict[str, Any] | None, never_read: bool) -> dict[str, Any] | None:
    """Watcher's own verdict beside a maintainers' status, when it differs and is one: before the
    first read, "blocked" only means nothing is known to be fixed yet."""
    seen = (override or {}).get("evidence")
    return None if not seen or (never_read and seen["status"] == "blocked") else seen


def page_headline(st: Any, shown: str, never_read: bool = False) -> str:
    """One line under a page's status: parked by the speed floor has its own words."""
    if (st.parked or {}).get("by") == "floor":
        return FLOOR_HEADLINE
    if getattr(st, "override", None):  # the maintainers' word is said as theirs
        seen = (seen_beside(st.override, never_read) or {}).get("status")
        mine = f"; watcher saw {prose.PAGE_WORDS.get(seen, seen)}" if seen else ""
        return f"{PAGE_HEADLINES.get(shown, shown)}, as the maintainers say{mine}"
    return PAGE_HEADLINES.get(shown, "not checked yet")


def blocker_words(st: Any, never_read: bool) -> str | None:
    """A blocker's status in reader words: nothing known yet is 'not checked yet', never ❌."""
    if never_read:
        return "not checked yet"
    return prose.STALE_WORDS if st.stale else prose.BLOCKER_WORDS.get(st.status)


def page_context(
    cfg: Config,
    page: Page,
    items: dict[str, dict],
    ev: Evaluation,
    runs: list[dict[str, Any]],
    changes: list[dict[str, Any]],
    last_checked: str | None,
    offline_note: str | None,
    *,
    attempt: dict[str, Any] | None = None,
    triggers: dict[str, dict[str, Any]] | None = None,
    statuses: dict[str, dict[str, Any]] | None = None,
    pins: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything a page template shows. `last_checked` is the last successful read; `attempt`
    ({at, failed}) the last time GitHub was asked. Reader sentences come from `watcher.publish.prose`."""
    gpu = _page_gpu(cfg, page)
    blockers = _page_blockers(cfg, page, items, ev, runs, gpu)
    # nothing read from GitHub and nothing tested: one "not checked yet" state
    never_read = (
        last_checked is None and not runs and not any(v.get("title") for v in _all_views(blockers))
    )
    if never_read:  # nothing is known yet: no blocker is blocked, and none is marked ❌
        for view in blockers:
            view.update(mark=NOT_CHECKED_MARK, words="not checked yet", sentence="not checked yet")
    in_blockers = {i for b in cfg.blockers for i in (*b.items, *b.watch, *b.hints)}
    others = [item_view(cfg, i.id, items.get(i.id)) for i in cfg.items if i.id not in in_blockers]
    said = _said_by_blockers(blockers)
    recipes = [
        _recipe_view(cfg, page, r_id, ev, runs, never_read, (triggers or {}).get(r_id), said)
        | {"pin_lines": _pin_lines(cfg, r_id, ev, (pins or {}).get(r_id))}
        for r_id in page.recipes
    ]
    return {
        **_page_status(cfg, page, ev, blockers, gpu, never_read, statuses, last_checked, attempt),
        "page": page,
        "attempt": attempt,
        "change_lines": prose.reader_changes(
            cfg, changes, {i: r.get("title") for i, r in items.items() if r.get("title")}
        ),
        "not_checked": prose.unread_reason(items, attempt) if never_read else None,
        "attention": prose.attention_line(
            [*_all_views(blockers), *others], last_checked, never_read
        ),
        "blockers": blockers,
        "other_items": others,
        "recipes": recipes,
        "changes": changes,
        "stale_items": [i for i in (*_all_views(blockers), *others) if i["stale"]],
        "offline_note": offline_note,
        "marks": BLOCKER_MARKS,
        "matrix": build_matrix(cfg, runs, recipes=page.recipes, pins=pins),
        "matrix_summary": cell_summary,
        "matrix_link": f"{cfg.site.url.rstrip('/')}/matrix.html" if cfg.site.url else None,
    }


def _page_status(cfg, page, ev, blockers, gpu, never_read, statuses, last_checked, attempt):
    """The page's own status, headline, freshness words and links (the top of a page)."""
    status = ev.pages[page.id]
    since = ((statuses or {}).get(f"page:{page.id}") or {}).get("since")
    since = hand_since(status) or since  # set by hand on that day, before watcher knew
    now = prose.now_of(last_checked, (attempt or {}).get("at"))
    open_blockers = sum(1 for b in blockers if b["status"] not in ("fix-merged", "verified"))
    # the maintainers' word is known before the first read: it never shows as "unknown"
    reader_status = shown_status(status.status, never_read and not status.override)
    return {
        "status": status.status,
        "reason": status.reason,
        "headline": page_headline(status, status.status, never_read),
        "reader_status": reader_status,
        "reader_headline": prose.headline(
            reader_status,
            since=since,
            now=now,
            open_blockers=open_blockers,
            validated_run=status.validated_run,
            gpu=gpu,
            parked=status.parked,
            held_by_pin=bool(status.held_by_pin),
            override=_override_view(cfg, status.override, never_read),
        ),
        "status_since": since,
        "open_blockers": open_blockers,
        "gpu": gpu,
        "last_read": prose.reader_when(last_checked) if last_checked else None,
        "check_every": every_text(cfg.settings.interval),
        "attempt_failed_at": prose.reader_when(attempt["at"])
        if attempt and attempt.get("failed") and attempt.get("at")
        else None,
        "site_link": f"{cfg.site.url.rstrip('/')}/page/{page.id}.html" if cfg.site.url else None,
        "issue_link": cfg.site.issue_link(cfg.notify),
        # the reader's page names the recipe by its title ("… runs on …, but decodes at …")
        "parked": dict(status.parked, reason=prose.titled(cfg, status.parked.get("reason")))
        if status.parked
        else None,
        "comparison": status.comparison,
        "validated_run": status.validated_run,
        "last_checked": last_checked,
        "override": _override_view(cfg, status.override, never_read),
    }


def hand_since(st: Any) -> str | None:
    """The day the maintainers set a page's status by hand (a park's or an override's `since`),
    which the site's card says as the page does."""
    if (st.parked or {}).get("by") == "maintainer" and st.parked.get("since"):
        return st.parked["since"]
    return (st.override or {}).get("since")


def _override_view(cfg, override, never_read) -> dict[str, Any] | None:
    """[page.override] as readers see it: the maintainers' status and reason, and watcher's own
    verdict in reader words where it differs (before the first read watcher has none)."""
    if not override:
        return None
    seen = seen_beside(override, never_read)
    return dict(
        override,
        words=prose.PAGE_WORDS.get(override["status"], override["status"]),
        reason=prose.titled(cfg, override.get("reason")),
        evidence=dict(
            seen,
            words=prose.PAGE_WORDS.get(seen["status"], seen["status"]),
            reason=prose.titled(cfg, seen.get("reason")),
        )
        if seen
        else None,
    )


def _page_blockers(cfg, page, items, ev, runs, gpu) -> list[dict[str, Any]]:
    """A page's blockers in its order, each with its items, hints and reader sentence."""
    target_runs = latest_target_runs(runs)
    return [_blocker_view(cfg, b_id, items, ev, target_runs, gpu) for b_id in page.blockers]


def _blocker_view(cfg, b_id, items, ev, target_runs, gpu) -> dict[str, Any]:
    """One blocker as a page shows it; its sentence names the newest target run of its recipes."""
    b = cfg.blocker(b_id)
    st = ev.blockers[b_id]
    view = {
        "id": b.id,
        "title": b.title,
        "description": b.description,
        "rule": b.rule,
        "status": st.status,
        "reason": st.reason,
        "mark": blocker_mark(st),
        "stale": st.stale,
        "override": st.override,
        "items": [item_view(cfg, i, items.get(i)) for i in b.items],
        "watch": [item_view(cfg, i, items.get(i)) for i in b.watch],
        "hints": [dict(h, view=item_view(cfg, h["item"], items.get(h["item"]))) for h in st.hints],
        "signatures": list(b.signatures),
    }
    for v in view["items"]:
        v["satisfied"] = item_satisfied(cfg.item(v["id"]), items.get(v["id"]))
    run = next(
        (target_runs[r.id] for r in cfg.recipes if b.id in r.blockers and r.id in target_runs),
        None,
    )
    view["sentence"] = prose.blocker_sentence(cfg, view, run, gpu)
    view["words"] = blocker_words(st, False)
    return view


def _said_by_blockers(blockers: list[dict[str, Any]]) -> dict[str, str]:
    """A failure a reproducing blocker already describes is named by that blocker's number."""
    return {
        sig: f"blocker {n}"
        for n, view in enumerate(blockers, 1)
        if view["status"] == "reproduces"
        for sig in view["signatures"]
    }


def _recipe_view(cfg, page, r_id, ev, runs, never_read, trigger, said) -> dict[str, Any]:
    """One recipe as a page shows it: its command, its blockers, its newest runs in words."""
    r = cfg.recipe(r_id)
    r_runs = [x for x in runs if x.get("recipe") == r_id]
    target = [
        x
        for x in r_runs
        if (x.get("hardware") or {}).get("matches_target") and x.get("outcome") != "skipped"
    ]
    gpu = prose.gpu_phrase(r.hardware)
    tested = next((x for x in r_runs if x.get("outcome") != "skipped"), None)
    return {
        "id": r.id,
        "title": r.title or r.id,
        "engine": r.engine,
        "command": _filled_command(r),
        "model": r.model,
        "spec_decode": r.spec_decode,
        "hardware": r.hardware,
        "notes": r.notes,
        "blockers": [
            {"id": b, "status": ev.blockers[b].status, "mark": blocker_mark(ev.blockers[b])}
            for b in r.blockers
        ],
        "latest": r_runs[0] if r_runs else None,
        "latest_target": target[0] if target else None,
        "display": display_command(r),
        "gpu": gpu,
        "blocker_titles": [
            {
                "title": cfg.blocker(b).title,
                "words": blocker_words(ev.blockers[b], never_read),
                "mark": NOT_CHECKED_MARK if never_read else blocker_mark(ev.blockers[b]),
                "number": page.blockers.index(b) + 1 if b in page.blockers else None,
            }
            for b in r.blockers
        ],
        "tested": prose.run_sentence(cfg, tested, gpu, said=said)
        or (None if r.blockers else prose.untested_sentence(gpu)),
        "waiting": prose.waiting_sentence(trigger, gpu, cfg.smoke.backend),
    }


def _pin_lines(cfg: Config, r_id: str, ev: Evaluation, pin: dict[str, Any] | None) -> list[str]:
    """The reader's sentences about the build a recipe runs: its fixes in or not in the pin, a
    vanished pin (watcher.judge.pins)."""
    if not pin:
        return []
    statuses = {b: ev.blockers[b].status for b in cfg.recipe(r_id).blockers if b in ev.blockers}
    return pins_rule.reader_lines(pins_rule.recipe_view(pin, statuses, r_id))


def _filled_command(r) -> list[str]:
    """The recipe's argv with its placeholders filled, as the smoke run would launch it."""
    values = {
        "port": r.host_port or r.port,
        "model": r.model or "{model}",
        "name": f"watcher-{r.id}",
    }
    return [fill_placeholders(a, values) for a in r.command]


def _page_gpu(cfg: Config, page: Page) -> str:
    """The GPU a page's recipes target, in words ('an RTX 3090')."""
    for r_id in page.recipes:
        return prose.gpu_phrase(cfg.recipe(r_id).hardware)
    return "the target GPU"


def _all_views(blockers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [v for b in blockers for v in (*b["items"], *b["watch"])]


def display_command(recipe) -> str:
    """The recipe as a reader would type it: watcher's own `--name` (its container handle for
    teardown) left out, placeholders filled, one option per line."""
    argv = list(recipe.command)
    shown: list[str] = []
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg == "--name" and i + 1 < len(argv) and argv[i + 1] == "{name}":
            skip = True
            continue
        if arg.startswith("--name=") and arg.endswith("{name}"):
            continue
        shown.append(arg)
    port = recipe.host_port or recipe.port
    values = {"port": port, "model": recipe.model or "{model}", "name": recipe.id}
    filled = [fill_placeholders(a, values) for a in shown]
    return shell_lines(filled)


def shell_lines(argv: list[str]) -> str:
    """An argv list as a readable multi-line shell command (display only, never executed).

    docker's options go two to a line up to the image; the engine's command starts a new line,
    and each of its `--option value` pairs gets a line of its own, as the hand-kept page had it.
    """
    import shlex

    q = [shlex.quote(a) for a in argv]
    lines: list[str] = []
    i = 0
    if argv and argv[0] == "docker":
        # docker run [--flag | --opt value | -v x | -p x ...] IMAGE
        head = q[:2] if len(argv) > 1 and argv[1] == "run" else q[:1]
        i = len(head)
        line = list(head)
        while i < len(argv) and argv[i].startswith("-"):
            takes = "=" not in argv[i] and argv[i] not in _DOCKER_FLAGS
            opt = q[i : i + 2] if takes and i + 1 < len(argv) else q[i : i + 1]
            if argv[i] in ("-v", "--volume", "-p", "--publish", "-e", "--env") or (
                len(line) + len(opt) > 8
            ):
                lines.append(" ".join(line))
                line = []
            line.extend(opt)
            i += len(opt)
        lines.append(" ".join(line))
        if i < len(argv):
            lines.append(q[i])  # the image
            i += 1
    rest = argv[i:]
    qrest = q[i:]
    engine: list[str] = []
    j = 0
    while j < len(rest) and (not rest[j].startswith("-") or (engine and rest[j] == "-m")):
        engine.append(qrest[j])
        j += 1
    if engine:
        lines.append(" ".join(engine))
    while j < len(rest):
        part = [qrest[j]]
        j += 1
        while j < len(rest) and not rest[j].startswith("-"):
            part.append(qrest[j])
            j += 1
        lines.append("  " + " ".join(part))
    if not lines:
        return ""
    return lines[0] + "".join(f" \\\n  {line}" for line in lines[1:])


_DOCKER_FLAGS = {"--rm", "-d", "--detach", "-it", "-i", "-t", "--privileged", "--init"}


# ------------------------------------------------------------------ the site
def _fmt(value: Any, pattern: str) -> str | None:
    return pattern % value if isinstance(value, int | float) and math.isfinite(value) else None


def _gpu(gpu: dict[str, Any]) -> str:
    parts = []
    if isinstance(gpu.get("memory_mib"), int | float):
        parts.append(f"{int(gpu['memory_mib'])} MiB")
    if gpu.get("compute_capability"):
        parts.append(f"compute {gpu['compute_capability']}")
    return str(gpu.get("name") or "?") + (f" ({', '.join(parts)})" if parts else "")


def run_view(run: dict[str, Any]) -> dict[str, Any]:
    hw = run.get("hardware") if isinstance(run.get("hardware"), dict) else {}
    m = SmokeResult.from_record(run).metrics
    gpus = [g for g in hw.get("gpus") or [] if isinstance(g, dict)]
    return {
        "run_id": run.get("run_id"),
        "recipe": run.get("recipe"),
        "outcome": run.get("outcome") or "unknown",
        "tone": {"passed": "good", "failed": "bad", "skipped": "muted"}.get(
            run.get("outcome"), "warn"
        ),
        "signature": run.get("signature"),
        "reason": run.get("reason"),
        "stage": run.get("stage_reached"),
        "started_at": run.get("started_at"),
        "engine_version": run.get("engine_version"),
        "gpus": ", ".join(_gpu(g) for g in gpus) or "unknown",
        "on_target": bool(hw.get("matches_target")),
        "startup": _fmt(m.startup_s, "%.0f s"),
        "ttft": _fmt(m.ttft_s, "%.2f s"),
        "decode": _fmt(m.decode_tokens_per_s, "%.1f"),
        "accept": _fmt(m.accept_length, "%.2f"),
        "excerpt": run.get("excerpt"),
    }


def _when(text: Any) -> datetime | None:
    """A stored timestamp, or None when a run document carries something else."""
    try:
        return parse_iso(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _metric(run: dict[str, Any], name: str) -> Any:
    metrics = run.get("metrics")
    return metrics.get(name) if isinstance(metrics, dict) else None


def _nice_step(value: float) -> float:
    """1, 2, 2.5 or 5 times a power of ten, at least `value`."""
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exp + 1e-12:
            return step * exp
    return 10 * exp


def chart(
    cfg: Config, runs: list[dict[str, Any]], metric: str, label: str, unit: str
) -> dict[str, Any]:
    """One line per recipe over time, as SVG coordinates (the template only draws them)."""
    width, height, left, right, top, bottom = 640, 200, 48, 12, 12, 36
    points = [
        (r, _when(r.get("started_at")), _metric(r, metric))
        for r in runs
        if _when(r.get("started_at"))
    ]
    points = [
        (r, t, v)
        for r, t, v in points
        if isinstance(v, int | float) and math.isfinite(v) and v >= 0
    ]
    out: dict[str, Any] = {"metric": metric, "label": label, "unit": unit, "series": []}
    out.update(width=width, height=height, left=left, right=width - right, top=top)
    out["bottom"] = height - bottom
    if not points:
        return out
    points.sort(key=lambda p: (p[1], p[0].get("run_id") or ""))
    t0, t1 = points[0][1].timestamp(), points[-1][1].timestamp()
    span = (t1 - t0) or 1.0
    step = _nice_step(max(v for _, _, v in points) / 4)
    ticks = max(1, math.ceil(max(v for _, _, v in points) / step - 1e-9))
    ymax = step * ticks
    plot_w, plot_h = width - left - right, height - top - bottom

    def xy(t: datetime, v: float) -> tuple[str, str]:
        x = left + (t.timestamp() - t0) / span * plot_w if t1 > t0 else left + plot_w / 2
        y = top + plot_h - v / ymax * plot_h
        return f"{x:.1f}", f"{y:.1f}"

    recipe_ids = [r.id for r in cfg.recipes]
    for n, rid in enumerate(sorted({p[0].get("recipe") or "?" for p in points}, key=str)):
        pts = []
        for r, t, v in points:
            if (r.get("recipe") or "?") != rid:
                continue
            x, y = xy(t, v)
            pts.append({"x": x, "y": y, "label": f"{r.get('run_id')}: {v:.2f} {unit}".strip()})
        style = recipe_ids.index(rid) if rid in recipe_ids else len(recipe_ids) + n
        out["series"].append(
            {
                "recipe": rid,
                "style": style % 4,
                "points": pts,
                "polyline": " ".join(f"{p['x']},{p['y']}" for p in pts),
            }
        )
    out["yticks"] = [
        {"y": f"{top + plot_h - n * step / ymax * plot_h:.1f}", "text": f"{n * step:g}"}
        for n in range(ticks + 1)
    ]
    out["xticks"] = [
        {"x": f"{left:.1f}", "text": iso(points[0][1])[:10], "anchor": "start"},
        {"x": f"{left + plot_w:.1f}", "text": iso(points[-1][1])[:10], "anchor": "end"},
    ]
    return out


def feed_base(cfg: Config) -> str:
    """The prefix of every Atom id: the configured site URL, so two installations never share
    ids; without one, a tag URI named after this config file's location (set [site] url)."""
    if cfg.site.url:
        return cfg.site.url.rstrip("/") + "/"
    digest = hashlib.sha256(str(cfg.path).encode()).hexdigest()[:12]
    return f"{TAG_PREFIX}{digest}/"


def _event_view(
    e: dict[str, Any], base: str = TAG_PREFIX, cfg: Config | None = None, titles=None
) -> dict[str, Any]:
    """An event for the site's timeline and the feed: named by titles (its ids stay in
    status.json and `explain`), the feed entry's title in the words "What changed" uses."""
    at = e.get("at") or ""
    compact = re.sub(r"[^0-9TZ]", "", at)
    message = e.get("message") or ""
    return {
        "id": e["id"],
        "at": at,
        "kind": e.get("kind"),
        "subject": e.get("subject"),
        "old": e.get("old"),
        "new": e.get("new"),
        "message": prose.titled(cfg, message) if cfg else message,
        "title": prose.event_sentence(cfg, e, titles) if cfg else message,
        "tag": f"{base}event/{e['id']}-{compact}",
        "tone": STATUS_TONES.get(e.get("new") or "", "muted"),
    }


def site_context(
    cfg: Config,
    store: Store,
    ev: Evaluation,
    generated_at: str,
) -> dict[str, Any]:
    """Everything the templates show, cleaned and sorted."""
    items = store.items()
    runs = store.smoke_runs(limit=max(RUNS_LIMIT, CHART_LIMIT))
    statuses = store.statuses()
    base = feed_base(cfg)
    titles = {k: v.get("title") for k, v in items.items()}
    events = [
        _event_view(e, base, cfg, titles)
        for e in store.events(limit=max(FEED_LIMIT, TIMELINE_LIMIT))
    ]
    checked = last_checked_at(store, items)
    attempt = last_attempt(store)
    never_read = checked is None and not runs  # nothing read and nothing tested yet
    not_checked = prose.unread_reason(items, attempt) if never_read else None

    def since(key: str) -> str | None:
        return (statuses.get(key) or {}).get("since")

    views = {
        i.id: dict(item_view(cfg, i.id, items.get(i.id)), href=f"item/{i.id}.html")
        for i in cfg.items
    }
    for v in views.values():
        v["kind_word"] = KIND_WORDS.get(v["kind"], v["kind"])
        v["url"] = safe_href(v["url"]) if str(v["url"]).startswith("http") else "#"
        v["problem"] = v["error"] or ("not checked yet" if v["stale"] and not v["title"] else None)
        if v["mislabel"]:  # every place the site prints the label says what GitHub calls it
            v["label"] = f"{v['label']} (GitHub: “{v['mislabel']}”)"
    recipe_titles = {r.id: r.title or r.id for r in cfg.recipes}
    pages = []
    for p in cfg.pages:
        st = ev.pages[p.id]
        shown = shown_status(st.status, never_read and not st.override)
        pages.append(
            {
                "id": p.id,
                "title": p.title,
                "status": shown,
                "tone": STATUS_TONES.get(shown, "muted"),
                "headline": page_headline(st, shown, never_read),
                "reason": prose.titled(cfg, st.reason) if not never_read else not_checked,
                "since": hand_since(st) or (since(f"page:{p.id}") if not never_read else None),
                "output": p.output,
                "href": f"page/{p.id}.html",
                "badge": f"badge/{p.id}.svg",
            }
        )
    blockers = []
    for b in cfg.blockers:
        st = ev.blockers[b.id]
        evidence = []
        for e in st.evidence:
            if e.get("type") == "item":
                v = views.get(e.get("item"))
                evidence.append(
                    dict(e, label=v["label"] if v else e.get("item"), href=(v or {}).get("href"))
                )
            else:
                evidence.append(dict(e, recipe=recipe_titles.get(e.get("recipe"), e.get("recipe"))))
        shown = "not checked yet" if never_read else st.status  # nothing known: no ❌
        blockers.append(
            {
                "id": b.id,
                "title": b.title,
                "description": b.description,
                "status": shown,
                "tone": STATUS_TONES.get(shown, "muted"),
                "mark": "" if never_read else blocker_mark(st),
                "reason": prose.titled(cfg, st.reason),
                "stale": st.stale,
                "since": since(f"blocker:{b.id}"),
                "rule": b.rule,
                "signatures": list(b.signatures),
                "items": [views[i] for i in b.items if i in views],
                "watch": [views[i] for i in b.watch if i in views],
                "evidence": evidence,
                "override": st.override,
                "hints": [
                    dict(
                        h,
                        label=views[h["item"]]["label"] or views[h["item"]]["title"] or h["item"],
                        href=views[h["item"]]["href"],
                    )
                    for h in st.hints
                ],
            }
        )
    in_blockers = {i for b in cfg.blockers for i in (*b.items, *b.watch, *b.hints)}
    run_views = [run_view(r) for r in runs[:RUNS_LIMIT]]
    charted = runs[:CHART_LIMIT]
    pending = [
        dict(t, title=recipe_titles.get(t["recipe"], t["recipe"]))
        for t in store.triggers().values()
    ]
    return clean_tree(
        {
            "generated_at": generated_at,
            "site": {
                "title": cfg.site.title,
                "url": cfg.site.url,
                "guide_url": cfg.site.guide_url,
                "issue_url": cfg.site.issue_link(cfg.notify),
            },
            "attempt": attempt,
            "pending": pending,
            "fresh": dict(freshness(cfg, checked, generated_at), not_checked_yet=not_checked),
            "pages": pages,
            "blockers": blockers,
            "items": [views[i.id] for i in cfg.items],
            "other_items": [views[i.id] for i in cfg.items if i.id not in in_blockers],
            "problems": [v for v in (views[i.id] for i in cfg.items) if v["stale"] or v["error"]],
            "runs": run_views,
            "runs_total": store.count_smoke_runs(),
            "recipes": [{"id": r.id, "title": r.title or r.id} for r in cfg.recipes],
            "charts": [
                chart(cfg, charted, "decode_tokens_per_s", "Decode speed", "tok/s"),
                chart(cfg, charted, "accept_length", "Spec-decode accept length", ""),
            ],
            "events": events[:TIMELINE_LIMIT],
            "feed_events": events[:FEED_LIMIT],
            "feed_updated": events[0]["at"] if events else (checked or generated_at),
            "feed_id": f"{base}feed",
        }
    )
