"""Does `serve` stay flat on a busy repository? RSS, cycle time and the data folder over many cycles.

The shipped watch.toml runs against the fake GitHub seeded with the real threads (and the files its
code items read), which moves before every cycle the way a busy upstream does while nothing
watched changes: a star and a push to a file nobody watches, in every repository (`churn`). The
cycles run in one worker process, as a `serve` process runs them (`locked_cycle`, one client a
cycle, pages and site written), so its RSS is the cycle's and not the fake's. Issue 33 item 12
measured the old code at RSS 59 -> 89 MiB and cycle time 0.24 -> 0.52 s over 400 s (~200 cycles),
still rising; the data folder grew 0.9 -> 2.9 MiB.

    python bench/serve_growth.py [--cycles 1000] [--minutes 10] [--tree DIR]

`--tree DIR` runs the cycles with another checkout's code (e.g. `git archive` of an older commit),
against the same kind of fake, for a before/after.

Prints the first and last 100 cycles' means (RSS, cycle seconds), a line every 100 cycles, and
the data folder's size; stops early at --minutes and says how many cycles ran.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from watcher.fakes.github import FakeGitHub  # noqa: E402
from watcher.fakes.scenarios import load, real_threads  # noqa: E402

WORKER = r"""
import json, sys, time
from pathlib import Path
from watcher.config.load import load_config
from watcher.github.client import GitHubClient
from watcher.github.pacing import Budget
from watcher.loop.schedule import locked_cycle
cfg = load_config(Path(sys.argv[1]))
budget = Budget(points_per_minute=10**9, content_per_minute=10**9)  # the bench's pace, not GitHub's
def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
for line in sys.stdin:
    client = GitHubClient(cfg.settings.github_api_url, token="test-token", budget=budget)
    t0 = time.perf_counter()
    report = locked_cycle(cfg, "serve", client=client, no_smoke=True)
    took = time.perf_counter() - t0
    client.close()
    print(json.dumps({"s": took, "rss": rss_kib(), "errors": len(report.item_errors),
                      "requests": report.stats.get("requests", 0)}), flush=True)
"""


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--minutes", type=float, default=10.0, help="stop early after this long")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the code tree that runs the cycles")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="watcher-growth-"))
    rows: list[dict] = []
    sizes: dict[int, int] = {}
    try:
        with FakeGitHub() as gh:
            real_threads(gh)
            load(gh, "sglang_code")
            text = (args.tree / "watch.toml").read_text()  # each tree's own shipped list
            text = text.replace("[watcher]\n", f'[watcher]\ngithub_api_url = "{gh.url}"\n', 1)
            (tmp / "watch.toml").write_text(text)
            repos = sorted(r.full_name for r in gh._repos.values())
            tree = args.tree.resolve()
            env = dict(os.environ, PYTHONPATH=str(tree), GITHUB_TOKEN="test-token")
            worker = subprocess.Popen(
                [sys.executable, "-c", WORKER, str(tmp / "watch.toml")],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp, env=env,
            )  # fmt: skip
            end = time.monotonic() + args.minutes * 60
            try:
                for n in range(1, args.cycles + 1):
                    for repo in repos:  # a busy upstream: a star and an unwatched push
                        gh.churn(repo)
                    gh.reset_requests()
                    gh.rate_remaining = gh.rate_limit  # 1,000 cycles outspend one hour's 5,000
                    worker.stdin.write("\n")
                    worker.stdin.flush()
                    rows.append(json.loads(worker.stdout.readline()))
                    if n in (1, 100) or n % 100 == 0:
                        sizes[n] = folder_size(tmp / "data")
                        r = rows[-1]
                        print(
                            f"cycle {n:>5}: RSS {r['rss'] / 1024:6.1f} MiB, {r['s']:.3f} s,"
                            f" {r['requests']} requests, data {sizes[n] / 2**20:.2f} MiB",
                            flush=True,
                        )
                    if time.monotonic() > end:
                        break
            finally:
                worker.stdin.close()
                worker.wait(timeout=60)
        n = len(rows)
        sizes[n] = folder_size(tmp / "data")
        k = min(100, n // 2)
        first, last = rows[:k], rows[-k:]

        def mean(rs: list[dict], key: str) -> float:
            return statistics.mean(r[key] for r in rs)

        print(f"\n{n} cycles ({'all' if n == args.cycles else 'stopped at --minutes'}),"
              f" {sum(r['errors'] for r in rows)} item errors in all")  # fmt: skip
        print(f"first {k}: RSS {mean(first, 'rss') / 1024:.1f} MiB, {mean(first, 's'):.3f} s")
        print(f"last  {k}: RSS {mean(last, 'rss') / 1024:.1f} MiB, {mean(last, 's'):.3f} s")
        print(
            f"data folder: {sizes[min(sizes)] / 2**20:.2f} MiB after cycle {min(sizes)},"
            f" {sizes[100] / 2**20 if 100 in sizes else float('nan'):.2f} MiB after 100,"
            f" {sizes[n] / 2**20:.2f} MiB after {n}"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
