"""Name what happened in a smoke run's log: the first matching failure family, in priority order.

The log is read in fixed-size blocks with a small overlap, so a multi-GB log costs constant memory
and a message wrapped over two lines (`\\s+` spans the newline) or over a block edge still matches.
Families are ordered specific before generic: the lowest-index family seen anywhere in the log wins
(an NCCL error that wraps "out of memory" is `nccl`, not `cuda-oom`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from watcher.config import Signature
from watcher.signatures import all_signatures

BLOCK_CHARS = 1 << 20  # 1 Mi characters per read
OVERLAP_CHARS = 8192  # carried into the next block: a wrapped message across the edge still matches
LINE_LIMIT = 300  # characters kept per excerpt line
BEFORE, AFTER = 3, 5  # excerpt lines around the matched line

KIND_WORDS = {
    "upstream": "upstream failure",
    "config": "config problem in the recipe, not an upstream blocker",
    "environment": "host or environment problem, not an upstream blocker",
}


@dataclass(frozen=True)
class Finding:
    """The winning family, where it first showed, and the lines around it."""

    signature: Signature
    line_no: int
    line: str
    excerpt: str

    @property
    def id(self) -> str:
        return self.signature.id


def _clip(line: str) -> str:
    return line if len(line) <= LINE_LIMIT else line[: LINE_LIMIT - 1] + "…"


def _excerpt(text: str, start: int, end: int) -> tuple[str, str]:
    """(matched line(s), excerpt) around text[start:end], bounded in lines and characters."""
    line_start = text.rfind("\n", 0, start) + 1
    lo = line_start
    for _ in range(BEFORE):
        if lo == 0:
            break
        lo = text.rfind("\n", 0, lo - 1) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    hi = line_end
    for _ in range(AFTER):
        if hi >= len(text):
            break
        nxt = text.find("\n", hi + 1)
        hi = len(text) if nxt < 0 else nxt
    matched = " ".join(_clip(s.strip()) for s in text[line_start:line_end].split("\n"))
    lines = [_clip(s.rstrip()) for s in text[lo:hi].split("\n")]
    return matched, "\n".join(lines).strip("\n")


class Classifier:
    """Compiled, ordered families. `scan` and `scan_text` return the winning Finding or None."""

    def __init__(self, signatures: Iterable[Signature] | None = None):
        self.signatures = tuple(signatures if signatures is not None else all_signatures())
        self._compiled = [re.compile(s.pattern) for s in self.signatures]

    def scan_blocks(self, blocks: Iterable[str]) -> Finding | None:
        best: Finding | None = None
        best_index = len(self._compiled)
        carry = ""
        lines_before = 0  # newlines in the log before text[0]
        for chunk in blocks:
            text = carry + chunk
            for i in range(best_index):
                m = self._compiled[i].search(text)
                if m:
                    line, excerpt = _excerpt(text, m.start(), m.end())
                    line_no = lines_before + text.count("\n", 0, m.start()) + 1
                    best, best_index = Finding(self.signatures[i], line_no, line, excerpt), i
                    break
            if best_index == 0:
                break  # nothing can beat the first family
            # keep the last two lines (bounded) so a message split over the edge still matches
            keep_from = max(len(text) - OVERLAP_CHARS, 0)
            nl = text.rfind("\n", keep_from)
            if nl > keep_from:
                prev = text.rfind("\n", keep_from, nl)
                keep_from = prev + 1 if prev >= 0 else keep_from
            lines_before += text.count("\n", 0, keep_from)
            carry = text[keep_from:]
        return best

    def scan(self, path: str | Path) -> Finding | None:
        with open(path, encoding="utf-8", errors="replace") as f:
            return self.scan_blocks(_blocks(f))

    def scan_text(self, text: str) -> Finding | None:
        return self.scan_blocks([text])


def _blocks(f: TextIO, size: int = BLOCK_CHARS):
    while chunk := f.read(size):
        yield chunk


def tail(path: str | Path, lines: int = 12, max_bytes: int = 16384) -> str:
    """The last lines of a log (bounded read from the end), for failures with no family."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [s.rstrip() for s in data.replace("\r", "\n").split("\n")]
    kept = [s for s in kept if s.strip()]
    if size > max_bytes and kept:
        kept = kept[1:]  # the first line was probably cut
    return "\n".join(_clip(s) for s in kept[-lines:])


def describe(finding: Finding) -> str:
    """One sentence for the result's reason: which family, what kind of problem, the line."""
    s = finding.signature
    what = KIND_WORDS.get(s.kind, s.kind)
    desc = f": {s.description}" if s.description else ""
    return f"{s.id} ({what}){desc}. Log line {finding.line_no}: {finding.line}"
