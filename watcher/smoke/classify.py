"""Name what happened in a smoke run's log: the first matching failure family, in priority order.

The log is read in fixed-size blocks with a small overlap, so a multi-GB log costs constant memory
and a message wrapped over two lines (`\\s+` spans the newline) or over a block edge still matches.
Families are ordered specific before generic: the lowest-index family seen anywhere in the log wins
(an NCCL error that wraps "out of memory" is `nccl`, not `cuda-oom`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from watcher.config.signatures import Signature, all_signatures
from watcher.core.patterns import filter_engine, hyperscan_pattern, requirement

BLOCK_BYTES = 1 << 20  # 1 MiB per read
OVERLAP_CHARS = (
    8192  # bytes carried into the next block: a wrapped message across the edge still matches
)
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


def _back(data: bytes, pos: int, lines: int) -> int:
    """Start of the line `lines` lines before the one holding `pos`."""
    lo = data.rfind(b"\n", 0, pos) + 1
    for _ in range(lines):
        if lo == 0:
            break
        lo = data.rfind(b"\n", 0, lo - 1) + 1
    return lo


def _forward(data: bytes, pos: int, lines: int) -> int:
    """End (exclusive, before its newline) of the line `lines` lines after the one at `pos`."""
    hi = data.find(b"\n", pos)
    hi = len(data) if hi < 0 else hi
    for _ in range(lines):
        if hi >= len(data):
            break
        nxt = data.find(b"\n", hi + 1)
        hi = len(data) if nxt < 0 else nxt
    return hi


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _excerpt(data: bytes, start: int, end: int) -> tuple[str, str]:
    """(matched line(s), excerpt) around data[start:end], bounded in lines and characters."""
    line_start, line_end = _back(data, start, 0), _forward(data, end, 0)
    lo, hi = _back(data, start, BEFORE), _forward(data, end, AFTER)
    matched = " ".join(_clip(x.strip()) for x in _decode(data[line_start:line_end]).split("\n"))
    lines = [_clip(x.rstrip()) for x in _decode(data[lo:hi]).replace("\r", "").split("\n")]
    return matched, "\n".join(lines).strip("\n")


class Classifier:
    """Compiled, ordered families. `scan` and `scan_text` return the winning Finding or None."""

    def __init__(self, signatures: Iterable[Signature] | None = None, engine: str | None = None):
        self.signatures = tuple(signatures if signatures is not None else all_signatures())
        self._compiled = [re.compile(s.pattern) for s in self.signatures]
        self._needs = [requirement(s.pattern) for s in self.signatures]
        self._covers = [sorted(n.cover() or (), key=len, reverse=True) for n in self._needs]
        regexes = {
            i: hs for i, s in enumerate(self.signatures) if (hs := hyperscan_pattern(s.pattern))
        }
        self.engine = filter_engine(self._needs, regexes, engine)

    def _search(self, i: int, data: bytes, text: str) -> tuple[int, int] | None:
        """Byte span of family i's first match in data (decoded as `text`), or None."""
        m = self._compiled[i].search(text)
        if not m:
            return None
        start = len(text[: m.start()].encode())
        return start, start + len(m.group(0).encode())

    def scan_blocks(
        self, blocks: Iterable[bytes], newlines_before: Callable[[int], int] | None = None
    ) -> Finding | None:
        """The winning Finding over the blocks of one log, or None.

        `newlines_before(offset)`, when given, counts the log's newlines before a byte offset
        on demand (a file can be read again), so a log without a finding is never counted.
        Counting every block as it goes was measured slower (issue 15): `bytes.count` costs about
        half a hyperscan pass, and re-reading the prefix from the page cache costs no more.
        """
        best: Finding | None = None
        best_index = len(self._compiled)
        carry = b""
        offset = 0  # byte offset in the log of data[0]
        lines_before = 0  # newlines in the log before data[0], when counted as we go
        families = self.engine.families
        for chunk in blocks:
            data = carry + chunk
            present = self.engine.present(data)  # one pass: which literals occur in this block
            text = None
            for i in range(best_index):
                if i in families:  # hyperscan ran an over-matching form of the regex itself
                    if not present(i):
                        continue
                elif (cover := self._covers[i]) and not any(map(present, cover)):
                    continue
                elif not self._needs[i].holds(present):
                    continue
                text = _decode(data) if text is None else text
                span = self._search(i, data, text)
                if span:
                    line, excerpt = _excerpt(data, *span)
                    before = lines_before if newlines_before is None else newlines_before(offset)
                    line_no = before + data.count(b"\n", 0, span[0]) + 1
                    best, best_index = Finding(self.signatures[i], line_no, line, excerpt), i
                    break
            if best_index == 0:
                break  # nothing can beat the first family
            # keep the last two lines (bounded) so a message split over the edge still matches
            keep_from = max(len(data) - OVERLAP_CHARS, 0)
            nl = data.rfind(b"\n", keep_from)
            if nl > keep_from:
                prev = data.rfind(b"\n", keep_from, nl)
                keep_from = prev + 1 if prev >= 0 else keep_from
            if newlines_before is None:
                lines_before += data.count(b"\n", 0, keep_from)
            offset += keep_from
            carry = data[keep_from:]
        return best

    def scan(self, path: str | Path) -> Finding | None:
        with open(path, "rb") as f:
            return self.scan_blocks(_blocks(f), lambda offset: _newlines(path, offset))

    def scan_text(self, text: str) -> Finding | None:
        return self.scan_blocks([text.encode("utf-8")])


def _newlines(path: str | Path, upto: int) -> int:
    """Newlines in the file's first `upto` bytes, read again in blocks."""
    count = 0
    with open(path, "rb") as f:
        while upto > 0 and (chunk := f.read(min(BLOCK_BYTES, upto))):
            count += chunk.count(b"\n")
            upto -= len(chunk)
    return count


def _blocks(f: BinaryIO, size: int = BLOCK_BYTES):
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
    m = re.search(s.pattern, finding.line)
    detail = (m.groupdict().get("detail") or "").strip()[:200] if m else ""
    if detail:
        desc += f" ({detail})"
    return f"{s.id} ({what}){desc}. Log line {finding.line_no}: {finding.line}"
