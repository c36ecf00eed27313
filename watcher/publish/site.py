"""The static status site: index, one page per generated document, item histories, feed, badges.

`build_site` reads the store and writes `index.html`, `page/<page>.html`, `item/<item>.html`,
`feed.xml` (Atom), `badge/<page>.svg` and `status.json` (the contract of `render.status_document`).
Everything is rendered in memory first, written into a temporary folder beside the site folder and
then swapped in, so a failed build leaves the previous site whole and a reader never sees half.

Untrusted text (titles, commit subjects, log excerpts, config strings) is cleaned here once
(secrets redacted, control characters dropped) and autoescaped by the templates. The pages'
Markdown is rendered with raw HTML disabled and links other than http(s)/relative made inert.
The same database renders the same bytes: everything is sorted, nothing is random, and the only
volatile parts (generation time and the "N minutes ago" text) sit on lines marked `data-volatile`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import html
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Any

import markdown
from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor
from markdown.treeprocessors import Treeprocessor
from markupsafe import Markup

from watcher.config.model import Config
from watcher.core.clock import iso, parse_iso, utcnow
from watcher.core.errors import WatcherError
from watcher.core.files import umask
from watcher.core.redact import redact
from watcher.judge.evaluate import Evaluation, evaluate, page_subjects
from watcher.judge.views import item_view
from watcher.publish.matrix import build_matrix, cell_summary
from watcher.publish.page import (
    FLOOR_HEADLINE,
    KIND_WORDS,
    PAGE_HEADLINES,
    blocker_mark,
    environment,
    page_sources,
    page_text,
    status_document,
)
from watcher.publish.prose import unread_reason
from watcher.store.db import Store
from watcher.store.smokerun import SmokeResult

FEED_LIMIT = 200  # newest events in feed.xml
TIMELINE_LIMIT = 100  # newest events on the index
RUNS_LIMIT = 50  # newest smoke runs in the index table
CHART_LIMIT = 200  # newest smoke runs in the charts
# Newest state spans on an item page: a year of hourly checks already fills it (the bench's
# items make ~36 a year), so what the page shows does not grow with the database's age;
# the page counts the older spans and says where they are kept.
HISTORY_LIMIT = 30
MATRIX_RUNS = 1000  # the newest runs the matrix page is made of (one per cell and host is shown)
KEEP_FILES = ("CNAME", ".gitkeep")  # a maintainer's files in the site folder (and git-tracked ones)
TAG_PREFIX = "tag:watcher,2026:"
_CONTROL = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufffe\uffff]"
)
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
}
BADGE_COLOURS = {"good": "#1a7f37", "warn": "#9a6700", "bad": "#cf222e", "muted": "#57606a"}


@dataclass
class SiteReport:
    """What a build wrote, for the CLI and the benchmark."""

    path: Path
    files: list[str] = field(default_factory=list)
    bytes: int = 0
    duration_s: float = 0.0


# ------------------------------------------------------------------ cleaning untrusted text


def clean(value: Any, memo: dict[str, str] | None = None) -> Any:
    """Redact secrets and drop control characters in every string of a structure.

    `memo` remembers cleaned strings within one call: an item's history repeats the same few
    titles and states hundreds of times.
    """
    if isinstance(value, str):
        if memo is None:
            return _CONTROL.sub("", redact(value).replace("\r\n", "\n").replace("\r", "\n"))
        if value not in memo:
            memo[value] = clean(value)
        return memo[value]
    if memo is None:
        memo = {}
    if isinstance(value, dict):
        return {k: clean(v, memo) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v, memo) for v in value]
    return value


def safe_href(url: Any) -> str:
    """http(s), mailto, fragments and scheme-less relative links survive; the rest becomes '#'."""
    s = str(url or "").strip()
    seen = html.unescape(s)  # what a browser reads: `java&#115;cript:` is javascript:
    if not s or _CONTROL.search(seen) or re.search(r"\s", seen) or not _SAFE_HREF.match(seen):
        return "#"
    return s


# ------------------------------------------------------------------ Markdown without raw HTML


class _StripComments(Preprocessor):
    """Drop the generator's HTML comments (every other `<` stays text); let lists start anywhere."""

    _comment = re.compile(r"(?<!\\)<!--.*?-->")

    _list_item = re.compile(r"^ {0,3}(?:[-*+]|1[.)]) ")

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        for line in lines:
            line = self._comment.sub("", line)
            # CommonMark lets a list interrupt a paragraph; Python-Markdown wants a blank line.
            if self._list_item.match(line) and out and out[-1].strip():
                if not self._list_item.match(out[-1]) and not out[-1].startswith((" ", "\t")):
                    out.append("")
            out.append(line)
        return out


class _InertLinks(Treeprocessor):
    """Links to anything but http(s)/relative become plain text; images become their alt text."""

    def __init__(self, md: markdown.Markdown, rename: dict[str, str]):
        super().__init__(md)
        self.rename = rename

    def run(self, root: ET.Element) -> None:
        for parent in root.iter():
            for i, child in enumerate(list(parent)):
                if child.tag == "img":
                    span = ET.Element("span", {"class": "img-alt"})
                    span.text = f"[image: {child.get('alt') or 'no description'}]"
                    span.tail = child.tail
                    parent.remove(child)
                    parent.insert(i, span)
                elif child.tag == "a":
                    href = child.get("href") or ""
                    target = self.rename.get(PurePosixPath(href).name) if href else None
                    if target and "://" not in href:
                        child.set("href", target)
                    elif safe_href(href) == "#" and not href.startswith("#"):
                        child.tag = "span"
                        child.attrib.clear()
                        child.set("class", "inert-link")


class _StackTables(Treeprocessor):
    """Tables a phone can read: each cell labelled with its column (class `stack`, data-label),
    so the stylesheet turns rows into cards below 40rem instead of scrolling sideways."""

    def run(self, root: ET.Element) -> None:
        for table in root.iter("table"):
            table.set("class", "stack")
            heads = ["".join(th.itertext()).strip() for th in table.iter("th")]
            for body in table.iter("tbody"):
                for tr in body.iter("tr"):
                    for n, td in enumerate(tr.findall("td")):
                        if n < len(heads) and heads[n]:
                            td.set("data-label", heads[n])


class _NoRawHTML(Extension):
    def __init__(self, rename: dict[str, str]):
        super().__init__()
        self.rename = rename

    def extendMarkdown(self, md: markdown.Markdown) -> None:  # noqa: N802 (Markdown's API name)
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")
        md.preprocessors.register(_StripComments(md), "strip_comments", 20)
        md.treeprocessors.register(_InertLinks(md, self.rename), "inert_links", 0)
        md.treeprocessors.register(_StackTables(md), "stack_tables", 1)
        for char in "<|~":  # render.md_escape backslash-escapes these; CommonMark does too
            if char not in md.ESCAPED_CHARS:
                md.ESCAPED_CHARS.append(char)


def markdown_to_html(text: str, rename: dict[str, str] | None = None) -> Markup:
    """A generated page's Markdown as HTML that cannot carry markup or scripts of its own."""
    md = markdown.Markdown(
        extensions=["tables", "fenced_code", _NoRawHTML(rename or {})], output_format="html"
    )
    return Markup(md.convert(clean(text)))


# ------------------------------------------------------------------ view models


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
    limit = cfg.settings.stale_after * cfg.settings.interval
    out = {
        "last_checked": last_checked,
        "limit_s": int(limit),
        "limit_text": f"{cfg.settings.stale_after:g} × the {duration_text(cfg.settings.interval)} "
        "interval",
        "age_text": "never",
        # never read is "not checked yet" (with its why), not "checks have stopped"
        "stale": False,
        "not_checked_yet": None,
        "every_text": duration_text(cfg.settings.interval),
    }
    checked, generated = _when(last_checked), _when(generated_at)
    if checked and generated:
        age = max(0.0, (generated - checked).total_seconds())
        out.update(age_text=age_text(age), stale=age > limit)
    return out


def last_checked_at(store: Store, items: dict[str, dict]) -> str | None:
    """The last successful read: the newest item read without error (None before the first).

    A cycle that asked GitHub and read nothing is an attempt, not a check (`last_attempt`)."""
    return max((r["checked_at"] for r in items.values() if r.get("checked_at")), default=None)


def last_attempt(store: Store) -> dict[str, Any]:
    """When GitHub was last asked, and whether every read of that cycle failed."""
    last = store.last_finished_cycle(polled_only=True) or {}
    failed = bool(last.get("items")) and (last.get("errors") or 0) >= last["items"]
    return {"at": last.get("started_at"), "failed": failed}


def state_spans(observations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive observations with the same state folded into spans, newest first.

    The reference for `Store.state_spans`, which keeps the same spans as observations arrive.
    """
    spans: list[dict[str, Any]] = []
    for obs in sorted(observations, key=lambda o: o["id"]):
        data = obs.get("data") or {}
        key = (obs.get("state"), obs.get("fingerprint"), obs.get("error"))
        if spans and spans[-1]["key"] == key:
            spans[-1]["to"] = obs.get("observed_at")
            spans[-1]["count"] += 1
            continue
        spans.append(
            {
                "key": key,
                "state": obs.get("state"),
                "title": obs.get("title"),
                "error": obs.get("error"),
                "superseded_by": data.get("superseded_by"),
                "superseded_state": data.get("superseded_state"),
                "in_release": data.get("in_release"),
                "from": obs.get("observed_at"),
                "to": obs.get("observed_at"),
                "count": 1,
            }
        )
    for s in spans:
        s.pop("key")
    spans.reverse()
    return spans


def history_rows(spans: list[dict[str, Any]]) -> list[SimpleNamespace]:
    """An item page's history rows, cleaned, as attribute objects.

    Up to HISTORY_LIMIT rows per item (older_spans counts the rest): the templates read attributes (a dict makes jinja2 try
    and fail `getattr` first), and the stored times and counts are ours, so only the upstream
    text is cleaned, once per distinct string.
    """
    memo: dict[str, str] = {}
    trusted = ("from", "to", "count")
    return [
        SimpleNamespace(**{k: v if k in trusted else clean(v, memo) for k, v in s.items()})
        for s in spans
    ]


def older_spans(store: Store, item_id: str, shown: int) -> int:
    """How many of the item's spans the page leaves out: one count on the (item_id, id) index."""
    total = store.db.execute(
        "SELECT COUNT(*) FROM state_spans WHERE item_id = ?", (item_id,)
    ).fetchone()[0]
    return max(0, total - shown)


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


def badge(label: str, status: str) -> dict[str, Any]:
    """A shields-style badge: widths estimated from the text (Verdana 11px averages ~6.5 px)."""
    lw = int(len(label) * 6.5) + 12
    sw = int(len(status) * 6.5) + 12
    return {
        "label": label,
        "status": status,
        "label_w": lw,
        "status_w": sw,
        "width": lw + sw,
        "colour": BADGE_COLOURS[STATUS_TONES.get(status, "muted")],
    }


def feed_base(cfg: Config) -> str:
    """The prefix of every Atom id: the configured site URL, so two installations never share
    ids; without one, a tag URI named after this config file's location (set [site] url)."""
    if cfg.site.url:
        return cfg.site.url.rstrip("/") + "/"
    digest = hashlib.sha256(str(cfg.path).encode()).hexdigest()[:12]
    return f"{TAG_PREFIX}{digest}/"


def _event_view(e: dict[str, Any], base: str = TAG_PREFIX) -> dict[str, Any]:
    at = e.get("at") or ""
    compact = re.sub(r"[^0-9TZ]", "", at)
    return {
        "id": e["id"],
        "at": at,
        "kind": e.get("kind"),
        "subject": e.get("subject"),
        "old": e.get("old"),
        "new": e.get("new"),
        "message": e.get("message") or "",
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
    events = [_event_view(e, base) for e in store.events(limit=max(FEED_LIMIT, TIMELINE_LIMIT))]
    checked = last_checked_at(store, items)
    attempt = last_attempt(store)
    never_read = checked is None and not runs  # nothing read and nothing tested yet
    not_checked = unread_reason(items, attempt) if never_read else None

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
    pages = []
    for p in cfg.pages:
        st = ev.pages[p.id]
        # Before the first successful read the evaluation only knows nothing is fixed yet:
        # that is not the same as blocked, so readers see `unknown`.
        shown = "unknown" if never_read and st.status == "blocked" else st.status
        pages.append(
            {
                "id": p.id,
                "title": p.title,
                "status": shown,
                "tone": STATUS_TONES.get(shown, "muted"),
                "headline": FLOOR_HEADLINE
                if (st.parked or {}).get("by") == "floor"
                else PAGE_HEADLINES.get(shown, "not checked yet"),
                "reason": st.reason if not never_read else not_checked,
                "since": since(f"page:{p.id}") if not never_read else None,
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
                evidence.append(dict(e))
        shown = "not checked yet" if never_read else st.status  # nothing known: no ❌
        blockers.append(
            {
                "id": b.id,
                "title": b.title,
                "description": b.description,
                "status": shown,
                "tone": STATUS_TONES.get(shown, "muted"),
                "mark": "" if never_read else blocker_mark(st),
                "reason": st.reason,
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
    recipe_titles = {r.id: r.title or r.id for r in cfg.recipes}
    pending = [
        dict(t, title=recipe_titles.get(t["recipe"], t["recipe"]))
        for t in store.triggers().values()
    ]
    return clean(
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


# ------------------------------------------------------------------ rendering


def page_markdown(cfg: Config, store: Store, ev: Evaluation) -> dict[str, str]:
    """Re-render each page's Markdown from the store without writing anything.

    Uses the page's current version (the range of events it shows), as the cycle last rendered it,
    less the cycle's own offline note (the site says when upstream was last read instead).
    """
    sources = page_sources(store)
    checked = last_checked_at(store, sources["items"])
    attempt = last_attempt(store)
    out = {}
    for page in cfg.pages:
        cv = store.current_page_version(page.id)
        lo, hi = (cv["from_event"], cv["to_event"]) if cv else (0, store.last_event_id())
        subjects = page_subjects(cfg, page)
        changes = store.events(after=lo, upto=hi, limit=30, subjects=subjects)
        out[page.id] = page_text(cfg, page, ev, sources, changes, checked, None, attempt)
    return out


def render_site(
    cfg: Config,
    store: Store,
    *,
    ev: Evaluation | None = None,
    status_doc: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> dict[str, str]:
    """Every file of the site, path -> text. Pure with respect to the store and `now`."""
    now = now or utcnow()
    generated_at = iso(now)
    if ev is None:
        ev = evaluate(cfg, store.items(), store.evaluation_runs(), store.statuses(), now)
    if status_doc is None:
        cycle = store.last_finished_cycle(polled_only=True) or store.last_finished_cycle()
        status_doc = status_document(
            cfg, store.items(), ev, cycle, store.smoke_runs(limit=20), generated_at
        )
    page_texts = page_markdown(cfg, store, ev)
    ctx = site_context(cfg, store, ev, generated_at)
    env = environment(cfg)
    env.filters["href"] = safe_href
    env.globals["css"] = Markup(env.loader.get_source(env, "site/style.css")[0])
    files: dict[str, str] = {}
    files["index.html"] = env.get_template("site/index.html.j2").render(**ctx, root="")
    rename = {PurePosixPath(p.output).name: f"{p.id}.html" for p in cfg.pages}
    for page in ctx["pages"]:
        body = markdown_to_html(page_texts.get(page["id"], ""), rename)
        files[page["href"]] = env.get_template("site/document.html.j2").render(
            **ctx, root="../", page=page, body=body
        )
    all_items = store.items()
    for item in ctx["items"]:
        history = history_rows(store.state_spans(item["id"], HISTORY_LIMIT))
        older = older_spans(store, item["id"], len(history)) if len(history) >= HISTORY_LIMIT else 0
        details = clean((all_items.get(item["id"]) or {}).get("details") or {})
        commits = [
            dict(c, url=safe_href(c.get("url")))
            for c in (details.get("commits") or [])
            if isinstance(c, dict)
        ][:20]
        item_events = [e for e in ctx["feed_events"] if e["subject"] == item["id"]]
        files[item["href"]] = env.get_template("site/item.html.j2").render(
            **ctx,
            root="../",
            item=item,
            history=history,
            older=older,
            commits=commits,
            item_events=item_events,
        )
    files["feed.xml"] = env.get_template("site/feed.xml.j2").render(**ctx)
    from watcher.bisect.report import site_files

    files.update(site_files(store, env, ctx, clean))  # a page per bisect run
    for page in ctx["pages"]:
        files[page["badge"]] = env.get_template("site/badge.svg.j2").render(
            badge=badge(page["title"], page["status"])
        )
    files["status.json"] = (
        json.dumps(status_doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )
    mx = clean(build_matrix(cfg, store.smoke_runs(limit=MATRIX_RUNS), now=now))
    files["matrix.html"] = env.get_template("site/matrix.html.j2").render(
        **ctx, root="", mx=mx, summary=cell_summary
    )
    files["matrix.json"] = json.dumps(mx, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    files[".nojekyll"] = ""
    return files


# ------------------------------------------------------------------ writing, atomically


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return rc == 0


def check_site_dir(cfg: Config, site: Path) -> None:
    """Refuse to replace a folder that holds anything but a site (the config, the data, docs)."""
    site = site.resolve()
    protected = {cfg.base_dir.resolve(), cfg.data_dir.resolve(), Path.home().resolve(), Path("/")}
    if site in protected or cfg.data_dir.resolve().is_relative_to(site):
        raise WatcherError(f"[watcher] site_dir = {site}: the site needs a folder of its own")
    if site.is_dir():
        names = {p.name for p in site.iterdir()}
        if names - {".gitkeep", ".nojekyll", *KEEP_FILES} and "status.json" not in names:
            raise WatcherError(
                f"[watcher] site_dir = {site}: it holds files that are not a watcher site "
                "(no status.json); point site_dir at an empty or watcher-built folder"
            )


def _tracked(site: Path) -> list[str]:
    """Files git tracks inside the site folder (e.g. .gitkeep): a rebuild never deletes them."""
    if not site.is_dir() or shutil.which("git") is None:
        return []
    try:
        out = subprocess.run(
            ["git", "-C", str(site), "ls-files", "-z", "--", "."],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:  # not inside a git repository
        return []
    return [name for name in os.fsdecode(out.stdout).split("\0") if name]


def write_site(site: Path, files: dict[str, str | bytes]) -> int:
    """Write into a temporary folder beside `site`, then swap it in. Returns bytes written."""
    site.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{site.name}-build-", dir=site.parent))
    total = 0
    try:
        for rel, data in sorted(files.items()):
            raw = data.encode("utf-8") if isinstance(data, str) else data
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as f:
                f.write(raw)
            total += len(raw)
        for name in (*KEEP_FILES, *_tracked(site)):
            if (site / name).is_file() and name not in files:
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(site / name, tmp / name)
        os.chmod(tmp, 0o777 & ~umask())  # mkdtemp's 0700 would hide the site
        if site.is_dir() and _exchange(tmp, site):
            shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the previous site
            return total
        old = None
        if site.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{site.name}-old-", dir=site.parent))
            os.replace(site, old / "site")
        os.replace(tmp, site)
        if old:
            shutil.rmtree(old, ignore_errors=True)
        return total
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def build_site(
    cfg: Config,
    *,
    store: Store | None = None,
    ev: Evaluation | None = None,
    status_doc: dict[str, Any] | None = None,
    now: datetime | None = None,
) -> SiteReport:
    """Render the whole site from the store and swap it into `cfg.site_dir`.

    The cycle passes its evaluation and its status document (status.json is the cycle's own
    document); everything else, the documents' Markdown included, is rendered from the store, so
    `watcher build-site` on the same database writes the same files.
    """
    started = time.monotonic()
    site = cfg.site_dir
    check_site_dir(cfg, site)
    own = store is None
    store = store or Store(cfg.db_path)
    try:
        files = render_site(cfg, store, ev=ev, status_doc=status_doc, now=now)
    finally:
        if own:
            store.close()
    total = write_site(site, files)
    return SiteReport(
        path=site,
        files=sorted(files),
        bytes=total,
        duration_s=round(time.monotonic() - started, 3),
    )
