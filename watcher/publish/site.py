"""The static status site: index, one page per generated document, item histories, feed, badges.

`build_site` reads the store and writes `index.html`, `page/<page>.html`, `item/<item>.html`,
`feed.xml` (Atom), `badge/<page>.svg` and `status.json` (the contract of `status.status_document`),
all from the page context (context.py).
Everything is rendered in memory first, written into a temporary folder beside the site folder and
then swapped in, so a failed build leaves the previous site whole and a reader never sees half.

Untrusted text (titles, commit subjects, log excerpts, config strings) is cleaned once by
core.text's rule (in the context) and autoescaped by the templates. The pages'
Markdown is rendered with raw HTML disabled and links other than http(s)/relative made inert.
The same database renders the same bytes: everything is sorted, nothing is random, and the only
volatile parts (generation time and the "N minutes ago" text) sit on lines marked `data-volatile`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
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
from watcher.core.clock import iso, utcnow
from watcher.core.errors import WatcherError
from watcher.core.files import atomic_write, umask
from watcher.core.text import clean_tree
from watcher.judge.evaluate import Evaluation, evaluate, page_subjects
from watcher.publish.context import (
    STATUS_TONES,
    last_attempt,
    last_checked_at,
    page_sources,
    safe_href,
    site_context,
)
from watcher.publish.matrix import build_matrix, cell_summary
from watcher.publish.page import environment, page_text
from watcher.publish.status import status_document
from watcher.store.db import Store

# Newest state spans on an item page: a year of hourly checks already fills it (the bench's
# items make ~36 a year), so what the page shows does not grow with the database's age;
# the page counts the older spans and says where they are kept.
HISTORY_LIMIT = 30
MATRIX_RUNS = 1000  # the newest runs the matrix page is made of (one per cell and host is shown)
KEEP_FILES = ("CNAME", ".gitkeep")  # a maintainer's files in the site folder (and git-tracked ones)
BADGE_COLOURS = {"good": "#1a7f37", "warn": "#9a6700", "bad": "#cf222e", "muted": "#57606a"}


@dataclass
class SiteReport:
    """What a build wrote, for the CLI and the benchmark."""

    path: Path
    files: list[str] = field(default_factory=list)
    bytes: int = 0
    duration_s: float = 0.0


# ------------------------------------------------------------------ links


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
    return Markup(md.convert(clean_tree(text)))


# ------------------------------------------------------------------ view models


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
        SimpleNamespace(**{k: v if k in trusted else clean_tree(v, memo) for k, v in s.items()})
        for s in spans
    ]


def older_spans(store: Store, item_id: str, shown: int) -> int:
    """How many of the item's spans the page leaves out: one count on the (item_id, id) index."""
    total = store.db.execute(
        "SELECT COUNT(*) FROM state_spans WHERE item_id = ?", (item_id,)
    ).fetchone()[0]
    return max(0, total - shown)


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


# ------------------------------------------------------------------ rendering


# The page's own "Last read from GitHub" line: the site's freshness block above it says the
# same (live, with the age and the "checks have stopped" alert), so the site drops the page's.
_PAGE_FRESHNESS = re.compile(
    r"(?m)^>\n> Last read from GitHub: .*\n|^> Last read from GitHub: .*\n(?:>\n)?"
)


def without_freshness(markdown: str) -> str:
    """A page's Markdown as the site shows it under its own freshness block: said once."""
    return _PAGE_FRESHNESS.sub("", markdown, count=1)


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
        ev = evaluate(
            cfg, store.items(), store.evaluation_runs(), store.statuses(), now, store.pins()
        )
    if status_doc is None:
        cycle = store.last_finished_cycle(polled_only=True) or store.last_finished_cycle()
        status_doc = status_document(
            cfg, store.items(), ev, cycle, store.smoke_runs(limit=20), generated_at,
            pins=store.pins(),
        )  # fmt: skip
    page_texts = page_markdown(cfg, store, ev)
    ctx = site_context(cfg, store, ev, generated_at)
    env = environment(cfg)
    env.filters["href"] = safe_href
    env.globals["css"] = Markup(env.loader.get_source(env, "site/style.css")[0])
    files: dict[str, str] = {}
    files["index.html"] = env.get_template("site/index.html.j2").render(**ctx, root="")
    rename = {PurePosixPath(p.output).name: f"{p.id}.html" for p in cfg.pages}
    for page in ctx["pages"]:
        body = markdown_to_html(without_freshness(page_texts.get(page["id"], "")), rename)
        files[page["href"]] = env.get_template("site/document.html.j2").render(
            **ctx, root="../", page=page, body=body
        )
    all_items = store.items()
    for item in ctx["items"]:
        history = history_rows(store.state_spans(item["id"], HISTORY_LIMIT))
        older = older_spans(store, item["id"], len(history)) if len(history) >= HISTORY_LIMIT else 0
        details = clean_tree((all_items.get(item["id"]) or {}).get("details") or {})
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

    files.update(site_files(store, env, ctx))  # a page per bisect run
    for page in ctx["pages"]:
        files[page["badge"]] = env.get_template("site/badge.svg.j2").render(
            badge=badge(page["title"], page["status"])
        )
    files["status.json"] = (
        json.dumps(status_doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )
    mx = clean_tree(
        build_matrix(cfg, store.smoke_runs(limit=MATRIX_RUNS), now=now, pins=store.pins())
    )
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
    if site.exists() and not site.is_dir():
        raise WatcherError(
            f"[watcher] site_dir = {site}: a file is in the way (the site is a folder);"
            " move it, or point site_dir elsewhere"
        )
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


def write_in_place(site: Path, files: dict[str, str | bytes]) -> int:
    """A site folder that is a mount point cannot be swapped: each file is written whole (temp
    file and rename inside it), then the files this build no longer has are removed."""
    keep = {*files, *KEEP_FILES, *_tracked(site)}
    ours = {rel.split("/", 1)[0] for rel in files}  # what else is there (lost+found) stays
    total = 0
    for rel, data in sorted(files.items()):
        raw = data.encode("utf-8") if isinstance(data, str) else data
        atomic_write(site / rel, raw)
        total += len(raw)
    for top in sorted(ours):
        for path in sorted((site / top).rglob("*"), reverse=True):  # children first
            rel = path.relative_to(site).as_posix()
            if path.is_dir() and not path.is_symlink():
                if not any(path.iterdir()):
                    path.rmdir()
            elif rel not in keep:
                path.unlink()
    return total


def write_site(site: Path, files: dict[str, str | bytes]) -> int:
    """Write into a temporary folder beside `site`, then swap it in (in place when `site` is a
    mount point, which cannot be renamed). Returns bytes written."""
    if site.is_dir() and os.path.ismount(site):
        return write_in_place(site, files)
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
