"""Rendering: pages (SGLANG.md) through jinja2, and the status document (status.json).

Templates come from a `templates/` folder beside the config first (a maintainer's overrides), then
from the package (installed wheel) or the checkout. Untrusted text (titles, commit subjects, log
excerpts) goes through the `md` filter, which makes HTML and Markdown syntax inert.

Why one file of ~700 lines: the page context, the `md` filter that makes upstream text inert, and
status.json are one contract; keeping them together keeps the escaping rules in one place.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

from watcher.config.model import Config, Page
from watcher.core.files import atomic_write
from watcher.core.redact import redact
from watcher.judge.evaluate import Evaluation, latest_target_runs
from watcher.judge.states import item_satisfied
from watcher.judge.views import item_view
from watcher.publish import prose
from watcher.publish.matrix import build_matrix, cell_summary
from watcher.smoke.launch import fill_placeholders

if TYPE_CHECKING:  # jinja2 is imported by the commands that render, not by `status` or `--help`
    import jinja2

    from watcher.store.db import Store

KIND_WORDS = {
    "pull": "pull request",
    "issue": "issue",
    "commits": "commit stream",
    "releases": "release stream",
    "code": "code check",
}
PAGE_HEADLINES = {
    "blocked": "currently blocked, watch list",
    "ready-to-test": "ready to test, not yet validated",
    "validated": "validated alternative",
    "regressed": "regressed, was validated",
    "parked": "parked by the maintainers",
}
FLOOR_HEADLINE = "parked: it runs, but slower than the validated path"
# upstream text in status.json, and how much of each is kept (the page keeps as much or less)
UPSTREAM_FIELDS = {"title": 300, "error": 500, "moved_to": 500, "in_release": 120, "state": 120}
BLOCKER_MARKS = {"blocked": "❌", "reproduces": "❌", "fix-merged": "⚠️", "verified": "✅"}
NOT_CHECKED_MARK = "❔"  # before the first good read: no blocker is known to be blocked
STALE_MARK = "❔"  # its items cannot be read now: the last known status, never "❌ waiting"


def blocker_mark(st: Any) -> str:
    return STALE_MARK if getattr(st, "stale", None) else BLOCKER_MARKS.get(st.status, "")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
ZWJ = "\u200d"
# what GitHub turns into a ping or a cross-reference; a ZWJ goes after each match
_REFERENCE = re.compile(r"@|#(?=\d)|\bGH-(?=\d)|://|\bwww(?=\.)", re.IGNORECASE)


def package_templates() -> Path:
    """The templates folder inside the installed wheel, else the checkout's top-level one."""
    packaged = resources.files("watcher") / "templates"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "templates"  # watcher/publish/page.py -> checkout


def plain_text(text: Any, limit: int = 300) -> str:
    """Upstream text made safe to show anywhere: tokens and URL credentials hidden, no control or
    bidi characters, one line, bounded length (status.json as is; the start of `md`)."""
    s = redact("" if text is None else str(text))
    s = _CONTROL.sub("", s).replace("\r", " ").replace("\n", " ")
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return s


def inert(text: str) -> str:
    """No @mention, #123, owner/repo#45, GH-123 or bare link stays live: a zero-width joiner
    breaks each, so GitHub neither pings anyone nor cross-links another thread."""
    return _REFERENCE.sub(lambda m: m.group(0) + ZWJ, text)


def md_escape(text: Any, limit: int = 300) -> str:
    """Inline Markdown: no HTML, no links, no mentions or references, no emphasis, one line,
    bounded length. `<` is escaped, so nothing can open an HTML comment or fake our markers."""
    s = plain_text(text, limit)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return inert(_MD_SPECIAL.sub(r"\\\1", s))


def safe_url(url: Any) -> str:
    """Only http(s) links survive; anything else (javascript:, data:) becomes '#'."""
    s = str(url or "")
    if not re.match(r"^https?://[^\s<>()\"']+$", s):
        return "#"
    return s


def code_span(text: Any, limit: int = 300) -> str:
    """Inline code that untrusted text cannot close: a fence longer than any backtick run in it."""
    s = _CONTROL.sub("", redact("" if text is None else str(text))).replace("\n", " ")
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    fence = "`" * (max((len(r) for r in re.findall("`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _ticked(text: Any) -> list[tuple[bool, str]]:
    """A sentence with `code` in backticks -> [(is_code, part)]; unbalanced: all plain text."""
    parts = str(text or "").split("`")
    if len(parts) % 2 == 0:
        return [(False, str(text or ""))]
    return [(i % 2 == 1, p) for i, p in enumerate(parts) if p]


def md_ticks(text: Any, limit: int = 400) -> str:
    """A plain sentence for Markdown whose `backticked` parts become inline code (warnings)."""
    return "".join(code_span(p) if code else md_escape(p, limit) for code, p in _ticked(text))


def html_ticks(text: Any) -> Markup:
    """The same sentence for the site: escaped HTML with <code> for the backticked parts."""
    return Markup("").join(
        Markup("<code>{}</code>").format(p) if code else escape(p) for code, p in _ticked(text)
    )


def code_block(text: str | None) -> str:
    """A fenced block that untrusted text cannot close, nor use to open or fake an HTML comment
    marker (`<!--`, `-->`) that watcher's own marker search or digest would read."""
    body = _CONTROL.sub("", redact(text or "")).rstrip("\n")
    body = body.replace("<!--", "<!" + ZWJ + "--").replace("-->", "--" + ZWJ + ">")
    fence = "```"
    while fence in body:
        fence += "`"
    return f"{fence}text\n{body}\n{fence}"


def shell_join(argv: list[str] | tuple[str, ...]) -> str:
    """An argv list shown as a readable multi-line shell command (display only, never executed).

    A new line starts at each long option and at `python`, so the page reads like the seed's recipe.
    """
    import shlex

    lines: list[list[str]] = [[]]
    for arg in argv:
        if lines[-1] and (
            arg.startswith("--") and lines[-1][0] != "docker" or arg in ("python", "python3")
        ):
            lines.append([])
        lines[-1].append(shlex.quote(arg))
    return " \\\n  ".join(" ".join(line) for line in lines)


_ENVIRONMENTS: dict[tuple[str, ...], jinja2.Environment] = {}


def environment(cfg: Config | None = None) -> jinja2.Environment:
    """The process's jinja2 Environment for this template search path, built on first use.

    Compiling the templates costs more than rendering them, so every cycle of `serve` and every
    render in a process shares one Environment per folder list; jinja2 checks each template's
    mtime on every lookup, so an edited template is still picked up. A fresh process (each
    `check-now`, each Actions run) would compile them all again: the compiled code is kept in
    the data folder (jinja2's FileSystemBytecodeCache), and a template whose source changed is
    compiled anew (the cache checks each template's source hash).
    """
    search = []
    if cfg is not None and (cfg.base_dir / "templates").is_dir():
        search.append(str(cfg.base_dir / "templates"))
    search.append(str(package_templates()))
    key = tuple(search)
    env = _ENVIRONMENTS.get(key)
    if env is None:
        env = _ENVIRONMENTS.setdefault(key, _new_environment(search))
    if env.bytecode_cache is None and cfg is not None:
        # the first data folder seen keeps the compiled code (it is the same for every config)
        cache = template_cache_dir(cfg)
        if cache is not None:
            import jinja2

            env.bytecode_cache = jinja2.FileSystemBytecodeCache(str(cache))
    return env


def template_cache_dir(cfg: Config) -> Path | None:
    """data/cache/jinja2-<versions>: compiled templates of this watcher and jinja2 version and
    these Environment options (their code differs when those do). None if it cannot be made."""
    import jinja2

    from watcher import __version__

    tag = hashlib.sha256(repr((__version__, sorted(_ENV_OPTIONS.items()))).encode()).hexdigest()
    path = cfg.data_dir / "cache" / f"jinja2-{jinja2.__version__}-{tag[:12]}"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


_ENV_OPTIONS = {
    "keep_trailing_newline": True,
    "trim_blocks": True,
    "lstrip_blocks": True,
    "auto_reload": True,
}


def _new_environment(search: list[str]) -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(search),
        autoescape=jinja2.select_autoescape(["html", "xml", "svg", "html.j2", "xml.j2", "svg.j2"]),
        undefined=jinja2.StrictUndefined,
        **_ENV_OPTIONS,
    )
    env.filters.update(
        md=md_escape,
        url=safe_url,
        code_block=code_block,
        code=code_span,
        ticks=md_ticks,
        html_ticks=html_ticks,
        redact=redact,
        shell=shell_join,
        kind_word=lambda k: KIND_WORDS.get(k, k),
        day=lambda s: (s or "")[:10] or "—",
        sentence=lambda s: (s[:1].upper() + s[1:]) if s else "",
    )
    return env


def every_text(seconds: float) -> str:
    """How often upstream is checked, as the page and the site say it: "1 min", "30 min", "2 h"."""
    if seconds < 90:
        return f"{seconds:g} s" if seconds != 60 else "1 min"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:g} h"


# ------------------------------------------------------------------ the status document


def status_document(
    cfg: Config,
    items: dict[str, dict],
    ev: Evaluation,
    cycle: dict[str, Any] | None,
    runs: list[dict[str, Any]],
    generated_at: str,
    *,
    attempt: dict[str, Any] | None = None,
    triggers: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The contract other tools read (site/status.json).

    `runs.last_successful_read` (the newest item read without error) is kept apart from
    `runs.last_attempt` (when GitHub was last asked, and whether every read failed); the
    heartbeat (`stale_at`) counts from the last successful read, so a cycle that reads nothing
    never looks like a fresh check.
    """
    blockers = []
    for b in cfg.blockers:
        st = ev.blockers[b.id]
        blockers.append(
            {
                "id": b.id,
                "title": b.title,
                "status": st.status,
                "reason": _plain(st.reason, 500),
                "stale": st.stale,
                "items": list(b.items),
                "watch": list(b.watch),
                "rule": b.rule,
                "signatures": list(b.signatures),
                "evidence": list(st.evidence),
                "override": st.override,
                "hints": [dict(h) for h in st.hints],
                "hints_trigger_smoke": b.hints_trigger_smoke,
            }
        )
    last_read = max((r["checked_at"] for r in items.values() if r.get("checked_at")), default=None)
    # before the first good read there is one state, with its why, on every view
    not_checked = None if last_read or runs else prose.unread_reason(items, attempt)
    pages = [
        {
            "id": p.id,
            "not_checked_yet": not_checked,
            "title": p.title,
            "status": ev.pages[p.id].status,
            "reason": _plain(ev.pages[p.id].reason, 500),
            "output": p.output,
            "blockers": list(p.blockers),
            "recipes": list(p.recipes),
            "parked": ev.pages[p.id].parked,
            "comparison": ev.pages[p.id].comparison,
        }
        for p in cfg.pages
    ]
    views = [item_view(cfg, i.id, items.get(i.id)) for i in cfg.items]
    for v in views:
        v.pop("details")
        for key, limit in UPSTREAM_FIELDS.items():
            v[key] = _plain(v.get(key), limit)
        # evidence lines, warnings and the summary carry upstream text too (file lines, commit
        # subjects, paths): made plain and bounded like titles, links kept only when safe
        v["summary"] = _plain(v.get("summary"), 500)
        v["warnings"] = [_plain(w, 500) for w in v.get("warnings") or []]
        v["evidence"] = _plain_tree(v.get("evidence"))
        if safe_url(v["url"]) == "#":
            v["url"] = cfg.item(v["id"]).html_url
    last = cycle or {}
    return {
        "generated_at": generated_at,
        "pages": pages,
        "blockers": blockers,
        "items": views,
        "runs": {
            "last_cycle": {
                k: last.get(k)
                for k in (
                    "id",
                    "started_at",
                    "finished_at",
                    "mode",
                    "items",
                    "changes",
                    "requests",
                    "not_modified",
                    "errors",
                    "duration_s",
                    "rate_remaining",
                    "rate_limit",
                )
            }
            if last
            else None,
            "last_checked": last_read,
            "last_successful_read": last_read,
            "last_attempt": dict(attempt) if attempt else None,
            "interval_s": cfg.settings.interval,
            # Heartbeat contract for readers of a static copy (the site): when now is past
            # stale_at, checks have stopped (nothing was read for stale_after x interval).
            "stale_after_s": cfg.settings.stale_after * cfg.settings.interval,
            "stale_at": _plus_seconds(last_read, cfg.settings.stale_after * cfg.settings.interval),
            "pending_smoke": [
                {
                    k: t.get(k)
                    for k in (
                        "recipe",
                        "state",
                        "reasons",
                        "since",
                        "run_id",
                        "actions_run_id",
                        "note",
                        "attempts",
                    )
                }
                for t in (triggers or {}).values()
            ],
            "smoke": [
                {
                    k: r.get(k)
                    for k in (
                        "run_id",
                        "recipe",
                        "outcome",
                        "signature",
                        "blockers_reproduced",
                        "reason",
                        "hardware",
                        "engine_version",
                        "metrics",
                        "started_at",
                        "finished_at",
                    )
                }
                for r in (_shown_run(r) for r in runs[:20])
            ],
        },
    }


def _plain(text: Any, limit: int) -> str | None:
    return None if text is None else plain_text(text, limit)


def _plain_tree(value: Any, key: str = "") -> Any:
    """Every string of an evidence structure made plain (500 characters); URLs kept if safe."""
    if isinstance(value, dict):
        return {k: _plain_tree(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_tree(v, key) for v in value]
    if isinstance(value, str):
        if key == "url" or key.endswith("_url"):
            return value if safe_url(value) != "#" else None
        return plain_text(value, 500)
    return value


def _shown_run(run: dict[str, Any]) -> dict[str, Any]:
    """A smoke run for status.json: the text it carries from engines and runners made plain."""
    run = dict(run)
    for key in ("reason", "engine_version", "signature"):
        run[key] = _plain(run.get(key), 500 if key == "reason" else 120)
    return run


def _plus_seconds(stamp: str | None, seconds: float) -> str | None:
    if not stamp:
        return None
    at = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------ pages


def page_sources(store: Store) -> dict[str, Any]:
    """What every page reads from the store, read once per render rather than once per page."""
    return {
        "items": store.items(),
        "runs": store.smoke_runs(limit=200),
        "triggers": store.triggers(),
        "statuses": store.statuses(),
    }


def page_text(
    cfg: Config,
    page: Page,
    ev: Evaluation,
    sources: dict[str, Any],
    changes: list[dict[str, Any]],
    last_checked: str | None,
    offline_note: str | None,
    attempt: dict[str, Any] | None,
) -> str:
    """One page's Markdown from `page_sources` and the events it shows (the cycle and the site)."""
    ctx = page_context(
        cfg,
        page,
        sources["items"],
        ev,
        sources["runs"],
        changes,
        last_checked,
        offline_note,
        attempt=attempt,
        triggers=sources["triggers"],
        statuses=sources["statuses"],
    )
    return render_page(cfg, ctx)


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
) -> dict[str, Any]:
    """Everything a page template shows. `last_checked` is the last successful read; `attempt`
    ({at, failed}) the last time GitHub was asked. Reader sentences come from `watcher.publish.prose`."""
    status = ev.pages[page.id]
    target_runs = latest_target_runs(runs)
    gpu = _page_gpu(cfg, page)
    blockers = []
    for b_id in page.blockers:
        b = cfg.blocker(b_id)
        st = ev.blockers[b_id]
        blockers.append(
            {
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
                "hints": [
                    dict(h, view=item_view(cfg, h["item"], items.get(h["item"]))) for h in st.hints
                ],
                "signatures": list(b.signatures),
            }
        )
        view = blockers[-1]
        for v in view["items"]:
            v["satisfied"] = item_satisfied(cfg.item(v["id"]), items.get(v["id"]))
        run = next(
            (target_runs[r.id] for r in cfg.recipes if b.id in r.blockers and r.id in target_runs),
            None,
        )
        view["sentence"] = prose.blocker_sentence(cfg, view, run, gpu)
        view["words"] = prose.STALE_WORDS if st.stale else prose.BLOCKER_WORDS.get(st.status)
    # nothing read from GitHub and nothing tested: one "not checked yet" state
    never_read = (
        last_checked is None and not runs and not any(v.get("title") for v in _all_views(blockers))
    )
    if never_read:  # nothing is known yet: no blocker is blocked, and none is marked ❌
        for view in blockers:
            view.update(mark=NOT_CHECKED_MARK, words="not checked yet", sentence="not checked yet")
    # a failure a reproducing blocker already describes is named by that blocker's number
    said = {
        sig: f"blocker {n}"
        for n, view in enumerate(blockers, 1)
        if view["status"] == "reproduces"
        for sig in view["signatures"]
    }
    in_blockers = {i for b in cfg.blockers for i in (*b.items, *b.watch, *b.hints)}
    others = [item_view(cfg, i.id, items.get(i.id)) for i in cfg.items if i.id not in in_blockers]
    recipes = []
    for r_id in page.recipes:
        r = cfg.recipe(r_id)
        r_runs = [x for x in runs if x.get("recipe") == r_id]
        target = [
            x
            for x in r_runs
            if (x.get("hardware") or {}).get("matches_target") and x.get("outcome") != "skipped"
        ]
        recipes.append(
            {
                "id": r.id,
                "title": r.title or r.id,
                "engine": r.engine,
                "command": [
                    fill_placeholders(
                        a,
                        {
                            "port": r.host_port or r.port,
                            "model": r.model or "{model}",
                            "name": f"watcher-{r.id}",
                        },
                    )
                    for a in r.command
                ],
                "model": r.model,
                "spec_decode": r.spec_decode,
                "hardware": r.hardware,
                "notes": r.notes,
                "blockers": [
                    {
                        "id": b,
                        "status": ev.blockers[b].status,
                        "mark": blocker_mark(ev.blockers[b]),
                    }
                    for b in r.blockers
                ],
                "latest": r_runs[0] if r_runs else None,
                "latest_target": target[0] if target else None,
                "display": display_command(r),
                "gpu": prose.gpu_phrase(r.hardware),
                "blocker_titles": [
                    {
                        "title": cfg.blocker(b).title,
                        "words": "not checked yet"
                        if never_read
                        else (
                            prose.STALE_WORDS
                            if ev.blockers[b].stale
                            else prose.BLOCKER_WORDS.get(ev.blockers[b].status)
                        ),
                        "mark": NOT_CHECKED_MARK if never_read else blocker_mark(ev.blockers[b]),
                        "number": page.blockers.index(b) + 1 if b in page.blockers else None,
                    }
                    for b in r.blockers
                ],
            }
        )
        shown = recipes[-1]
        tested = next((x for x in r_runs if x.get("outcome") != "skipped"), None)
        shown["tested"] = prose.run_sentence(cfg, tested, shown["gpu"], said=said)
        shown["waiting"] = prose.waiting_sentence(
            (triggers or {}).get(r.id), shown["gpu"], cfg.smoke.backend
        )
    stale = [
        i
        for i in (*[v for b in blockers for v in (*b["items"], *b["watch"])], *others)
        if i["stale"]
    ]
    since = ((statuses or {}).get(f"page:{page.id}") or {}).get("since")
    now = prose.now_of(last_checked, (attempt or {}).get("at"))
    open_blockers = sum(1 for b in blockers if b["status"] not in ("fix-merged", "verified"))
    reader_status = "unknown" if never_read and status.status == "blocked" else status.status
    return {
        "page": page,
        "status": status.status,
        "reason": status.reason,
        "headline": FLOOR_HEADLINE
        if (status.parked or {}).get("by") == "floor"
        else PAGE_HEADLINES[status.status],
        "reader_status": reader_status,
        "reader_headline": prose.headline(
            reader_status,
            since=since,
            now=now,
            open_blockers=open_blockers,
            validated_run=status.validated_run,
            gpu=gpu,
            parked=status.parked,
        ),
        "status_since": since,
        "open_blockers": open_blockers,
        "gpu": gpu,
        "attempt": attempt,
        "last_read": prose.reader_when(last_checked) if last_checked else None,
        "check_every": every_text(cfg.settings.interval),
        "attempt_failed_at": prose.reader_when(attempt["at"])
        if attempt and attempt.get("failed") and attempt.get("at")
        else None,
        "site_link": f"{cfg.site.url.rstrip('/')}/page/{page.id}.html" if cfg.site.url else None,
        "issue_link": cfg.site.issue_link(cfg.notify),
        "change_lines": prose.reader_changes(cfg, changes),
        "not_checked": prose.unread_reason(items, attempt) if never_read else None,
        "attention": prose.attention_line(
            [*_all_views(blockers), *others], last_checked, never_read
        ),
        "parked": status.parked,
        "comparison": status.comparison,
        "validated_run": status.validated_run,
        "blockers": blockers,
        "other_items": others,
        "recipes": recipes,
        "changes": changes,
        "last_checked": last_checked,
        "stale_items": stale,
        "offline_note": offline_note,
        "marks": BLOCKER_MARKS,
        "matrix": build_matrix(cfg, runs, recipes=page.recipes),
        "matrix_summary": cell_summary,
        "matrix_link": f"{cfg.site.url.rstrip('/')}/matrix.html" if cfg.site.url else None,
    }


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


def load_fragments(cfg: Config, page: Page) -> dict[str, str]:
    """Hand-written Markdown for a page: the maintainer's folder first, packaged defaults second.

    watcher only ever reads these files (`watcher init` creates missing ones), so regenerating a
    page never destroys hand-written text.
    """
    out: dict[str, str] = {}
    default_dir = package_templates() / "fragments" / page.id
    folders = [default_dir]
    if page.fragments:
        folders.append(cfg.resolve(page.fragments))
    for folder in folders:
        if folder.is_dir():
            for f in sorted(folder.glob("*.md")):
                text = f.read_text(encoding="utf-8").strip("\n")
                # a fragment holding only <!-- notes to the maintainer --> counts as empty
                out[f.stem] = "" if not _HTML_COMMENT.sub("", text).strip() else text
    return out


_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


GENERATED_MARKER = "<!-- Generated by watcher"


def render_page(cfg: Config, ctx: dict[str, Any]) -> str:
    env = environment(cfg)
    page: Page = ctx["page"]
    fragments = load_fragments(cfg, page)
    text = env.get_template(page.template).render(
        fragment=lambda name: fragments.get(name, ""), **ctx
    )
    text = tidy_markdown(text)
    if GENERATED_MARKER not in text:  # a maintainer's template: the marker says the file is ours
        text = (
            text.rstrip("\n") + f"\n\n{GENERATED_MARKER}. Edit the templates, not this file. -->\n"
        )
    return text


def foreign_page(path: Path) -> str | None:
    """Why watcher must not write `path`: it exists and is not watcher's own output (no
    generated-by marker), e.g. the guide's hand-kept page. None when it may be written."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            head = f.read(1 << 16)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"{path} cannot be read ({e}); left it as it is"
    if GENERATED_MARKER in head:
        return None
    return (
        f"{path} was not written by watcher (no generated-by marker), so it was left as it is;"
        f" to take it over and keep its prose as fragments: watcher init --adopt {path}"
    )


def tidy_markdown(text: str) -> str:
    """At most one blank line in a row outside fenced code (empty template sections leave runs)."""
    out: list[str] = []
    fence = None
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[: len(stripped) - len(stripped.lstrip(stripped[0]))]
        elif fence is not None and stripped.startswith(fence) and not stripped.strip(fence[0]):
            fence = None
        elif fence is None and not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
    return "\n".join(out)


def digest(text: str) -> str:
    """Content hash ignoring the 'last checked' line, so a new check time alone is no change."""
    body = "\n".join(line for line in text.splitlines() if "<!-- volatile -->" not in line)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def write_status_json(site_dir: Path, doc: dict[str, Any]) -> Path:
    path = site_dir / "status.json"
    atomic_write(path, json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    return path
