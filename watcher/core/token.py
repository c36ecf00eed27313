"""GITHUB_TOKEN, held by watcher alone once it started.

The engine's scrubbed environment is not enough: an engine running as the same user can read
`/proc/<watcher's pid>/environ`, which shows the environment watcher was started with, whatever
`os.environ` says since. So the entry point (`watcher.cli.main`) calls `hold()`: the value moves
here, is removed from `os.environ` (no child inherits it) and is overwritten in the memory that
/proc/<pid>/environ reads. Everything that needs the token asks `github_token()`.

The token then lives in watcher's memory, which the same user can read through
/proc/<pid>/mem; `hold()` also makes watcher non-dumpable (`PR_SET_DUMPABLE` 0), so only a
process with CAP_SYS_PTRACE (root) can read it. Engines exec, which makes them dumpable again:
teardown still reads their /proc entries.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

NAME = "GITHUB_TOKEN"
_held: str | None = None


def github_token() -> str | None:
    """The token: GITHUB_TOKEN if set now (a test, the demo), else the one `hold()` took."""
    return os.environ.get(NAME) or _held


def hold() -> bool:
    """Take GITHUB_TOKEN out of the process environment and make the process's memory
    unreadable to others; True when the token was there."""
    global _held
    not_dumpable()
    value = os.environ.get(NAME)
    if not value:
        return False
    _held = value
    _overwrite_in_place()
    os.environ.pop(NAME, None)  # unsetenv: children (engines, git) never see it
    return True


_PR_SET_DUMPABLE = 4


def not_dumpable() -> bool:
    """Linux: no other process of this user may read this one's memory (/proc/<pid>/mem), its
    environ, or attach a debugger (and no core dump is written). False where it cannot be set."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _overwrite_in_place() -> None:
    """Zero the value where the C library keeps it: for an inherited variable that is the
    initial stack, exactly what /proc/<pid>/environ shows (unsetenv only drops the pointer)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.getenv.restype = ctypes.c_void_p
        libc.getenv.argtypes = [ctypes.c_char_p]
        address = libc.getenv(NAME.encode())
        if address:
            ctypes.memset(address, 0, len(ctypes.string_at(address)))
    except (OSError, AttributeError):  # no libc to reach: os.environ.pop still applies
        pass
