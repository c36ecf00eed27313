"""Compose's variable interpolation, as the Compose specification defines it, and the `.env` file
beside a compose file: what `docker compose` will substitute before it runs anything.

`${VAR}`, `$VAR`, `${VAR:-d}`, `${VAR-d}`, `${VAR:?e}`, `${VAR?e}`, `${VAR:+a}`, `${VAR+a}`,
defaults, alternatives and messages that nest further `${…}`, and `$$` for a literal `$`. No
maintained Python library does all of it: docker-compose 1.x (the old Python Compose, unmaintained
since 2021) has no `:+` and no nesting, `envsubst` and python-dotenv's own expansion know only
`${VAR:-d}`. So this is a small parser that follows compose-go's rules (a `}` closes the innermost
`${`; a `$` not followed by a name or `{` stays as it is; an unset variable without a default becomes
empty), with python-dotenv reading the `.env` file's lines (quotes, `export`, comments).
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from watcher.core.errors import ConfigError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = (":-", ":?", ":+", "-", "?", "+")


@dataclass
class Seen:
    """What an interpolation ran into: variables unset with no default (they became empty, as
    Compose warns), and required ones (`:?`/`?`) that were missing, with their messages."""

    unset: list[str] = field(default_factory=list)
    required: dict[str, str] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    def add_unset(self, name: str) -> None:
        if name not in self.unset:
            self.unset.append(name)


def _closing(text: str, start: int) -> int:
    """Index of the `}` that closes the `${` whose body starts at `start`, or -1."""
    depth, i = 1, start
    while i < len(text):
        if text.startswith("${", i):
            depth, i = depth + 1, i + 2
            continue
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def substitute(text: str, environ: Mapping[str, str], seen: Seen | None = None) -> str:
    """`text` with every Compose variable replaced from `environ` (a name not in it is unset).

    A missing required variable becomes empty and is noted in `seen.required` (Compose would stop
    there; a caller decides what to do). ConfigError for a malformed `${…}`."""
    seen = Seen() if seen is None else seen
    out: list[str] = []
    i = 0
    while i < len(text):
        j = text.find("$", i)
        if j < 0:
            out.append(text[i:])
            break
        out.append(text[i:j])
        nxt = text[j + 1 : j + 2]
        if nxt == "$":
            out.append("$")
            i = j + 2
        elif nxt == "{":
            end = _closing(text, j + 2)
            if end < 0:
                raise ConfigError(f"invalid interpolation format for {text!r}: an unclosed '${{'")
            out.append(_braced(text[j + 2 : end], text, environ, seen))
            i = end + 1
        else:
            m = _NAME.match(text, j + 1)
            if m:
                out.append(_value(m.group(), environ, seen))
                i = m.end()
            else:  # `$` not followed by a name: kept as it is
                out.append("$")
                i = j + 1
    return "".join(out)


def _value(name: str, environ: Mapping[str, str], seen: Seen) -> str:
    seen.used.add(name)
    if name in environ:
        return environ[name]
    seen.add_unset(name)
    return ""


def _braced(body: str, whole: str, environ: Mapping[str, str], seen: Seen) -> str:
    m = _NAME.match(body)
    if not m:
        raise ConfigError(f"invalid interpolation format for {whole!r}: '${{{body}}}'")
    name, rest = m.group(), body[m.end() :]
    if not rest:
        return _value(name, environ, seen)
    op = next((o for o in _OPS if rest.startswith(o)), None)
    if op is None:
        raise ConfigError(
            f"invalid interpolation format for {whole!r}: '${{{body}}}' (Compose knows"
            " :- - :? ? :+ + and no other shell forms)"
        )
    arg = rest[len(op) :]
    seen.used.add(name)
    value = environ.get(name)
    missing = value is None or (op.startswith(":") and value == "")
    if op in (":-", "-"):
        return substitute(arg, environ, seen) if missing else value  # type: ignore[return-value]
    if op in (":+", "+"):
        return "" if missing else substitute(arg, environ, seen)
    if missing:  # :? or ?
        message = substitute(arg, environ, seen)
        seen.required.setdefault(name, message or f"{name} is required")
        return ""
    return value  # type: ignore[return-value]


def walk(value, environ: Mapping[str, str], seen: Seen):
    """Every string value of a parsed YAML tree substituted; keys and non-strings kept."""
    if isinstance(value, str):
        return substitute(value, environ, seen)
    if isinstance(value, list):
        return [walk(v, environ, seen) for v in value]
    if isinstance(value, dict):
        return {k: walk(v, environ, seen) for k, v in value.items()}
    return value


def dotenv_file(path: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The `.env` file at `path` as Compose reads it ({} when there is none): values in order,
    each interpolated from `environ` and the lines before it; single-quoted values literally."""
    from dotenv.parser import parse_stream

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror or e}") from None
    out: dict[str, str] = {}
    for b in parse_stream(io.StringIO(text)):
        if b.error:
            raise ConfigError(f"{path}, line {b.original.line}: not a NAME=value line")
        if b.key is None:
            continue
        raw = b.value or ""
        literal = b.original.string.partition("=")[2].lstrip().startswith("'")
        if literal:
            out[b.key] = raw
        else:
            out[b.key] = substitute(raw, {**out, **environ}, Seen())
    return out


def compose_environ(compose: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """What Compose interpolates `compose` with: the `.env` beside it, overridden by `environ`
    (the environment `docker compose` is run with)."""
    return {**dotenv_file(compose.parent / ".env", environ), **environ}
