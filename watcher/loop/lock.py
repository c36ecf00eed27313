"""One cycle at a time per data folder: an advisory file lock shared by `check-now` and `serve`.

`fcntl.flock` on `<data_dir>/watcher.lock`. The kernel drops the lock when its holder exits, even on
SIGKILL, so a crashed cycle never leaves a stale lock behind and nothing has to be cleaned up. The
holder writes its pid, command and start time into the file, so a waiting cycle can say who it
waited for. The file itself stays in place: deleting a flock'ed file lets two processes lock two
different inodes.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from watcher.core.clock import iso, utcnow
from watcher.core.errors import LockBusy, WatcherError

log = logging.getLogger("watcher")

LOCK_NAME = "watcher.lock"
_POLL_S = 0.1


def lock_path(data_dir: Path) -> Path:
    return Path(data_dir) / LOCK_NAME


def read_holder(path: Path) -> dict[str, Any]:
    """What the current (or last) holder wrote; {} when unknown or half-written."""
    try:
        text = path.read_text(encoding="utf-8").strip()
        return json.loads(text) if text else {}
    except (OSError, ValueError):
        return {}


def describe_holder(holder: dict[str, Any]) -> str:
    if not holder.get("pid"):
        return "another watcher process (pid unknown)"
    what = f"pid {holder['pid']}"
    if holder.get("command"):
        what = f"`watcher {holder['command']}` ({what}"
        what += f" on {holder['host']})" if holder.get("host") else ")"
    if holder.get("since"):
        what += f", holding it since {holder['since']}"
    return what


@contextmanager
def cycle_lock(
    data_dir: Path,
    timeout: float,
    command: str,
    *,
    stop: threading.Event | None = None,
) -> Iterator[Path]:
    """Hold the data folder's lock for one cycle; wait up to `timeout` seconds for it.

    Raises LockBusy (exit code 75) naming the holder when the wait runs out, or at once when
    `stop` is set while waiting (serve shutting down must not sit out a long wait).
    """
    path = lock_path(data_dir)
    fd, writable = _open(path)
    try:
        _acquire(fd, path, timeout, stop)
        if writable:
            holder = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": command,
                "since": iso(utcnow()),
            }
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
            except OSError as e:  # a full disk: the lock holds all the same, it just can't say
                log.warning("%s: cannot name this holder: %s", path, e.strerror or e)
                writable = False
        try:
            yield path
        finally:
            if writable:
                os.ftruncate(fd, 0)  # nobody holds it now: a reader must not name us
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _open(path: Path) -> tuple[int, bool]:
    """Read-write if we may; flock works on a read-only descriptor too (a lock file left by
    another user, e.g. after a `sudo watcher check-now`), it just cannot name its holder."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644), True
    except PermissionError:
        try:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC), False
        except OSError as e:
            raise WatcherError(f"{path}: cannot open the lock file: {e}") from None
    except OSError as e:
        raise WatcherError(f"{path}: cannot open the lock file: {e}") from None


def _acquire(fd: int, path: Path, timeout: float, stop: threading.Event | None) -> None:
    deadline = time.monotonic() + max(0.0, timeout)
    announced = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        holder = describe_holder(read_holder(path))
        left = deadline - time.monotonic()
        if left <= 0 or (stop is not None and stop.is_set()):
            raise LockBusy(
                f"another cycle is running: {path} is held by {holder}; waited "
                f"{timeout:g} s. Two cycles never overlap: try again later, or raise "
                "[watcher] lock_timeout in the config."
            )
        if not announced:
            log.info("waiting up to %g s for %s, held by %s", timeout, path, holder)
            announced = True
        if stop is not None:
            stop.wait(min(_POLL_S, left))
        else:
            time.sleep(min(_POLL_S, left))
