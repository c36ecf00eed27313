"""One cleaning rule for upstream text: secrets hidden, line ends as newlines, and no character
that could hide, reorder or break what surrounds it.

Titles, commit subjects, file lines, log excerpts and engine output come from people and programs
watcher does not control. The same characters are unsafe wherever that text goes (the store, a
terminal, a page, the site, status.json): C0 controls but tab and newline, DEL, C1 controls, the
bidi overrides and isolates, the non-characters U+FFFE/U+FFFF and lone surrogates. Each boundary
applies this rule; a format's own escaping (Markdown, HTML, a terminal's escape sequences) is a
thin step on top of it, in the module that writes that format.
"""

from __future__ import annotations

import re
from typing import Any

from watcher.core.redact import redact

UNSAFE = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufffe\uffff\ud800-\udfff]"
)
# What cannot be stored as valid UTF-8 text, or breaks a line: C0 controls but tab and newline,
# DEL, C1 controls and lone surrogates. Bidi marks and non-characters are kept in the store (they
# are words upstream wrote) and dropped wherever the text is shown.
UNSTORABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_SAFE_URL = re.compile(r"^https?://[^\s<>()\"']+$")


def drop_unsafe(text: str) -> str:
    """The rule's characters removed, nothing else touched (a terminal line, a stored reason)."""
    return UNSAFE.sub("", text)


def storable(text: str) -> str:
    """Text as it arrives, made safe to store: each unstorable character becomes U+FFFD, so what
    was there stays visible, and upstream's words are kept as they are (nothing redacted yet)."""
    return UNSTORABLE.sub("\ufffd", text)


def clean_text(text: Any) -> str:
    """Text as watcher shows it anywhere: secrets hidden, CRLF and CR as newlines, unsafe
    characters dropped. None shows as ''."""
    s = redact("" if text is None else str(text))
    return drop_unsafe(s.replace("\r\n", "\n").replace("\r", "\n"))


def one_line(text: Any, limit: int = 300) -> str:
    """The rule on one line of bounded length (status.json as is; the start of Markdown's
    escaping): a long title ends in '…' rather than growing a page without bound."""
    s = clean_text(text).replace("\n", " ")
    return s[: limit - 1] + "…" if len(s) > limit else s


def clean_tree(value: Any, memo: dict[str, str] | None = None) -> Any:
    """The rule applied to every string of a structure (dict values, lists, tuples as lists).

    `memo` remembers cleaned strings within one call: an item's history repeats the same few
    titles and states hundreds of times.
    """
    if isinstance(value, str):
        if memo is None:
            return clean_text(value)
        if value not in memo:
            memo[value] = clean_text(value)
        return memo[value]
    if memo is None:
        memo = {}
    if isinstance(value, dict):
        return {k: clean_tree(v, memo) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_tree(v, memo) for v in value]
    return value


def safe_url(url: Any) -> str:
    """Only http(s) links survive; anything else (javascript:, data:) becomes '#'."""
    s = str(url or "")
    return s if _SAFE_URL.match(s) else "#"
