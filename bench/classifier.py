"""Classifier throughput (MB/s) and peak memory on a generated 1 GB engine log.

    python bench/classifier.py [--size-mb 1024]

The log is generated in a temporary folder (deleted afterwards): realistic SGLang-style lines,
with no failure at all (every family scans the whole file), one failure line at the very end,
and a pathological log where every line holds a family's keyword (the regex runs on each). Peak memory is the scanning child
process's maximum resident set size, so a classifier that read the whole log would show ~1 GB.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINES = [
    "[2026-11-30 12:00:{s:02d} TP0] Decode batch. #running-req: 12, #token: 40960, "
    "token usage: 0.41, gen throughput (token/s): 612.33, #queue-req: 0",
    "[2026-11-30 12:00:{s:02d} TP0] Prefill batch. #new-seq: 1, #new-token: 512, "
    "#cached-token: 1024, cache hit rate: 66.67%, token usage: 0.40, #running-req: 11",
    'INFO:     127.0.0.1:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "[2026-11-30 12:00:{s:02d} TP0] Load weight end. type=Qwen3NextForCausalLM, "
    "dtype=torch.bfloat16, avail mem=5.12 GB, mem usage=17.80 GB.",
]

SCAN = """
import resource, sys, time
sys.path.insert(0, sys.argv[2])
from watcher.classify import Classifier
c = Classifier()
t = time.perf_counter()
f = c.scan(sys.argv[1])
dt = time.perf_counter() - t
print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, f.id if f else "-")
"""


DENSE = "[2026-11-30 12:00:{s:02d} TP0] Memory pool end. avail mem=5.12 GB, not found in cache"


def generate(path: Path, size: int, tail: str | None, lines=LINES) -> None:
    block = "".join(lines[i % len(lines)].format(s=i % 60) + "\n" for i in range(4000))
    data = block.encode()
    with open(path, "wb") as f:
        written = 0
        while written < size:
            f.write(data)
            written += len(data)
        if tail:
            f.write(tail.encode() + b"\n")


def scan(path: Path) -> tuple[float, int, str]:
    out = subprocess.run(
        [sys.executable, "-c", SCAN, str(path), str(ROOT)], capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(out.stderr)
    dt, rss_kib, found = out.stdout.split()
    return float(dt), int(rss_kib), found


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size-mb", type=int, default=1024)
    a = p.parse_args()
    size = a.size_mb * 1024 * 1024
    print(f"{'case':<28} {'size MB':>8} {'seconds':>8} {'MB/s':>8} {'peak RSS MiB':>13}  found")
    with tempfile.TemporaryDirectory(prefix="watcher-bench-") as tmp:
        log = Path(tmp) / "engine.log"
        for case, tail, lines in (
            ("no failure", None, LINES),
            ("cuda-oom on the last line", "torch.OutOfMemoryError: CUDA out of memory.", LINES),
            (
                "marlin-tile-n on last line",
                "size_n = 96 is not divisible by tile_n_size = 64",
                LINES,
            ),
            ("keyword on every line", None, [DENSE]),
        ):
            generate(log, size, tail, lines)
            mb = os.path.getsize(log) / 1e6
            dt, rss, found = scan(log)
            print(f"{case:<28} {mb:>8.0f} {dt:>8.2f} {mb / dt:>8.1f} {rss / 1024:>13.1f}  {found}")
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(this driver process: {base:.1f} MiB peak RSS; the scans ran in child processes)")


if __name__ == "__main__":
    main()
