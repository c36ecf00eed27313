"""The smoke run's log: the engine's output, redacted, capped in size, and watched for failures."""

from __future__ import annotations

import collections
import threading
from pathlib import Path

from watcher.core.redact import redact
from watcher.smoke.classify import Classifier

LOG_HEAD_BYTES = 1 << 20  # the start of the output, as it came
LOG_TAIL_BYTES = 4 << 20  # the end of the output, as it came
LOG_KEPT_BYTES = 256 << 10  # lines around known failures from the part in between
SCAN_BYTES = 1 << 20  # scan the output in batches of this size at least


class LogPump(threading.Thread):
    """Copies the engine's output into the run's log: redacted, capped, and watched.

    Engines print tokens (an HF_TOKEN in a config dump, a URL with credentials): the log is a
    file watcher writes, so nothing shaped like a token may reach it. A chatty engine can print
    gigabytes: the file keeps the first LOG_HEAD_BYTES and the last LOG_TAIL_BYTES, and from the
    part in between the lines around each known failure, so the classifier's verdict on the file
    is the one it would have given on the whole output. `check()` says (live, for the readiness
    wait) which known failure the output has shown so far: engines often log a fatal error in a
    worker and then hang instead of exiting.
    """

    MAX_LINE = 1 << 20

    def __init__(self, stream, log_path: Path, classifier: Classifier):
        super().__init__(daemon=True, name="smoke-log")
        self.stream, self.log_path, self.classifier = stream, log_path, classifier
        self.head_left = LOG_HEAD_BYTES
        self.tail: collections.deque[bytes] = collections.deque()
        self.tail_bytes = 0
        self.cut_bytes = 0
        self.cut_scan = bytearray()  # cut output not yet scanned
        self.kept: list[bytes] = []
        self.kept_ids: set[str] = set()
        self.kept_bytes = 0
        self._lock = threading.Lock()
        self._unscanned = bytearray()
        self._carry = b""
        self.seen: str | None = None  # the first known failure in the output so far
        self.last_line: str = ""  # the newest non-empty output line (progress shows it)

    def check(self) -> str | None:
        with self._lock:
            if self._unscanned and self.seen is None:
                chunk = self._carry + bytes(self._unscanned)
                self._unscanned.clear()
                self._carry = chunk[-8192:]
                finding = self.classifier.scan_blocks([chunk])
                if finding is not None:
                    self.seen = finding.id
            return self.seen

    def run(self) -> None:
        with open(self.log_path, "ab") as out:
            for raw in iter(lambda: self.stream.readline(self.MAX_LINE), b""):
                text = redact(raw.decode("utf-8", "replace"))
                if text.strip():
                    self.last_line = text.strip()[:200]
                data = text.encode("utf-8")
                if self.seen is None:  # once a failure is seen, nothing more to watch for
                    with self._lock:
                        self._unscanned += data
                    if len(self._unscanned) >= SCAN_BYTES:
                        self.check()
                if self.head_left >= len(data) and not self.tail:
                    self.head_left -= len(data)
                    out.write(data)
                    out.flush()
                    continue
                self.tail.append(data)
                self.tail_bytes += len(data)
                while self.tail_bytes > LOG_TAIL_BYTES:
                    old = self.tail.popleft()
                    self.tail_bytes -= len(old)
                    self.cut_bytes += len(old)
                    self.cut_scan += old
                    if len(self.cut_scan) >= SCAN_BYTES:
                        self._keep_failures()
            self._keep_failures()
            if self.cut_bytes:
                out.write(
                    f"[watcher: {self.cut_bytes} bytes of output cut here; the lines around "
                    "known failures in them follow]\n".encode()
                )
                out.writelines(self.kept)
                out.write(b"[watcher: end of the cut]\n")
            out.writelines(self.tail)
        self.stream.close()

    def _keep_failures(self) -> None:
        """Keep, from the cut part, the lines around each family's first match."""
        data, self.cut_scan = bytes(self.cut_scan), self.cut_scan[-4096:]
        finding = self.classifier.scan_blocks([data]) if data else None
        if finding is None or finding.id in self.kept_ids:
            return
        lines = data.split(b"\n")
        i = finding.line_no - 1
        block = b"\n".join(lines[max(0, i - 3) : i + 6])[:16384] + b"\n"
        if self.kept_bytes + len(block) <= LOG_KEPT_BYTES:
            self.kept.append(block)
            self.kept_ids.add(finding.id)
            self.kept_bytes += len(block)
