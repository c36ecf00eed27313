"""Rendering the Markdown pages (SGLANG.md) through jinja2, from the page context (context.py).

Templates come from a `templates/` folder beside the config first (a maintainer's overrides), then
from the package (installed wheel) or the checkout. Untrusted text (titles, commit subjects, log
excerpts) goes through the `md` filter: core.text's cleaning rule, then Markdown's own step that
makes HTML, links, mentions and emphasis inert.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

from watcher.config.model import Config, Page
from watcher.core.files import atomic_write
from watcher.core.redact import redact
from watcher.core.text import clean_text, one_line, safe_url
from watcher.judge.evaluate import Evaluation
from watcher.publish.context import KIND_WORDS, page_context
from watcher.publish.prose import thread_state

if TYPE_CHECKING:  # jinja2 is imported by the commands that render, not by `status` or `--help`
    import jinja2


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
ZWJ = "\u200d"  # kept only to break `<!--` / `-->` inside a fenced block (code_block)
# What GitHub turns into a ping, a cross-reference or a link: `@name`, `#123`, `owner/repo#45`,
# `GH-123`, `https://…`, `www.…`. A whitespace-delimited token holding one is set as inline code,
# where GitHub neither links nor pings (no character is inserted: "#19406" is found by a search,
# a URL copies whole). No `<`, `>`, `|` or backtick inside it: those stay escaped text.
_REFERENCE = re.compile(r"[^\s<>|`]*(?:@|#(?=\d)|\bGH-(?=\d)|://|\bwww\.)[^\s<>|`]*", re.IGNORECASE)


def package_templates() -> Path:
    """The templates folder inside the installed wheel, else the checkout's top-level one."""
    packaged = resources.files("watcher") / "templates"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "templates"


_OPENERS, _CLOSERS = "([{\"'“‘", ".,;:!?)]}\"'”’"


def _escaped(s: str) -> str:
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", s)


def inert(text: str) -> str:
    """No @mention, #123, owner/repo#45, GH-123 or bare link stays live: each token holding one
    becomes inline code (GitHub neither pings nor cross-links there), the rest escaped text."""
    out, pos = [], 0
    for m in _REFERENCE.finditer(text):
        token = m.group(0)
        core = token.lstrip(_OPENERS).rstrip(_CLOSERS) or token  # "(#12)," -> #12
        start = m.start() + token.index(core)
        out += [_escaped(text[pos:start]), code_span(core)]
        pos = start + len(core)
    return "".join(out) + _escaped(text[pos:])


def md_escape(text: Any, limit: int = 300) -> str:
    """Inline Markdown: no HTML, no links, no mentions or references, no emphasis, one line,
    bounded length. `<` is escaped, so nothing can open an HTML comment or fake our markers."""
    return inert(one_line(text, limit))


def code_span(text: Any, limit: int = 300) -> str:
    """Inline code that untrusted text cannot close: a fence longer than any backtick run in it."""
    s = one_line(text, limit)
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
    body = clean_text(text).rstrip("\n")
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
    these Environment options (their code differs when those do). None if it cannot be made, or
    when the data folder does not exist yet (a dry run, e.g. `init --adopt --dry-run`, makes none)."""
    import jinja2

    from watcher import __version__

    tag = hashlib.sha256(repr((__version__, sorted(_ENV_OPTIONS.items()))).encode()).hexdigest()
    path = cfg.data_dir / "cache" / f"jinja2-{jinja2.__version__}-{tag[:12]}"
    if not cfg.data_dir.is_dir():
        return None
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
        thread_state=thread_state,
    )
    return env


# ------------------------------------------------------------------ pages


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
        pins=sources.get("pins"),
    )
    if page.engine is not None:  # a page [engines] made: its pins and tracker rows too
        from watcher.publish.engines import engine_context

        ctx.update(engine_context(cfg, page, ev, sources))
    return render_page(cfg, ctx)


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


def adopted_sections(fragments: dict[str, str]) -> list[dict[str, Any]]:
    """The hand page's sections kept by `init --adopt` (`adopted-NN-<slug>.md`), in its order;
    `recipe`: a recipe block, which the template replaces only with a validated run's."""
    return [
        {"name": name, "recipe": bool(re.match(r"adopted-\d+-recipes?(-|$)", name))}
        for name in sorted(fragments)
        if name.startswith("adopted-") and fragments[name]
    ]


GENERATED_MARKER = "<!-- Generated by watcher"


def render_page(cfg: Config, ctx: dict[str, Any]) -> str:
    env = environment(cfg)
    page: Page = ctx["page"]
    fragments = load_fragments(cfg, page)
    text = env.get_template(page.template).render(
        fragment=lambda name: fragments.get(name, ""), adopted=adopted_sections(fragments), **ctx
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
