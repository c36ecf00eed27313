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
from typing import BinaryIO

from watcher.signatures import BUILTIN, Signature, all_signatures

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


# Literal words (lower-case bytes) one of which every match of a built-in family contains. The
# regex then runs only on the few lines around each hit, not on the whole block: Python's `re`
# scans 15-60 MB/s per family, `bytes.find` some GB/s. Config signatures have no keywords and
# are searched over whole blocks.
KEYWORDS: dict[str, tuple[bytes, ...]] = {
    "marlin-tile-n": (b"divisible",),
    "mamba-extra-buffer": (b"extra_buffer",),
    "spec-decode-hybrid": (b"support",),
    "nccl": (b"nccl", b"watchdog caught"),
    "kv-cache-memory": (b"memory", b"too small", b"max_total_num_tokens"),
    "cuda-oom": (b"out of memory", b"outofmemory", b"cudaerrormemoryallocation", b"alloc_failed"),
    "port-in-use": (b"in use", b"errno 98", b"bind() failed"),
    "model-not-found": (
        b"repositorynotfound",
        b"not found",
        b"does not exist",
        b"no such file",
        b"load the configuration",
        b"valid model identifier",
    ),
    "docker-gpu": (b"capabilities", b"nvidia-container-cli", b"docker daemon", b"from daemon"),
}
WINDOW_LINES = 2  # lines before and after a keyword hit that the regex sees (wrapped messages)


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

    def __init__(self, signatures: Iterable[Signature] | None = None):
        builtin = {s.id: s.pattern for s in BUILTIN}
        self.signatures = tuple(signatures if signatures is not None else all_signatures())
        self._compiled = [re.compile(s.pattern) for s in self.signatures]
        # keywords only where the pattern is the built-in one they were written for
        self._keywords = [
            KEYWORDS.get(s.id) if builtin.get(s.id) == s.pattern else None for s in self.signatures
        ]

    def _search(self, i: int, data: bytes, low: bytes) -> tuple[int, int] | None:
        """Byte span of family i's first match in data, or None."""
        rx, keywords = self._compiled[i], self._keywords[i]
        if keywords is None:
            text = _decode(data)
            m = rx.search(text)
            if not m:
                return None
            start = len(text[: m.start()].encode())
            return start, start + len(m.group(0).encode())
        # windows of lines around every keyword hit, merged, so a dense log costs one regex pass
        spans = []
        for kw in keywords:
            pos = low.find(kw)
            while pos >= 0:
                hi = _forward(data, pos + len(kw), WINDOW_LINES)
                spans.append((_back(data, pos, WINDOW_LINES), hi))
                pos = low.find(kw, hi)
        spans.sort()
        merged: list[list[int]] = []
        for lo, hi in spans:
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        for lo, hi in merged:
            window = _decode(data[lo:hi])
            m = rx.search(window)
            if m:
                start = lo + len(window[: m.start()].encode())
                return start, start + len(m.group(0).encode())
        return None

    def scan_blocks(self, blocks: Iterable[bytes]) -> Finding | None:
        best: Finding | None = None
        best_index = len(self._compiled)
        carry = b""
        lines_before = 0  # newlines in the log before data[0]
        for chunk in blocks:
            data = carry + chunk
            low = data.lower()  # ASCII-only, so byte offsets stay the same
            for i in range(best_index):
                span = self._search(i, data, low)
                if span:
                    line, excerpt = _excerpt(data, *span)
                    line_no = lines_before + data.count(b"\n", 0, span[0]) + 1
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
            lines_before += data.count(b"\n", 0, keep_from)
            carry = data[keep_from:]
        return best

    def scan(self, path: str | Path) -> Finding | None:
        with open(path, "rb") as f:
            return self.scan_blocks(_blocks(f))

    def scan_text(self, text: str) -> Finding | None:
        return self.scan_blocks([text.encode("utf-8")])


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
    return f"{s.id} ({what}){desc}. Log line {finding.line_no}: {finding.line}"
