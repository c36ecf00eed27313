"""The generated tracker: the maintainers' tracker line for line, with watcher's column (what
GitHub says now, dated, linked, each disagreement marked) and a summary that counts them.

Every maintainer's line is written as it was read; a table row only gets a cell appended after
its last pipe. watcher.config.tracker reads this output back as its source, so adopting,
regenerating and re-adopting loses nothing.
"""

from __future__ import annotations

from typing import Any

from watcher.config.model import Config
from watcher.config.tracker import (
    AUDIT_BEGIN,
    AUDIT_END,
    COMPUTED_HEADER,
    GENERATED_LINE,
    Tracker,
)
from watcher.judge.audit import Audit, PinCheck, RowAudit, github_emoji
from watcher.publish.page import environment, md_escape

TEMPLATE = "tracker.md.j2"


def computed_cell(ra: RowAudit, checked: str) -> str:
    """One row's watcher cell: GitHub's side per link, the row's status by GitHub, the mark."""
    if not ra.trackable:
        return "— not trackable (no GitHub link)"
    parts = []
    for ls in ra.links:
        # the maintainers' own link; owner, name and ref are [\w.-] (the parser's pattern)
        ref = f"[{ls.link.key.replace('_', chr(92) + '_')}]({ls.url})"
        stale = " (last known; the latest read failed)" if ls.stale else ""
        parts.append(f"{ref} {md_escape(ls.words, 120)}{stale}")
    head = github_emoji(ra)
    if ra.disagrees:
        head = f"⚠️ **disagrees**: tracker {ra.claim}, GitHub {head}"
    elif ra.side == "unread":
        head = "not read yet"
    pin = {True: " · in our pin", False: " · not in our pin", None: ""}[ra.in_pin]
    return f"{head} · {' · '.join(parts)}{pin} · checked {checked[:10]}".replace("|", "\\|")


def tracker_context(cfg: Config, tracker: Tracker, audit: Audit, at: str) -> dict[str, Any]:
    """What tracker.md.j2 renders: the head lines (the H1), the counts, and every other line with
    the cell watcher appends to it (None for lines that are not table rows)."""
    add: dict[int, str] = {}
    by_line = {ra.row.line_no - 1: ra for ra in audit.rows}
    for table in (t for t in tracker.tables if t.audited):
        add[table.first] = f" {COMPUTED_HEADER} |"
        add[table.first + 1] = "---|"
        for i in range(table.first + 2, table.last + 1):
            add[i] = f" {computed_cell(by_line[i], at)} |"
    lines = list(tracker.lines)
    if lines and lines[-1] == "":  # the file's final newline: written after the generated line
        lines.pop()
    split = 1 if lines and lines[0].startswith("# ") else 0
    body = []
    for i, line in enumerate(lines[split:], start=split):
        extra = add.get(i)
        if extra is not None:
            end = "\r" if line.endswith("\r") else ""  # a CRLF file stays CRLF
            line = line.rstrip()
            line = (line + extra if line.endswith("|") else f"{line} |{extra}") + end
        body.append(line)
    disagreeing = [ra for ra in audit.rows if ra.disagrees]
    return {
        "head": lines[:split],
        "body": body,
        "at": at,
        "counts": {
            k: audit.count(k) for k in ("rows", "trackable", "untrackable", "disagree", "unread")
        },
        "disagreeing": [
            {
                "table": ra.row.table,
                "line": ra.row.line_no,
                "claim": ra.claim,
                "github": github_emoji(ra),
            }
            for ra in disagreeing
        ],
        "source": cfg.tracker.source if cfg.tracker else str(tracker.path),
        "begin": AUDIT_BEGIN,
        "end": AUDIT_END,
        "generated": GENERATED_LINE,
    }


def tracker_text(cfg: Config, ctx: dict[str, Any]) -> str:
    return environment(cfg).get_template(TEMPLATE).render(**ctx)


def publish_tracker(
    cfg: Config,
    items: dict[str, dict[str, Any]],
    at: str,
    write: bool = True,
    pins: PinCheck | None = None,
) -> dict[str, Any]:
    """Read the maintainers' tracker, audit it, render it and (when `write`) write the output.

    `pins` is where the pinned builds enter (watcher.judge.audit.PinCheck: is this merged link
    in our pin?); until a cycle passes one, 🟢 and 🔵 both agree with "merged".

    A tracker that cannot be read fails nothing else of the cycle: the report says why. An
    output file that exists and is not watcher's (and is not the tracker itself) is left alone."""
    from watcher.config.tracker import parse_tracker
    from watcher.core.errors import WatcherError
    from watcher.core.files import atomic_write
    from watcher.judge.audit import audit_tracker
    from watcher.publish.page import foreign_page

    assert cfg.tracker is not None
    source, output = cfg.resolve(cfg.tracker.source), cfg.resolve(cfg.tracker.output)
    try:
        tracker = parse_tracker(source)
    except WatcherError as e:
        return {"path": str(output), "error": f"{cfg.path}: [tracker] source: {e}"}
    audit = audit_tracker(cfg, tracker, items, pins)
    text = tracker_text(cfg, tracker_context(cfg, tracker, audit, at))
    out: dict[str, Any] = {
        "path": str(output),
        "text": text,
        "rows": audit.count("rows"),
        "disagree": audit.count("disagree"),
        "untrackable": audit.count("untrackable"),
        "written": False,
    }
    same = source.resolve() == output.resolve()
    refused = None if same else foreign_page(output)
    if refused:
        out["error"] = refused
    elif write:
        output.parent.mkdir(parents=True, exist_ok=True)
        out["written"] = atomic_write(output, text)
    return out
