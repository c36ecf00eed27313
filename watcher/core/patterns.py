"""The regex prefilter: the literals every match of a pattern must contain, one pass of a
multi-literal engine (hyperscan when installed, else a pure-Python finder) to say which patterns
may match a block, and the translation of a Python regex into hyperscan's dialect.

Shared by the failure classifier (smoke) and bounded text matching (poll): a prefilter can only
say "maybe", so the same Python regex still decides, on the same bytes.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from re import _constants as re_constants  # the stdlib's own regex parser: literals of a pattern
from re import _parser as re_parser

from watcher.core.errors import WatcherError

MIN_LITERAL = 3  # shorter runs ("is", "of") are dropped: they only slow the pass, never decide it
# Non-ASCII characters that Python's re.IGNORECASE matches to an ASCII letter (checked by a test
# against every code point): folded to that letter before the literal pass, so it misses nothing.
FOLD = ((b"\xc4\xb0", b"i"), (b"\xc4\xb1", b"i"), (b"\xe2\x84\xaa", b"k"), (b"\xc5\xbf", b"s"))


# ------------------------------------------------------------------ the one-pass literal filter
#
# Every match of a family's regex contains certain literal strings: `requirement` reads them from
# the parsed regex as an AND/OR tree (a sequence needs all its parts, an alternation one of its
# branches; optional parts, classes, anchors and look-arounds need nothing). One pass of a
# multi-literal engine finds which of all families' literals occur in a block (case-insensitively,
# a superset of what the regex can see); only the families whose tree holds run their Python
# regex over the block, in priority order. A filter that can only say "maybe" never changes the
# winner or its excerpt: the same regex decides, on the same bytes.


@dataclass(frozen=True)
class Need:
    """`all` or `any` of `parts` (lower-case ASCII literals or nested Needs); no parts: true."""

    op: str
    parts: tuple[str | Need, ...] = ()

    def holds(self, present: Callable[[str], bool]) -> bool:
        test = all if self.op == "all" else any
        return not self.parts or test(
            present(p) if isinstance(p, str) else p.holds(present) for p in self.parts
        )

    def cover(self) -> frozenset[str] | None:
        """A few literals one of which every match contains (None: no such set): a quick first
        test, so the pure-Python finder looks for two or three literals per family, not all."""
        if not self.parts:
            return None
        if self.op == "any":
            covers = [p.cover() if isinstance(p, Need) else frozenset([p]) for p in self.parts]
            if None in covers:
                return None
            union = frozenset().union(*covers)  # "memory" covers "outofmemoryerror" too
            return frozenset(a for a in union if not any(b != a and b in a for b in union))
        covers = [p.cover() if isinstance(p, Need) else frozenset([p]) for p in self.parts]
        covers = [c for c in covers if c]
        # fewest literals, as long as they are not tiny; then the longest
        return max(
            covers, key=lambda c: (min(map(len, c)) >= 4, -len(c), min(map(len, c))), default=None
        )

    def literals(self) -> set[str]:
        out: set[str] = set()
        for p in self.parts:
            out.update([p] if isinstance(p, str) else p.literals())
        return out


ANYTHING = Need("all")


def requirement(pattern: str) -> Need:
    """The literals every match of `pattern` contains; ANYTHING when none can be told."""
    try:
        return _sequence(re_parser.parse(pattern))
    except (re.error, RecursionError, ValueError, TypeError):
        return ANYTHING


def _sequence(items) -> Need:
    parts: list[str | Need] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= MIN_LITERAL:
            parts.append("".join(run).lower())
        run.clear()

    for op, av in items:
        if op is re_constants.LITERAL and av < 128:
            run.append(chr(av))
            continue
        flush()
        need = _node(op, av)
        if need.parts:
            parts.append(need)
    flush()
    # longest literals first: the likeliest to be absent, so `holds` stops early
    parts.sort(key=lambda p: -len(p) if isinstance(p, str) else 0)
    return Need("all", tuple(parts)) if parts else ANYTHING


def _node(op, av) -> Need:
    if op is re_constants.SUBPATTERN:
        return _sequence(av[-1])
    if op is getattr(re_constants, "ATOMIC_GROUP", None):
        return _sequence(av)
    repeats = (re_constants.MAX_REPEAT, re_constants.MIN_REPEAT)
    if op in repeats or op is getattr(re_constants, "POSSESSIVE_REPEAT", None):
        low, _high, item = av
        return _sequence(item) if low >= 1 else ANYTHING
    if op is re_constants.BRANCH:
        branches = [_sequence(b) for b in av[1]]
        if any(not b.parts for b in branches):
            return ANYTHING
        return Need("any", tuple(branches))
    return ANYTHING  # one character of a class, `.`, an anchor, a look-around, a back-reference


def _folded(data: bytes) -> bytes:
    if data.isascii():
        return data
    for raw, ascii_letter in FOLD:
        data = data.replace(raw, ascii_letter)
    return data


# ------------------------------------------------------------------ the family regexes in hyperscan
#
# Hyperscan can run most families' regexes themselves, so a block where the words all occur but the
# regex cannot match (a near miss) never reaches Python. `hyperscan_pattern` rewrites a family's
# parsed regex for hyperscan's byte matching so that it can only match MORE than Python's `re` on the
# decoded text: every non-ASCII character (or invalid UTF-8, decoded as U+FFFD) is 1 to 4 bytes
# >= 0x80, so a one-character element where a non-ASCII character could match also accepts bytes
# 0x80-0xff, 1 to 4 of them per character (a repeat's bounds are counted in bytes); the ASCII
# characters it accepts are asked of Python's `re` itself (with the family's flags); the letters
# (?i) folds to i, k and s are spelled from FOLD; anchors and `\b` are dropped (always true). A family with back-references or
# look-arounds (or one hyperscan rejects) keeps the literal filter. When hyperscan reports no match
# in a block, Python's regex cannot match there either; when it reports one, the regex runs on the
# block as before, so the answer is the same.


class Unsupported(Exception):
    """A regex element hyperscan cannot over-approximate here."""


CHAR_OPS = (re_constants.LITERAL, re_constants.NOT_LITERAL, re_constants.ANY, re_constants.IN)
FOLDED_LETTERS = frozenset("iksIKS")  # letters (?i) matches to a non-ASCII character too (FOLD)
_CATEGORY = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}
_CHAR_FLAGS = re.IGNORECASE | re.DOTALL | re.ASCII


def hyperscan_pattern(pattern: str) -> bytes | None:
    """`pattern` for hyperscan, matching at least what Python's `re` matches; None if it cannot."""
    try:
        parsed = re_parser.parse(pattern)
        return _hs_sequence(parsed, parsed.state.flags)
    except (Unsupported, re.error, RecursionError, ValueError, TypeError):
        return None


def _hs_sequence(items, flags: int) -> bytes:
    return b"".join(_hs_node(op, av, flags) for op, av in items)


def _hs_node(op, av, flags: int) -> bytes:
    c = re_constants
    if op is c.AT:
        return b""  # ^ $ \A \Z \b \B: dropping a condition only matches more
    if op in CHAR_OPS:
        return _hs_chars(op, av, flags, 1, 1)
    if op is c.SUBPATTERN:
        _group, add, remove, sub = av
        return b"(?:" + _hs_sequence(sub, (flags | add) & ~remove) + b")"
    if op is getattr(c, "ATOMIC_GROUP", None):
        return b"(?:" + _hs_sequence(av, flags) + b")"
    if op is c.BRANCH:
        return b"(?:" + b"|".join(_hs_sequence(b, flags) for b in av[1]) + b")"
    if op in (c.MAX_REPEAT, c.MIN_REPEAT) or op is getattr(c, "POSSESSIVE_REPEAT", None):
        low, high, item = av  # lazy and possessive repeats match a subset of the greedy one's
        if len(item) == 1 and item[0][0] in CHAR_OPS:  # one class, repeated: counted in bytes
            return _hs_chars(*item[0], flags, low, None if high == c.MAXREPEAT else high)
        bound = f"{{{low},}}" if high == c.MAXREPEAT else f"{{{low},{high}}}"
        return b"(?:" + _hs_sequence(item, flags) + b")" + bound.encode()
    raise Unsupported(op)  # back-references, look-arounds, conditionals


def _hs_chars(op, av, flags: int, low: int, high: int | None) -> bytes:
    """`low` to `high` (None: no limit) characters of one class, as one byte class: the ASCII
    bytes Python accepts, plus 0x80-0xff where a non-ASCII character could match; such a
    character (or an invalid byte, decoded as U+FFFD) takes 1 to 4 bytes."""
    ascii_set, non_ascii = _hs_char(op, av, flags)
    if op is re_constants.LITERAL and av < 128 and non_ascii and (low, high) == (1, 1):
        # i, k or s under (?i): the exact UTF-8 of the letters Python folds to it (FOLD)
        folds = [raw for raw, letter in FOLD if letter == chr(av).lower().encode()]
        spelled = [b"".join(b"\\x%02x" % x for x in raw) for raw in folds]
        return b"(?:" + b"|".join([_byte_class(ascii_set), *spelled]) + b")"
    codes = [*ascii_set, *(range(0x80, 0x100) if non_ascii else ())]
    if not codes:
        raise Unsupported(op)
    width = 4 if non_ascii else 1
    if high is None:
        bound = f"{{{low},}}"
    elif (low, high * width) == (1, 1):
        bound = ""
    else:
        bound = f"{{{low},{high * width}}}"
    return _byte_class(codes) + bound.encode()


def _hs_char(op, av, flags: int) -> tuple[tuple[int, ...], bool]:
    """One character: the ASCII bytes Python accepts, and whether a non-ASCII one could match."""
    c = re_constants
    ignorecase = bool(flags & re.IGNORECASE)
    if op is c.LITERAL:
        source, non_ascii = (
            _char_source(av),
            av >= 128 or (ignorecase and chr(av) in FOLDED_LETTERS),
        )
    elif op is c.NOT_LITERAL:
        source, non_ascii = "[^" + _char_source(av) + "]", True
    elif op is c.ANY:
        source, non_ascii = ".", True
    else:
        parts, non_ascii = [], False
        for kind, value in av:
            if kind is c.NEGATE:
                parts.insert(0, "^")
                non_ascii = True
            elif kind is c.LITERAL:
                parts.append(_char_source(value))
                non_ascii |= value >= 128 or (ignorecase and chr(value) in FOLDED_LETTERS)
            elif kind is c.RANGE:
                lo, hi = value
                parts.append(_char_source(lo) + "-" + _char_source(hi))
                folded = any(chr(x) in FOLDED_LETTERS for x in range(lo, min(hi, 127) + 1))
                non_ascii |= hi >= 128 or (ignorecase and folded)
            elif kind is c.CATEGORY and str(value) in _CATEGORY:
                parts.append(_CATEGORY[str(value)])
                non_ascii = True
            else:
                raise Unsupported(kind)
        source = "[" + "".join(parts) + "]"
    ascii_set = _ascii_accepted(source, flags & _CHAR_FLAGS)
    return ascii_set, non_ascii


@functools.lru_cache(maxsize=1024)
def _ascii_accepted(source: str, flags: int) -> tuple[int, ...]:
    """The ASCII characters Python accepts (folding included), in Unicode and in ASCII mode."""
    modes = [re.compile(source, flags | m) for m in (0, re.ASCII)]
    return tuple(x for x in range(128) if any(m.fullmatch(chr(x)) for m in modes))


def _byte_class(codes) -> bytes:
    """`[...]` of these byte values, as ranges (hyperscan limits a pattern's length)."""
    codes, out, i = sorted(codes), [], 0
    while i < len(codes):
        j = i
        while j + 1 < len(codes) and codes[j + 1] == codes[j] + 1:
            j += 1
        out.append(b"\\x%02x" % codes[i] + (b"-\\x%02x" % codes[j] if j > i else b""))
        i = j + 1
    return b"[" + b"".join(out) + b"]"


def _char_source(code: int) -> str:
    return f"\\U{code:08x}"


def _hs_literal(literal: str) -> bytes:
    """A lower-case literal for a caseless hyperscan pass over raw (unfolded) bytes."""
    folds: dict[str, list[bytes]] = {}
    for raw, letter in FOLD:
        folds.setdefault(letter.decode(), []).append(raw)
    out = []
    for ch in literal:
        esc = b"\\x%02x" % ord(ch)
        if ch in folds:
            alts = [esc, *(b"".join(b"\\x%02x" % x for x in r) for r in folds[ch])]
            out.append(b"(?:" + b"|".join(alts) + b")")
        else:
            out.append(esc)
    return b"".join(out)


class FindEngine:
    """Pure Python: `bytes.find` on the lower-cased block, one literal at a time, on demand."""

    name = "python"
    families: frozenset[int] = frozenset()  # decides no family by its regex: literals only

    def __init__(self, needs: list[Need], regexes: dict[int, bytes] | None = None):
        self.literals = set().union(*(n.literals() for n in needs))

    def present(self, data: bytes) -> Callable[[str | int], bool]:
        low = _folded(data).lower()
        seen: dict[str | int, bool] = {}

        def present(literal: str | int) -> bool:
            if literal not in seen:
                seen[literal] = str(literal).encode() in low
            return seen[literal]

        return present


class HyperscanEngine:
    """Hyperscan, one pass per block: the families' regexes where it can run them (`families`),
    and the literals of the others (caseless), over the raw bytes."""

    name = "hyperscan"

    def __init__(self, needs: list[Need], regexes: dict[int, bytes] | None = None):
        import hyperscan

        self.db, self.keys, self.families = _hyperscan_database(
            tuple(needs), tuple(sorted((regexes or {}).items()))
        )
        self.scratch = hyperscan.Scratch(self.db) if self.db is not None else None
        # A scratch space serves one scan at a time (ScratchInUseError otherwise): the log pump's
        # early check and the final verdict scan from different threads, so each gets its own.
        self._local = threading.local()

    def _thread_scratch(self):
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self.scratch.clone()
        return scratch

    def present(self, data: bytes) -> Callable[[str | int], bool]:
        found: set[str | int] = set()
        keys = self.keys

        def on_match(key_id, _start, _end, _flags, _context):
            found.add(keys[key_id])

        if self.db is not None:
            self.db.scan(data, match_event_handler=on_match, scratch=self._thread_scratch())
        return found.__contains__


@functools.lru_cache(maxsize=8)
def _hyperscan_database(needs: tuple[Need, ...], regexes: tuple[tuple[int, bytes], ...]):
    """(database, key of each id, families decided by regex), compiled once per process.

    A family whose rewritten regex hyperscan rejects (too large, may match empty) falls back to
    its literals."""
    import hyperscan

    families = dict(regexes)
    while True:
        literals = sorted(
            set().union(*(n.literals() for i, n in enumerate(needs) if i not in families))
        )
        keys: list[str | int] = [*literals, *families]
        expressions = [_hs_literal(x) for x in literals] + list(families.values())
        caseless = hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH
        flags = [caseless] * len(literals) + [_regex_flags()] * len(families)
        if not keys:
            return None, [], frozenset()
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        try:
            db.compile(
                expressions=expressions, ids=list(range(len(keys))), elements=len(keys), flags=flags
            )
            return db, keys, frozenset(families)
        except hyperscan.error:
            rejected = [i for i, pattern in families.items() if not _hyperscan_accepts(pattern)]
            if not rejected:
                raise
            for i in rejected:
                del families[i]


def _regex_flags() -> int:
    """Prefilter mode: hyperscan may simplify a regex so it matches more, never less (its
    documented contract), which is all the gate needs, and is faster on keyword-dense logs."""
    import hyperscan

    return hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_PREFILTER


def _hyperscan_accepts(pattern: bytes) -> bool:
    import hyperscan

    try:
        hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK).compile(
            expressions=[pattern], ids=[0], elements=1, flags=[_regex_flags()]
        )
        return True
    except hyperscan.error:
        return False


class NoFilter:
    """No filter: every family's regex runs on every block (the reference, and `before`)."""

    name = "none"
    families: frozenset[int] = frozenset()

    def __init__(self, needs: list[Need], regexes: dict[int, bytes] | None = None):
        pass

    def present(self, data: bytes) -> Callable[[str | int], bool]:
        return lambda literal: True


ENGINES = ("hyperscan", "python", "none")


def filter_engine(needs: list[Need], regexes: dict[int, bytes], name: str | None = None):
    """Hyperscan when it is installed, else the pure-Python finder; `none` filters nothing.

    WATCHER_CLASSIFIER_ENGINE=python (or none) picks another; all of them find the same family.
    `regexes` (family index -> rewritten regex) are used by hyperscan only.
    """
    name = name or os.environ.get("WATCHER_CLASSIFIER_ENGINE") or "hyperscan"
    if name not in ENGINES:
        raise WatcherError(f"WATCHER_CLASSIFIER_ENGINE={name}: use one of {', '.join(ENGINES)}")
    if name == "none":
        return NoFilter(needs)
    if name == "hyperscan":
        try:
            return HyperscanEngine(needs, regexes)
        except ImportError:
            pass
    return FindEngine(needs)
