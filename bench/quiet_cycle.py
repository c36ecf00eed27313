"""The shipped watch list's quiet cycle on a moving GitHub: today against now, side by side.

The fake GitHub is seeded with the real threads the shipped `watch.toml` tracks (and the files
its code items read); between cycles every repository moves the way real GitHub does while
nothing watched changes (`churn`: a star and a push to a file nobody watches). Each code tree
(`--today DIR`, a checkout before issue 23, and this one) runs its cycles in its own worker
process against the same fake. Prints, per cycle after the first: requests, answers of 200 (the
rate-limit spend when authorised), 304s.

    python bench/quiet_cycle.py --today /tmp/watcher-before [--cycles 5]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cost_per_cycle import Worker  # noqa: E402

from watcher.fakes.github import FakeGitHub  # noqa: E402
from watcher.fakes.scenarios import load, real_threads  # noqa: E402


def run(tree: Path, cycles: int, tmp: Path) -> list[tuple[int, int, int]]:
    with FakeGitHub() as gh:
        real_threads(gh)
        load(gh, "sglang_code")
        folder = tmp / tree.name
        folder.mkdir()
        text = (tree / "watch.toml").read_text()  # each tree's own shipped list
        text = text.replace("[watcher]\n", f'[watcher]\ngithub_api_url = "{gh.url}"\n', 1)
        (folder / "watch.toml").write_text(text)
        repos = sorted(r.full_name for r in gh._repos.values())
        worker = Worker(tree, folder / "watch.toml")
        rows = []
        try:
            for _ in range(cycles):
                gh.reset_requests()
                worker.cycle()
                statuses = [r.status for r in gh.requests]
                rows.append((len(statuses), statuses.count(200), statuses.count(304)))
                for repo in repos:
                    gh.churn(repo)
        finally:
            worker.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--today", type=Path, required=True)
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="watcher-quiet-"))
    try:
        today = run(args.today.resolve(), args.cycles, tmp)
        now = run(ROOT, args.cycles, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("| cycle | today: requests (200 / 304) | now: requests (200 / 304) |")
    print("|---:|---:|---:|")
    for n, (a, b) in enumerate(zip(today, now, strict=True), 1):
        print(f"| {n} | {a[0]} ({a[1]} / {a[2]}) | {b[0]} ({b[1]} / {b[2]}) |")


if __name__ == "__main__":
    main()
