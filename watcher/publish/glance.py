"""The At-a-glance table (the guide's docs/engines/README.md): a row per engine with the guide's
own columns, each cell from evidence where watcher has it, else the maintainers' hand cell
marked hand-kept.

With an adopted copy ([engines] hand), its prose and every row of its table are kept: rows of an
engine watcher has a page for show that page's status and pin and the measured cells; other rows
stay as written, marked. Without one, a plain table of the engine pages is written.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from watcher.config.engines import covered, title
from watcher.config.model import Config, Page
from watcher.config.tracker import plain, split_cells
from watcher.core.files import atomic_write
from watcher.judge.evaluate import Evaluation
from watcher.publish.context import last_checked_at, page_context, page_sources
from watcher.publish.engines import evidence_cells, pin_names
from watcher.publish.page import GENERATED_MARKER, code_span, foreign_page, md_escape

HAND = "✋"
GLANCE = "[engines] glance"  # its key among a cycle's pages (never a [[page]] id)
LEGEND = (
    f"{HAND} as the maintainers wrote it: no smoke run has measured this yet. Every other cell"
    " comes from watcher's latest check and smoke runs."
)
DEFAULT_HEADER = [
    "Engine",
    "Status",
    "Per-stream tokens/s",
    "Max context",
    "Vision",
    "Tool calls",
    "Spec decode",
]
_GLANCE_HEADING = re.compile(r"^#{1,6}\s+at a glance\s*$", re.IGNORECASE)


def column_kind(header: str) -> str | None:
    """What a column of the guide's table holds, from its header's words."""
    h = header.lower()
    for kind, words in (
        ("status", ("status",)),
        ("tps", ("tps", "tokens/s", "tok/s", "speed")),
        ("ctx", ("ctx", "context")),
        ("vision", ("vision",)),
        ("tools", ("tool",)),
        ("spec", ("spec",)),
    ):
        if any(w in h for w in words):
            return kind
    return None


def find_table(lines: list[str], heading_only: bool = False) -> tuple[int, int] | None:
    """(first, last) line index of the At-a-glance table: the first table under a heading
    "At a glance", else (unless `heading_only`) the first whose header starts with "Engine"."""
    under = False
    for i, line in enumerate(lines):
        if _GLANCE_HEADING.match(line.strip()):
            under = True
        elif line.lstrip().startswith("#"):
            under = False
        if line.lstrip().startswith("|") and i + 1 < len(lines) and "---" in lines[i + 1]:
            first_cell = plain(split_cells(line)[0].text).lower() if split_cells(line) else ""
            if under or (first_cell.startswith("engine") and not heading_only):
                end = i + 2
                while end < len(lines) and lines[end].lstrip().startswith("|"):
                    end += 1
                return i, end - 1
    return None


def engine_name(cell: str) -> str:
    """'**[vLLM](VLLM.md)** ⭐' -> 'vllm': the words of an engine cell, lower-case."""
    text = re.sub(r"\\(.)", r"\1", plain(cell))  # Markdown escapes (ik\_llama.cpp) read as written
    return re.sub(r"[^\w.+-]+", " ", text).strip().lower()


def engine_of(cell: str, engines: dict[str, Page]) -> str | None:
    """The engine a hand row is about: its cell names the engine or its page's title."""
    name = engine_name(cell)
    for engine, page in engines.items():
        if name in (engine.lower(), title(engine).lower(), page.title.lower()):
            return engine
    return None


def engine_pages(cfg: Config) -> dict[str, Page]:
    """engine -> the page about it: the pages [engines] made and any [[page]] covering one."""
    recipes = {r.id: r for r in cfg.recipes}
    out: dict[str, Page] = {}
    for page in cfg.pages:
        engine = page.engine or covered(page, recipes)
        if engine and engine not in out:
            out[engine] = page
    return out


def status_cell(headline: str, pins: list[str]) -> str:
    """'validated on 2× RTX 3090 on 2026-11-30 · pin `v0.27.1`' (one source: the page's own)."""
    text = md_escape(headline)
    return text + (" · pin " + ", ".join(code_span(p) for p in pins) if pins else "")


def engine_row(cfg, page, ev, sources, last_checked, attempt) -> dict[str, str]:
    """The cells watcher has evidence for, for one engine, by column kind."""
    ctx = page_context(
        cfg, page, sources["items"], ev, sources["runs"], [], last_checked, None,
        attempt=attempt, triggers=sources["triggers"], statuses=sources["statuses"],
        pins=sources.get("pins"),
    )  # fmt: skip
    cells = {k: md_escape(v, 200) for k, v in evidence_cells(cfg, page, sources["runs"]).items()}
    cells["status"] = status_cell(ctx["reader_headline"], pin_names(cfg, page, ev, sources["pins"]))
    return cells


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _marked(text: str) -> str:
    return f"{text} {HAND}" if text.strip() else text


def glance_text(
    cfg: Config,
    ev: Evaluation,
    sources: dict[str, Any],
    last_checked: str | None,
    attempt: dict[str, Any] | None = None,
) -> str:
    """The At-a-glance page: the hand copy with its table rebuilt, or a plain one."""
    assert cfg.engines is not None
    engines = engine_pages(cfg)
    known = {e: engine_row(cfg, p, ev, sources, last_checked, attempt) for e, p in engines.items()}
    here = PurePosixPath(cfg.engines.glance).parent
    hand = cfg.resolve(cfg.engines.hand).read_text(encoding="utf-8") if cfg.engines.hand else None
    lines = hand.split("\n") if hand is not None else []
    span = find_table(lines) if hand is not None else None
    if span is None:
        before = lines if hand is not None else ["# Inference engines", "", "## At a glance", ""]
        after: list[str] = []
        header, rows = DEFAULT_HEADER, []
        head = [_row(header), _row(["---"] * len(header))]
    else:
        before, after = lines[: span[0]], lines[span[1] + 1 :]
        header = [c.text for c in split_cells(lines[span[0]])]
        rows = lines[span[0] + 2 : span[1] + 1]
        head = lines[span[0] : span[0] + 2]  # the maintainers' header and rule, as written
    kinds = [column_kind(h) if i else "engine" for i, h in enumerate(header)]
    out_rows, seen, hand_kept = [], set(), False
    for line in rows:
        cells = [c.text for c in split_cells(line)]
        cells += [""] * (len(header) - len(cells))
        engine = engine_of(cells[0], engines) if cells else None
        if engine is None or engine in seen:  # a row watcher knows nothing of: as written, marked
            at = kinds.index("status") if "status" in kinds else len(cells) - 1
            cells[at] = _marked(cells[at])
            hand_kept = True
        else:
            seen.add(engine)
            for i, kind in enumerate(kinds[1:], 1):
                if kind in known[engine]:
                    cells[i] = known[engine][kind]
                else:
                    cells[i] = _marked(cells[i])
                    hand_kept = hand_kept or bool(cells[i].strip())
        out_rows.append(_row(cells))
    for engine, page in engines.items():
        if engine in seen:
            continue
        link = str(PurePosixPath(page.output).relative_to(here)) if _under(page, here) else None
        name = f"[{md_escape(page.title)}]({link})" if link else md_escape(page.title)
        out_rows.append(_row([name] + [known[engine].get(k or "", "—") for k in kinds[1:]]))
    table = [*head, *out_rows]
    legend = ["", LEGEND] if hand_kept else []
    body = "\n".join([*before, *table, *legend, *after]).rstrip("\n")
    marker = f"{GENERATED_MARKER} from the engine pages, smoke runs and the maintainers' copy"
    return (
        body + f"\n\n{marker} ({cfg.engines.hand or 'none'}). Edit that copy, not this file. -->\n"
    )


def _under(page: Page, here: PurePosixPath) -> bool:
    try:
        PurePosixPath(page.output).relative_to(here)
    except ValueError:
        return False
    return True


def publish_glance(cfg: Config, store, ev: Evaluation, write: bool, attempt=None) -> dict:
    """Render the At-a-glance page and write it unless it is someone else's file."""
    assert cfg.engines is not None and cfg.engines.glance
    path: Path = cfg.resolve(cfg.engines.glance)
    sources = page_sources(store)
    try:
        text = glance_text(cfg, ev, sources, last_checked_at(store, sources["items"]), attempt)
    except (OSError, UnicodeDecodeError) as e:  # the hand copy went away: the rest goes on
        why = f"{cfg.path}: [engines] hand {cfg.engines.hand}: cannot be read ({e}); {path} left as it is"
        return {"path": str(path), "written": False, "refused": why, "text": "", "status": ""}
    refused = foreign_page(path) if write else None
    written = bool(write and not refused and atomic_write(path, text))
    return {
        "path": str(path),
        "written": written,
        "refused": refused,
        "text": text,
        "status": f"{len(engine_pages(cfg))} engines",
    }
