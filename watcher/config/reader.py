"""One TOML table read with its types checked and unknown keys refused, every error naming the
file, the table and the key; durations (90s, 30m, 6h, 14d) read as seconds.

Every table of watch.toml goes through this one reader, so each error reads the same way whichever
table it is in: a maintainer fixes it without reading code, and a typo is never silently ignored.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from pathlib import Path
from typing import Any

from watcher.core.errors import ConfigError

_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str | int | float) -> float:
    """'30m' -> 1800.0; bare numbers are seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 30m, 6h, 14d)")
    return float(m.group(1)) * _UNITS[m.group(2)]


class TableReader:
    """Reads one TOML table, checking types and rejecting unknown keys, with precise errors."""

    def __init__(self, file: Path, where: str, table: Any):
        self.file, self.where = file, where
        if not isinstance(table, dict):
            self.fail(None, f"must be a table, got {type(table).__name__}")
        self.table = table
        self.used: set[str] = set()

    def fail(self, key: str | None, msg: str):
        place = f"[{self.where}]" + (f" key '{key}'" if key else "")
        raise ConfigError(f"{self.file}: {place}: {msg}")

    def get(self, key: str, types, default=None, required: bool = False):
        self.used.add(key)
        if key not in self.table:
            if required:
                self.fail(key, "is required")
            return default
        value = self.table[key]
        if types is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        ok = isinstance(value, types) and not (isinstance(value, bool) and types in (int, float))
        if not ok:
            names = (
                types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
            )
            self.fail(key, f"must be {names}, got {type(value).__name__} {value!r}")
        return value

    def str_list(self, key: str) -> tuple[str, ...]:
        value = self.get(key, list, [])
        if not all(isinstance(v, str) for v in value):
            self.fail(key, "must be a list of strings")
        return tuple(value)

    def regex_list(self, key: str) -> tuple[str, ...]:
        """A list of regular expressions, each compiled now so a typo fails at load time."""
        value = self.str_list(key)
        for i, pattern in enumerate(value):
            try:
                re.compile(pattern)
            except re.error as e:
                self.fail(
                    key, f"entry {i + 1} ({pattern!r}) is not a valid regular expression: {e}"
                )
        return value

    def duration(self, key: str, default: float) -> float:
        value = self.get(key, (str, int, float), None)
        if value is None:
            return default
        try:
            return parse_duration(value)
        except ValueError as e:
            self.fail(key, str(e))

    def date(self, key: str) -> date | None:
        value = self.get(key, (str, date), None)
        if value is None or (isinstance(value, date) and not isinstance(value, datetime)):
            return value
        if isinstance(value, datetime):
            return value.date()
        try:
            return date.fromisoformat(value)
        except ValueError:
            self.fail(key, f"must be a date like 2026-12-31, got {value!r}")

    def choice(self, key: str, choices, default=None, required=False):
        value = self.get(key, str, default, required)
        if value is not None and value not in choices:
            self.fail(key, f"must be one of {', '.join(choices)}; got {value!r}")
        return value

    def ident(self) -> str:
        value = self.get("id", str, required=True)
        if not _ID.match(value):
            self.fail("id", f"{value!r} must be lower-case letters, digits, '.', '_' or '-'")
        return value

    def sub(self, key: str) -> TableReader | None:
        self.used.add(key)
        if key not in self.table:
            return None
        return TableReader(self.file, f"{self.where}.{key}", self.table[key])

    def done(self):
        unknown = sorted(set(self.table) - self.used)
        if unknown:
            self.fail(unknown[0], "is not a known key" + did_you_mean(unknown[0], self.used))


def did_you_mean(key: str, known: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(sorted(known))})"
