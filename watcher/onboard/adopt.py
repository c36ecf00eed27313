"""`watcher init --adopt PAGE`: take over a hand-kept page without losing a word of it.

A guide that already has its page (docs/engines/SGLANG.md, written by hand) keeps its prose: the
sections watcher does not generate (the introduction, Pros, See also, Tuning notes) become the
page's fragments, every other section is saved beside them (`adopted-<section>.md`, read by
nobody, for the maintainer to move into blocker fragments), the diff between the hand-kept file
and the generated one is shown, and only then is the file replaced. Afterwards the file carries
watcher's generated-by marker, which is how every later cycle knows it may rewrite it.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from watcher.config.model import Config, Page
from watcher.core.errors import WatcherError
from watcher.core.files import atomic_write
from watcher.publish.page import GENERATED_MARKER, package_templates

# hand-kept headings -> the fragment that holds them on the generated page
SECTION_FRAGMENTS = {
    "pros": "pros",
    "see also": "see-also",
    "tuning": "tuning",
    "tuning notes": "tuning",
}


@dataclass
class Adoption:
    """What `adopt_page` did, for the CLI to say."""

    path: Path
    diff: str
    fragments: list[Path] = field(default_factory=list)  # hand prose the page now shows
    kept: list[Path] = field(default_factory=list)  # hand sections saved, not shown
    added: int = 0
    removed: int = 0


def split_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(intro, [(heading, body)]) of a Markdown page: the intro is what follows the H1 up to the
    first H2 or `---` rule; each H2 section runs to the next H2 (rules and blank edges dropped)."""
    lines = text.splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    intro: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    in_intro = True
    for line in lines:
        if line.startswith("## "):
            in_intro = False
            sections.append((line[3:].strip(), []))
        elif in_intro:
            if line.strip() in ("---", "***", "___"):
                in_intro = False
                continue
            intro.append(line)
        elif sections:
            sections[-1][1].append(line)
    body = [
        (h, "\n".join(x for x in b if x.strip() not in ("---", "***")).strip()) for h, b in sections
    ]
    return "\n".join(intro).strip(), body


def fragment_for(heading: str) -> str | None:
    key = re.sub(r"\s*\(.*\)\s*$", "", heading).strip().lower()
    return SECTION_FRAGMENTS.get(key)


def slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower())[:40].strip("-") or "section"


def writes_page(cfg: Config, path: Path) -> bool:
    """Does a [[page]] of the config write this file?"""
    want = path.resolve()
    return any(cfg.resolve(p.output).resolve() == want for p in cfg.pages)


def page_for(cfg: Config, path: Path) -> Page:
    want = path.resolve()
    for page in cfg.pages:
        if cfg.resolve(page.output).resolve() == want:
            return page
    outputs = ", ".join(p.output for p in cfg.pages) or "none"
    raise WatcherError(
        f"{path}: no [[page]] in {cfg.path} writes this file (outputs: {outputs}); set that"
        " page's `output` to it first"
    )


def adopt_page(cfg: Config, path: Path) -> Adoption:
    """Keep the hand-kept page's prose as fragments, render the page, show the diff, take over."""
    from watcher.loop.cycle import run_cycle

    if not path.is_file():
        raise WatcherError(f"{path}: no such file to adopt")
    old = path.read_text(encoding="utf-8")
    if GENERATED_MARKER in old:
        raise WatcherError(f"{path} is already written by watcher; nothing to adopt")
    page = page_for(cfg, path)
    folder = cfg.resolve(page.fragments) if page.fragments else None
    if folder is None:
        raise WatcherError(
            f"{cfg.path}: [[page]] {page.id} has no `fragments` folder to keep the hand prose in"
        )
    out = Adoption(path=path, diff="")
    intro, sections = split_sections(old)
    wanted: list[tuple[str, str]] = []
    if intro:
        wanted.append(("intro", intro))
    for heading, body in sections:
        if not body:
            continue
        name = fragment_for(heading)
        wanted.append((name, body) if name else (f"adopted-{slug(heading)}", body))
    defaults = package_templates() / "fragments" / page.id
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in wanted:
        dest = folder / f"{name}.md"
        default = defaults / f"{name}.md"
        untouched = dest.exists() and default.exists() and dest.read_bytes() == default.read_bytes()
        if dest.exists() and not untouched:
            dest = folder / f"adopted-{name}.md"  # a maintainer's own edit stays as it is
            if dest.exists():
                continue
        dest.write_text(body + "\n", encoding="utf-8")
        (out.kept if dest.stem.startswith("adopted-") else out.fragments).append(dest)
    report = run_cycle(cfg, offline=True, dry_run=True)
    new = report.pages[page.id]["text"]
    diff = list(
        difflib.unified_diff(
            old.splitlines(),
            new.splitlines(),
            f"{path} (hand-kept)",
            f"{path} (watcher)",
            lineterm="",
        )
    )
    out.diff = "\n".join(diff)
    out.added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
    out.removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
    atomic_write(path, new)
    return out
