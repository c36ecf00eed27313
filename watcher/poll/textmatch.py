"""Config regexes over upstream text, with the work bounded.

A config pattern such as `GPTQ.*!=\\s*0` backtracks quadratically over one long line, and Python's
`re` holds the GIL while it does (no deadline, Ctrl-C or scheduler tick runs meanwhile). Upstream
text is not ours: a minified file or a commit message can hold a 500 kB line. So patterns match
one line at a time, each line cut to MAX_LINE_CHARS (a match must lie within one line), and,
where the pattern can be rewritten for it, hyperscan (linear time) first says whether the line
can match at all, so Python's `re` runs only on lines that probably match.

`slow_pattern` names the shape that backtracks (`.*` between two literals) for `watcher validate`.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from re import _constants as re_constants
from re import _parser as re_parser

MAX_LINE_CHARS = 2000  # a real source line is far shorter; past this only the start is matched

_local = threading.local()


@functools.lru_cache(maxsize=512)
def _gate(pattern: str) -> Callable[[bytes], bool] | None:
    """A hyperscan test "can `pattern` match in these bytes?" (never a false no), or None."""
    try:
        import hyperscan

        from watcher.core.patterns import hyperscan_pattern
    except ImportError:
        return None
    expression = hyperscan_pattern(pattern)
    if expression is None:
        return None
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    flags = (
        hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_ALLOWEMPTY
    )
    try:
        db.compile(expressions=[expression], ids=[0], elements=1, flags=[flags])
    except hyperscan.error:
        return None

    def can_match(data: bytes) -> bool:
        scratches = getattr(_local, "scratches", None)
        if scratches is None:
            scratches = _local.scratches = {}
        scratch = scratches.get(pattern)
        if scratch is None:
            scratch = scratches[pattern] = hyperscan.Scratch(db)
        hit = []

        def on_match(*_args):
            hit.append(True)  # SINGLEMATCH: reported once

        db.scan(data, match_event_handler=on_match, scratch=scratch)
        return bool(hit)

    return can_match


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def matching_lines(pattern: str, text: str) -> list[int]:
    """The 1-based numbers of the lines where `pattern` matches (within the line's first
    MAX_LINE_CHARS characters)."""
    rx, gate = _compiled(pattern), _gate(pattern)
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        line = line[:MAX_LINE_CHARS]
        if gate is not None and not gate(line.encode("utf-8", "surrogatepass")):
            continue
        if rx.search(line):
            out.append(n)
    return out


def search(pattern: str, text: str) -> bool:
    """Does `pattern` match on some line of `text` (bounded as `matching_lines`)?"""
    rx, gate = _compiled(pattern), _gate(pattern)
    for line in text.split("\n"):
        line = line[:MAX_LINE_CHARS]
        if gate is not None and not gate(line.encode("utf-8", "surrogatepass")):
            continue
        if rx.search(line):
            return True
    return False


def _unbounded_any(op, av) -> bool:
    c = re_constants
    return (
        op in (c.MAX_REPEAT, c.MIN_REPEAT)
        and av[1] == c.MAXREPEAT
        and len(av[2]) == 1
        and av[2][0][0] is c.ANY
    )


def slow_pattern(pattern: str) -> str | None:
    """A sentence when `pattern` has an unanchored `.*` (or `.+`) between two literals, the shape
    that backtracks quadratically over a long line; None otherwise."""
    try:
        parsed = list(re_parser.parse(pattern))
    except (re.error, RecursionError):
        return None
    anchored = bool(parsed) and parsed[0][0] is re_constants.AT
    if anchored:
        return None
    for i, (op, av) in enumerate(parsed):
        if not _unbounded_any(op, av):
            continue
        before = any(o is re_constants.LITERAL for o, _ in parsed[:i])
        after = any(o is re_constants.LITERAL for o, _ in parsed[i + 1 :])
        if before and after:
            return (
                f"pattern {pattern!r} has an unanchored `.*` between literals: it backtracks "
                f"quadratically over a long line (watcher matches each line's first "
                f"{MAX_LINE_CHARS} characters); a bounded repeat such as `.{{0,200}}` or a class "
                "such as `[^!]*` does the same work in linear time"
            )
    return None
