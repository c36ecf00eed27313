"""Backtest benchmark: the default rules over five months of real SGLang history.

The replay fake answers from tests/history (SGLang 2025-12-01 -> 2026-04-30, 4,842 commits).
`watcher backtest` replays every SGLang commit and code item of the shipped watch.toml since
2025-12-01, as of the end of each month, first with an empty ETag cache, then again through the
store's cache. Prints requests, 304s and wall time of each run (medians of --repeat), and how
much of it is the client's back-off before retrying a 503 (what the record cannot answer: since
issue 23 such an answer says so in a header and is not retried, and answers are kept in memory
for the run, as `watcher backtest` does).

    python bench/backtest.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from watcher.config.load import load_config  # noqa: E402
from watcher.fakes.replay import ReplayGitHub  # noqa: E402
from watcher.github.client import GitHubClient  # noqa: E402
from watcher.poll.backtest import ANSWER_CACHE, run_backtest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SINCE = "2025-12-01"
AS_OF = ("2025-12-31", "2026-01-31", "2026-02-28", "2026-03-31", "2026-04-30")


def one_round(gh: ReplayGitHub) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(ROOT / "watch.toml", Path(tmp) / "watch.toml")
        cfg = load_config(Path(tmp) / "watch.toml")
        ids = tuple(
            i.id
            for i in cfg.items
            if i.repo == "sgl-project/sglang" and i.kind in ("commits", "code")
        )
        runs = []
        for _ in ("cold", "warm"):  # the second run reuses the store's ETag cache
            slept = []

            def sleep(seconds: float, slept=slept) -> None:
                slept.append(seconds)
                time.sleep(seconds)

            with GitHubClient(
                gh.url, token="test-token", sleep=sleep, answer_cache=ANSWER_CACHE
            ) as client:
                doc = run_backtest(cfg, ids, SINCE, AS_OF, show_unmatched=True, client=client)
            runs.append(
                {
                    "items": len(ids),
                    "requests": doc["requests"],
                    "not_modified": doc["not_modified"],
                    "seconds": doc["seconds"],
                    "backoff": sum(slept),
                    "unknown": sum(
                        d["state"] == "unknown" for i in doc["items"] for d in i["dates"]
                    ),
                    "cells": sum(len(i["dates"]) for i in doc["items"]),
                }
            )
        return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with ReplayGitHub(repos=["sgl-project/sglang"]) as gh:
        rounds = [one_round(gh) for _ in range(args.repeat)]
    for n, label in enumerate(("cold", "warm")):
        runs = [r[n] for r in rounds]
        first = runs[0]
        times = sorted(r["seconds"] for r in runs)
        backoff = statistics.median(r["backoff"] for r in runs)
        print(
            f"{label}: {first['items']} SGLang items x {len(AS_OF)} dates since {SINCE}: "
            f"{first['requests']} requests, {first['not_modified']} answered 304, "
            f"{first['unknown']} of {first['cells']} answers unknown to the record; "
            f"wall median {statistics.median(times):.2f} s ({times[0]:.2f}-{times[-1]:.2f}), "
            f"of which {backoff:.1f} s the client's back-off before retrying a 503"
        )


if __name__ == "__main__":
    main()
