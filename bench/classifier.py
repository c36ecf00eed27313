"""Classifier throughput (MB/s) and peak memory, side by side with `grep -E -i` on the same file.

    python bench/classifier.py [--size-mb 128] [--repeat 3] [--before DIR]

`--before DIR` also scans with the watcher package found in DIR (e.g. `git archive main` unpacked),
interleaved with the others, so a change is measured before/after in the same run.

The log is generated in a temporary folder (deleted afterwards): realistic SGLang-style lines,
with no failure at all (every family scans the whole file), one failure line at the very end,
a log where every line holds a family's keyword, and one where every line holds all the words
of two families without matching either (the literal pass says "maybe" on every block). Each case is scanned by watcher with hyperscan, by its pure-Python fallback, and by
GNU grep with the built-in patterns (translated to ERE, `-i`, counting matching lines so it reads
the whole file like the classifier does). Peak memory is the scanning child process's maximum
resident set size, so a classifier that read the whole log would show the log's size.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
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
from watcher.smoke.classify import Classifier
c = Classifier(engine=sys.argv[3])
assert c.engine.name == sys.argv[3], c.engine.name
t = time.perf_counter()
f = c.scan(sys.argv[1])
dt = time.perf_counter() - t
print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, f.id if f else "-")
"""


DENSE = "[2026-11-30 12:00:{s:02d} TP0] Memory pool end. avail mem=5.12 GB, not found in cache"
# every literal of two families on every line, and still no match: their regexes run on every block
NEAR_MISS = (
    "[2026-11-30 12:00:{s:02d} TP0] Memory pool end. avail mem=5.12 GB, not found in cache; "
    "kv cache usage is fine, out of 12 models none is too small (NCCL ok, docker ok)"
)


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


def scan(path: Path, engine: str, root: Path = ROOT) -> tuple[float, int, str]:
    out = subprocess.run(
        [sys.executable, "-c", SCAN, str(path), str(root), engine], capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(out.stderr)
    dt, rss_kib, found = out.stdout.split()
    return float(dt), int(rss_kib), found


def grep_patterns() -> list[str]:
    """The built-in families as POSIX ERE for GNU grep: (?i) becomes -i, (?:...) a group."""
    from watcher.config.signatures import BUILTIN

    out = []
    for s in BUILTIN:
        p = s.pattern.replace("(?i)", "").replace("(?:", "(").replace(r"\d", "[0-9]")
        out.append(p)
    return out


GREP = """
import resource, subprocess, sys, time
t = time.perf_counter()
out = subprocess.run(sys.argv[1:], capture_output=True, text=True)
dt = time.perf_counter() - t
if out.returncode > 1:
    raise SystemExit(out.stderr)
print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, out.stdout.strip())
"""


def grep(path: Path) -> tuple[float, int, str]:
    """Seconds, peak RSS and matching-line count of `grep -E -i -c` with the same patterns."""
    args = ["grep", "-E", "-i", "-c", *(x for p in grep_patterns() for x in ("-e", p)), str(path)]
    out = subprocess.run([sys.executable, "-c", GREP, *args], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    dt, rss_kib, count = out.stdout.split()
    return float(dt), int(rss_kib), f"{count} lines"


def row(name: str, mb: float, runs: list[tuple[float, int, str]]) -> str:
    times = [r[0] for r in runs]
    med = statistics.median(times)
    return (
        f"  {name:<20} {med:>7.2f} {mb / med:>8.0f} {mb / max(times):>6.0f}–{mb / min(times):<6.0f}"
        f" {max(r[1] for r in runs) / 1024:>8.1f}  {runs[0][2]}"
    )


LABELS = {
    "hyperscan": "watcher, hyperscan",
    "python": "watcher, fallback",
    "grep": "grep -E -i",
    "before": "before, hyperscan",
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size-mb", type=int, default=128)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--before", type=Path, help="also scan with the watcher package in this folder")
    a = p.parse_args()
    size = a.size_mb * 1024 * 1024
    ratios = []
    print(f"median of {a.repeat} runs; MB/s median and min–max; peak RSS of the scanning process")
    print(f"  {'scanner':<20} {'seconds':>7} {'MB/s':>8} {'range':^13} {'RSS MiB':>8}  found")
    with tempfile.TemporaryDirectory(prefix="watcher-bench-") as tmp:
        log = Path(tmp) / "engine.log"
        for case, tail, lines, part in (
            ("no failure", None, LINES, 1),
            ("cuda-oom on the last line", "torch.OutOfMemoryError: CUDA out of memory.", LINES, 1),
            (
                "marlin-tile-n on the last line",
                "size_n = 96 is not divisible by tile_n_size = 64",
                LINES,
                1,
            ),
            ("a family keyword on every line", None, [DENSE], 1),
            ("near misses on every line", None, [NEAR_MISS], 8),  # slow for all: 1/8 the size
        ):
            generate(log, size // part, tail, lines)
            mb = os.path.getsize(log) / 1e6
            print(f"{case} ({mb:.0f} MB)")
            results = {}
            names = ["hyperscan", "python", "grep"] + (["before"] if a.before else [])
            for name in names:  # interleaved: one of each, repeat
                results[name] = []
            for _ in range(a.repeat):
                for name in results:
                    results[name].append(
                        grep(log)
                        if name == "grep"
                        else scan(log, "hyperscan", a.before)
                        if name == "before"
                        else scan(log, name)
                    )
            for name, runs in results.items():
                print(row(LABELS[name], mb, runs))
            gr = [r[0] for r in results["grep"]]
            for name in ("hyperscan", "before") if a.before else ("hyperscan",):
                # ratio of medians, and min/median/max over the runs paired by repetition
                paired = sorted(w[0] / g for w, g in zip(results[name], gr, strict=True))
                med = statistics.median(r[0] for r in results[name]) / statistics.median(gr)
                print(
                    f"  time {LABELS[name]} / grep: {med:.2f}"
                    f" (paired runs {paired[0]:.2f}–{statistics.median(paired):.2f}–{paired[-1]:.2f})"
                )
                if name == "hyperscan":
                    ratios.append((case, med))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(this driver process: {base:.1f} MiB peak RSS; the scans ran in child processes)")
    worst = max(r for _, r in ratios)
    print(
        f"worst time ratio watcher/grep: {worst:.2f} ({'at most' if worst <= 1 else 'ABOVE'} 1.0)"
    )


if __name__ == "__main__":
    main()
