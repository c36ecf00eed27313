"""What a scheduled cycle costs: time, requests and rate limit, cold and steady; and the lock.

    python bench/serve_cycles.py [--cycles 6]

Runs the shipped watch.toml (its items, blockers and pages) against the fake GitHub seeded with
`real_threads`, through `locked_cycle` (what every `serve` tick and `check-now` run), in a
temporary folder. The steady-state rows show what the GITHUB_TOKEN budget (1,000 requests per
hour on Actions) really pays for a quiet cycle. Prints a small table and asserts that every cycle
after the first spends 0 rate limit.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from watcher.config.load import load_config  # noqa: E402
from watcher.fakes.github import FakeGitHub  # noqa: E402
from watcher.fakes.scenarios import load, real_threads  # noqa: E402
from watcher.loop.lock import cycle_lock  # noqa: E402
from watcher.loop.schedule import locked_cycle  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--lock-rounds", type=int, default=2000)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="watcher-bench-"))
    try:
        shutil.copy(ROOT / "watch.toml", tmp / "watch.toml")
        cfg = load_config(tmp / "watch.toml")
        with FakeGitHub() as gh:
            real_threads(gh)
            load(gh, "sglang_code")  # the files the shipped list's code items read
            os.environ["GITHUB_API_URL"] = gh.url
            os.environ["GITHUB_TOKEN"] = "test-token"
            print(f"{'cycle':>5}  {'requests':>8}  {'304s':>5}  {'rate spent':>10}  {'seconds':>7}")
            spent = []
            for n in range(1, args.cycles + 1):
                before = gh.rate_remaining
                started = time.perf_counter()
                report = locked_cycle(cfg, "bench")
                took = time.perf_counter() - started
                s = report.stats
                spent.append(before - gh.rate_remaining)
                print(
                    f"{n:>5}  {s.get('requests', 0):>8}  {s.get('not_modified', 0):>5}  "
                    f"{spent[-1]:>10}  {took:>7.3f}"
                )
            # nothing changed upstream after the first cycle: every later one must cost nothing
            assert spent[0] > 0 and not any(spent[1:]), f"a quiet cycle spent rate limit: {spent}"
            print("quiet cycles spent 0 rate limit (asserted)")

        data = tmp / "lockbench"
        times = []
        for _ in range(args.lock_rounds):
            t0 = time.perf_counter()
            with cycle_lock(data, 0, "bench"):
                pass
            times.append(time.perf_counter() - t0)
        print()
        print(
            f"{'lock acquire+release':<22}  median {statistics.median(times) * 1e6:.0f} us, "
            f"p99 {sorted(times)[int(len(times) * 0.99)] * 1e6:.0f} us "
            f"({args.lock_rounds} rounds, uncontended)"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
