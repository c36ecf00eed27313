"""Detection latency: the time from a change on (fake) GitHub to the page being rewritten.

Runs `watcher serve` (a real subprocess) against the fake GitHub at a scaled-down interval, then
again and again: waits a random part of an interval, changes something upstream, and times until
the page on disk says so. Two kinds of change: a pull request's title (seen through the
repository events feed) and a push to a watched file (seen through the head compare).

A change lands at a uniformly random moment of the interval I and is seen by the next cycle, so
latency = U(0, I) + the cycle's own time c: mean I/2 + c, worst I + c. The bench measures c and
the latencies at the scaled interval and prints the model at 60 s (serve's default) and at
30 min (the default before issue 23). GitHub's events feed may lag 30 s to 6 h (documented); the
fake's does not, so the events path here is the lower bound, the head path is what GitHub gives.

    python bench/detection_latency.py [--interval 2] [--trials 12]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from watcher.fakes.github import FakeGitHub  # noqa: E402

FILE = "src/kernel.cu"


def wait_for(path: Path, text: str, timeout: float) -> float | None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if text in path.read_text():
                return time.monotonic()
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--trials", type=int, default=12)
    args = parser.parse_args()
    rng = random.Random(23)
    tmp = Path(tempfile.mkdtemp(prefix="watcher-latency-"))
    with FakeGitHub() as gh:
        gh.add_commit(
            "up/engine", message="init", date="2026-01-01T00:00:00Z", contents={FILE: "tile 0\n"}
        )
        gh.add_pull("up/engine", 5, title="Fix the loader pad (take 0)")
        text = (
            f'[watcher]\ngithub_api_url = "{gh.url}"\ninterval = "{args.interval}s"\n'
            'jitter = "0s"\n'
            '[[item]]\nid = "fix"\nrepo = "up/engine"\nkind = "pull"\nnumber = 5\n'
            f'[[item]]\nid = "guard"\nrepo = "up/engine"\nkind = "code"\npaths = ["{FILE}"]\n'
            'present = ["tile 0"]\n'
            '[[blocker]]\nid = "b"\ntitle = "Loader pad"\nitems = ["fix", "guard"]\n'
            '[[page]]\nid = "p"\ntitle = "P"\noutput = "P.md"\nblockers = ["b"]\n'
        )
        (tmp / "watch.toml").write_text(text)
        page = tmp / "P.md"
        env = dict(os.environ, GITHUB_TOKEN="test-token")
        log = open(tmp / "serve.log", "w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "watcher", "serve", "--config", str(tmp / "watch.toml")],
            cwd=tmp,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        results: dict[str, list[float]] = {"title (events feed)": [], "watched file (head)": []}
        try:
            assert wait_for(page, "take 0", 60), "serve wrote no page"
            for k in range(1, args.trials + 1):
                time.sleep(rng.uniform(0, args.interval))
                if k % 2:
                    marker = f"take {k}"
                    gh.update("up/engine", 5, title=f"Fix the loader pad ({marker})")
                    kind = "title (events feed)"
                else:
                    state = "absent" if (k // 2) % 2 else "present"
                    body = "tile 1\n" if state == "absent" else "tile 0\n"
                    gh.add_commit(
                        "up/engine",
                        message=f"kernel {k}",
                        date=f"2026-01-{1 + k:02d}T00:00:00Z",
                        contents={FILE: body},
                    )
                    marker = "the fix is not in" if state == "absent" else "| the fix is in "
                    kind = "watched file (head)"
                t0 = time.monotonic()
                t1 = wait_for(page, marker, 30 * args.interval + 30)
                if t1 is None:
                    print(f"trial {k}: never seen ({marker})", file=sys.stderr)
                    continue
                results[kind].append(t1 - t0)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
            log.close()
        cycles = [
            float(line.rsplit(", ", 1)[1].split(" s")[0])
            for line in (tmp / "serve.log").read_text().splitlines()
            if "requests," in line and " s" in line.rsplit(", ", 1)[-1]
        ]
    c = statistics.median(cycles) if cycles else float("nan")
    print(
        f"interval {args.interval:g} s (scaled), cycle time c median {c:.3f} s ({len(cycles)} cycles)"
    )
    print("| change | trials | mean | max | model mean I/2 + c | model max I + c |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, xs in results.items():
        if xs:
            print(
                f"| {kind} | {len(xs)} | {statistics.mean(xs):.2f} s | {max(xs):.2f} s "
                f"| {args.interval / 2 + c:.2f} s | {args.interval + c:.2f} s |"
            )
    for interval in (60.0, 1800.0):
        print(
            f"at I = {interval:g} s: mean {interval / 2 + c:.1f} s, worst {interval + c:.1f} s"
            " (+ Actions' cron delay when run from the Actions template)"
        )


if __name__ == "__main__":
    main()
