"""`watcher init --adopt PAGE`: take over a hand-kept page without losing a word of it.

A guide that already has its page (docs/engines/SGLANG.md, written by hand) keeps every section
of it on the generated page, where it stood (adopt_plan.py says which fragment holds which); a
page that says "Status (2026-05-21): PARKED" gets `[page.park]` with that date and reason in
watch.toml (one that says blocked, experimental or validated with a date gets `[page.override]`),
so the first generated page says the same. The diff of watch.toml and of the page is
shown, and only then are the files written (`--dry-run`: shown, nothing written). A fragment the
maintainer already edited is never overwritten, and adopting the same page again changes
nothing. Afterwards the file carries watcher's generated-by marker, which is how every later
cycle knows it may rewrite it.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import shutil
import tempfile
import tomllib
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from watcher.config.load import parse_config
from watcher.config.model import Config, Page
from watcher.core.errors import WatcherError
from watcher.core.files import atomic_write
from watcher.onboard.adopt_plan import HandStatus, plan_adoption
from watcher.onboard.adopt_tracker import toml_string
from watcher.publish.page import GENERATED_MARKER, package_templates


@dataclass
class Adoption:
    """What `adopt_page` did (or, dry, would do), for the CLI to say."""

    path: Path
    diff: str = ""  # watch.toml's diff, then the page's
    fragments: list[Path] = field(default_factory=list)  # hand prose written as fragments
    edited: list[Path] = field(default_factory=list)  # the maintainer's own edits, left as they are
    status: HandStatus | None = None  # the status the hand page gave itself
    parked: bool = False  # [page.park] added from it
    overridden: bool = False  # [page.override] added from it (blocked, ready-to-test, validated)
    unrecorded: bool = False  # a page made by [engines]: no table to record its status in
    already: bool = False  # the page is watcher's already: nothing to adopt
    title: str = ""  # the hand page's H1: the line under watcher's headline (title*.md)
    added: int = 0
    removed: int = 0


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


def with_park(text: str, page_id: str, status: HandStatus, path: Path) -> str:
    """watch.toml's text with `[page.park]` (reason, since) right after the page's own keys;
    every other line as it was. Checked by reading both texts back."""
    return _with_table(
        text, page_id, "park", {"reason": status.reason, "since": status.since}, path
    )


def with_override(text: str, page_id: str, status: HandStatus, path: Path) -> str:
    """watch.toml's text with `[page.override]` (status, reason, since), placed and checked as
    `with_park` places and checks `[page.park]`."""
    values = {"status": status.word, "reason": status.reason, "since": status.since}
    return _with_table(text, page_id, "override", values, path)


def _with_table(text: str, page_id: str, name: str, values: dict, path: Path) -> str:
    lines = text.splitlines(keepends=True)
    block = None
    for n, line in enumerate(lines):
        if re.match(r"\s*\[", line):
            block = n if re.match(r"\s*\[\[page\]\]\s*(#.*)?$", line) else None
        elif block is not None and re.match(rf"\s*id\s*=\s*[\"']{re.escape(page_id)}[\"']", line):
            break
    else:
        block = None
    body = "".join(
        f"{k} = {v.isoformat() if isinstance(v, date) else toml_string(v)}\n"
        for k, v in values.items()
    )
    table = f"\n[page.{name}]  # the hand-kept page's own status (watcher init --adopt)\n" + body
    new = None
    if block is not None:
        end = block + 1
        while end < len(lines) and not re.match(r"\s*\[", lines[end]):
            end += 1
        last = max(
            k
            for k in range(block, end)
            if lines[k].strip() and not lines[k].lstrip().startswith("#")
        )
        head = "".join(lines[: last + 1])
        new = (head if head.endswith("\n") else head + "\n") + table + "".join(lines[last + 1 :])
        want = tomllib.loads(text)
        for page in want.get("page", []):
            if page.get("id") == page_id:
                page[name] = dict(values)
        if tomllib.loads(new) != want:
            new = None
    if new is None:
        raise WatcherError(
            f"{path}: could not add [page.{name}] to the [[page]] with id {page_id!r};"
            f" add it by hand under that page, then adopt again:\n{table.strip()}"
        )
    return new


def adopt_page(
    cfg: Config, path: Path, *, dry_run: bool = False, config_text: str | None = None
) -> Adoption:
    """Plan the fragments and the park, render the page from them, show the diff, then write
    (unless `dry_run`). `config_text`: watch.toml as it would be when it is not written yet."""
    from watcher.loop.cycle import run_cycle

    if not path.is_file():
        raise WatcherError(f"{path}: no such file to adopt")
    old = path.read_text(encoding="utf-8")
    if GENERATED_MARKER in old:
        return Adoption(path=path, already=True)
    page = page_for(cfg, path)
    if not page.fragments:
        raise WatcherError(
            f"{cfg.path}: [[page]] {page.id} has no `fragments` folder to keep the hand prose in"
        )
    folder = cfg.resolve(page.fragments)
    plan = plan_adoption(old)
    for name in [n for n in plan.fragments if n == "title" or n.startswith("title-")]:
        if _words(plan.fragments[name]) <= _words(page.title):  # "# vLLM": the headline says it
            del plan.fragments[name]
    out = Adoption(path=path, status=plan.status)
    first = old.splitlines()[0] if old.strip() else ""
    out.title = first[2:].strip() if first.startswith("# ") else ""
    old_config = cfg.path.read_text(encoding="utf-8") if config_text is None else config_text
    new_config = old_config
    if plan.status and page.engine is not None:
        # a page made by [engines] has no [[page]] table to hold a park or an override: its
        # status paragraph is shown while watcher's evidence agrees (or knows nothing yet)
        out.unrecorded = True
    elif plan.status and page.park is None and page.override is None:
        if plan.status.word == "parked":
            new_config = with_park(old_config, page.id, plan.status, cfg.path)
            out.parked = True
        else:  # blocked, experimental (ready-to-test), validated: the maintainers' word
            new_config = with_override(old_config, page.id, plan.status, cfg.path)
            out.overridden = True
    writes = _fragment_writes(folder, package_templates() / "fragments" / page.id, plan, out)
    staged = Path(tempfile.mkdtemp(prefix="watcher-adopt-"))
    try:
        if folder.is_dir():
            shutil.copytree(folder, staged, dirs_exist_ok=True)
        for dest, text in writes:
            (staged / dest.name).write_text(text, encoding="utf-8")
        new_cfg = parse_config(new_config, cfg.path)  # never a watch.toml that does not load
        pages = tuple(
            dataclasses.replace(p, fragments=str(staged)) if p.id == page.id else p
            for p in new_cfg.pages
        )
        report = run_cycle(dataclasses.replace(new_cfg, pages=pages), offline=True, dry_run=True)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    new = report.pages[page.id]["text"]
    name = cfg.path.name
    config_diff = _diff(old_config, new_config, f"{name} (now)", f"{name} (adopted)")
    page_diff = _diff(old, new, f"{path} (hand-kept)", f"{path} (watcher)")
    out.diff = "\n".join(config_diff + page_diff)
    out.added = sum(1 for d in page_diff if d.startswith("+") and not d.startswith("+++"))
    out.removed = sum(1 for d in page_diff if d.startswith("-") and not d.startswith("---"))
    if dry_run:
        return out
    folder.mkdir(parents=True, exist_ok=True)
    for dest, text in writes:
        atomic_write(dest, text)
    if new_config != old_config:
        atomic_write(cfg.path, new_config)
    atomic_write(path, new)
    return out


def _fragment_writes(folder: Path, defaults: Path, plan, out: Adoption) -> list[tuple[Path, str]]:
    """The fragments to write: new ones, and packaged defaults nobody edited. A file that holds
    the same text already is left (re-adopting changes nothing); one the maintainer edited is
    left and named."""
    writes = []
    for name, body in plan.fragments.items():
        dest = folder / f"{name}.md"
        text = body + "\n"
        if dest.exists():
            now = dest.read_bytes()
            default = defaults / dest.name
            if now.decode("utf-8", "replace").strip("\n") == body.strip("\n"):
                continue
            if not (default.exists() and now == default.read_bytes()):
                out.edited.append(dest)
                continue
        writes.append((dest, text))
        out.fragments.append(dest)
    return writes


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9.]+", text.lower()))


def _diff(old: str, new: str, a: str, b: str) -> list[str]:
    return list(difflib.unified_diff(old.splitlines(), new.splitlines(), a, b, lineterm=""))
