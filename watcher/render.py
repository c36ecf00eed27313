"""Rendering: pages (SGLANG.md) through jinja2, and the status document (status.json).

Templates come from a `templates/` folder beside the config first (a maintainer's overrides), then
from the package (installed wheel) or the checkout. Untrusted text (titles, commit subjects, log
excerpts) goes through the `md` filter, which makes HTML and Markdown syntax inert.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from watcher.config import Config, Page
from watcher.evaluate import Evaluation
from watcher.redact import redact
from watcher.views import item_view

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
BLOCKER_MARKS = {"blocked": "❌", "reproduces": "❌", "fix-merged": "⚠️", "verified": "✅"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def package_templates() -> Path:
    """The templates folder inside the installed wheel, else the checkout's top-level one."""
    packaged = resources.files("watcher") / "templates"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "templates"


def md_escape(text: Any, limit: int = 300) -> str:
    """Inline Markdown: no HTML, no links, no emphasis, one line, bounded length."""
    s = redact("" if text is None else str(text))
    s = _CONTROL.sub("", s).replace("\r", " ").replace("\n", " ")
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", s)


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
    """A fenced block that untrusted text cannot close."""
    body = _CONTROL.sub("", redact(text or "")).rstrip("\n")
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


class _Placeholders(dict):
    """str.format_map that leaves unknown {placeholders} as they are (display only)."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def environment(cfg: Config | None = None) -> jinja2.Environment:
    search = []
    if cfg is not None and (cfg.base_dir / "templates").is_dir():
        search.append(str(cfg.base_dir / "templates"))
    search.append(str(package_templates()))
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(search),
        autoescape=jinja2.select_autoescape(["html", "xml", "svg", "html.j2", "xml.j2", "svg.j2"]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
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
    )
    return env


def umask() -> int:
    """The process umask, read without changing it (Linux), else set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def atomic_write(path: Path, data: str | bytes) -> bool:
    """Write via a temp file and rename: readers see the old file or the new one, never half.

    Returns False (and writes nothing) when the content is already there.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if path.exists() and path.read_bytes() == raw:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~umask())  # mkstemp's 0600 would hide a page from its readers
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


# ------------------------------------------------------------------ the status document


def status_document(
    cfg: Config,
    items: dict[str, dict],
    ev: Evaluation,
    cycle: dict[str, Any] | None,
    runs: list[dict[str, Any]],
    generated_at: str,
) -> dict[str, Any]:
    """The contract other tools read (site/status.json)."""
    blockers = []
    for b in cfg.blockers:
        st = ev.blockers[b.id]
        blockers.append(
            {
                "id": b.id,
                "title": b.title,
                "status": st.status,
                "reason": st.reason,
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
    pages = [
        {
            "id": p.id,
            "title": p.title,
            "status": ev.pages[p.id].status,
            "reason": ev.pages[p.id].reason,
            "output": p.output,
            "blockers": list(p.blockers),
            "recipes": list(p.recipes),
            "parked": ev.pages[p.id].parked,
        }
        for p in cfg.pages
    ]
    views = [item_view(cfg, i.id, items.get(i.id)) for i in cfg.items]
    for v in views:
        v.pop("details")
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
            "last_checked": last.get("finished_at"),
            "interval_s": cfg.settings.interval,
            # Heartbeat contract for readers of a static copy (the site): when now is past
            # stale_at, checks have stopped (no cycle finished for stale_after x interval).
            "stale_after_s": cfg.settings.stale_after * cfg.settings.interval,
            "stale_at": _plus_seconds(
                last.get("finished_at"), cfg.settings.stale_after * cfg.settings.interval
            ),
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
                for r in runs[:20]
            ],
        },
    }


def _plus_seconds(stamp: str | None, seconds: float) -> str | None:
    if not stamp:
        return None
    at = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------ pages


def page_context(
    cfg: Config,
    page: Page,
    items: dict[str, dict],
    ev: Evaluation,
    runs: list[dict[str, Any]],
    changes: list[dict[str, Any]],
    last_checked: str | None,
    offline_note: str | None,
) -> dict[str, Any]:
    status = ev.pages[page.id]
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
                "mark": BLOCKER_MARKS[st.status],
                "override": st.override,
                "items": [item_view(cfg, i, items.get(i)) for i in b.items],
                "watch": [item_view(cfg, i, items.get(i)) for i in b.watch],
                "hints": [
                    dict(h, view=item_view(cfg, h["item"], items.get(h["item"]))) for h in st.hints
                ],
                "signatures": list(b.signatures),
            }
        )
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
                    a.format_map(
                        _Placeholders(
                            port=r.host_port or r.port,
                            model=r.model or "{model}",
                            name=f"watcher-{r.id}",
                        )
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
                        "mark": BLOCKER_MARKS[ev.blockers[b].status],
                    }
                    for b in r.blockers
                ],
                "latest": r_runs[0] if r_runs else None,
                "latest_target": target[0] if target else None,
            }
        )
    stale = [
        i
        for i in (*[v for b in blockers for v in (*b["items"], *b["watch"])], *others)
        if i["stale"]
    ]
    return {
        "page": page,
        "status": status.status,
        "reason": status.reason,
        "headline": PAGE_HEADLINES[status.status],
        "parked": status.parked,
        "validated_run": status.validated_run,
        "blockers": blockers,
        "other_items": others,
        "recipes": recipes,
        "changes": changes,
        "last_checked": last_checked,
        "stale_items": stale,
        "offline_note": offline_note,
        "marks": BLOCKER_MARKS,
    }


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
                out[f.stem] = f.read_text(encoding="utf-8").strip("\n")
    return out


def render_page(cfg: Config, ctx: dict[str, Any]) -> str:
    env = environment(cfg)
    page: Page = ctx["page"]
    fragments = load_fragments(cfg, page)
    return env.get_template(page.template).render(
        fragment=lambda name: fragments.get(name, ""), **ctx
    )


def digest(text: str) -> str:
    """Content hash ignoring the 'last checked' line, so a new check time alone is no change."""
    body = "\n".join(line for line in text.splitlines() if "<!-- volatile -->" not in line)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def write_status_json(site_dir: Path, doc: dict[str, Any]) -> Path:
    path = site_dir / "status.json"
    atomic_write(path, json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    return path
