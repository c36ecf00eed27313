"""Status-site build time and output size for one year of history.

One year = hourly checks of 10 items (one observation per item per check, the worst case: the
cycle stores one only on a change or an error), an event on every state change and on
a new commit in a commit stream (daily), one cycle row per
check, and a smoke run every day. Prints a small table.

    python bench/site_build.py [--days 365] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from watcher.config import load_config  # noqa: E402
from watcher.cycle import run_cycle  # noqa: E402
from watcher.site import build_site  # noqa: E402
from watcher.store import Store, iso  # noqa: E402

EXTRA_ITEMS = """
[[item]]
id = "bench-issue-a"
repo = "vllm-project/vllm"
kind = "issue"
number = 50001
label = "bench: an extra issue"

[[item]]
id = "bench-pull-b"
repo = "sgl-project/sglang"
kind = "pull"
number = 50002
label = "bench: an extra pull request"
"""
STATES = {
    "issue": ["open", "open", "completed"],
    "pull": ["open", "draft", "open", "merged"],
    "commits": ["no-match", "matched"],
    "releases": ["v0.5.4", "v0.5.5", "v0.5.6", "v0.5.7"],
}


def make_history(cfg, days: int) -> dict[str, int]:
    start = datetime(2025, 12, 1, tzinfo=UTC)
    run_cycle(cfg, offline=True, now=start)
    store = Store(cfg.db_path)
    counts = {"checks": 0, "observations": 0, "events": 0, "smoke_runs": 0}
    try:
        with store.transaction():
            hours = days * 24
            for h in range(hours):
                at = iso(start + timedelta(hours=h))
                cycle_id = store.start_cycle(at, "poll")
                for n, item in enumerate(cfg.items):
                    states = STATES[item.kind]
                    # each item changes state a few times a year, at its own pace
                    idx = min(len(states) - 1, (h * len(states)) // (hours + 1 + 97 * n))
                    state = states[idx]
                    error = "HTTP 502 from GitHub" if (h + 13 * n) % 500 == 0 else None
                    title = f"{item.label} (upstream title {idx})"
                    store.add_observation(
                        item.id,
                        cycle_id,
                        at,
                        None if error else state,
                        title,
                        None if error else f"{item.id}-{idx}",
                        {"superseded_by": None, "in_release": None, "details": {}},
                        error,
                    )
                    counts["observations"] += 1
                    prev = (
                        states[
                            min(len(states) - 1, ((h - 1) * len(states)) // (hours + 1 + 97 * n))
                        ]
                        if h
                        else None
                    )
                    if item.kind == "commits" and h % 24 == n:  # a new matching commit daily
                        store.add_event(
                            at, cycle_id, "item", item.id, state, state, f"{title} changed: {state}"
                        )
                        counts["events"] += 1
                    if prev != state:
                        store.add_event(
                            at, cycle_id, "item", item.id, prev, state, f"{title}: {prev} → {state}"
                        )
                        counts["events"] += 1
                    store.upsert_item(
                        {
                            "id": item.id,
                            "repo": item.repo,
                            "kind": item.kind,
                            "number": item.number,
                            "label": item.label,
                            "title": title,
                            "state": state,
                            "url": f"https://github.com/{item.repo}",
                            "details": {},
                            "fingerprint": f"{item.id}-{idx}",
                            "stale": False,
                            "checked_at": at,
                            "changed_at": at,
                            "updated_at": at,
                        }
                    )
                store.finish_cycle(cycle_id, finished_at=at, items=len(cfg.items), changes=0)
                counts["checks"] += 1
                if h % 24 == 6:
                    day = h // 24
                    recipe = cfg.recipes[day % len(cfg.recipes)].id
                    passed = day > days * 0.8
                    store.add_smoke_run(
                        {
                            "run_id": f"bench-{day:04d}",
                            "recipe": recipe,
                            "outcome": "passed" if passed else "failed",
                            "signature": None if passed else "marlin-tile-n",
                            "blockers_reproduced": [] if passed else ["marlin-pad"],
                            "reason": "all checks passed" if passed else "crashed at startup",
                            "hardware": {
                                "gpus": [
                                    {
                                        "name": "NVIDIA GeForce RTX 3090",
                                        "memory_mib": 24576,
                                        "compute_capability": "8.6",
                                    }
                                ],
                                "matches_target": True,
                            },
                            "engine_version": "sglang 0.5.6",
                            "metrics": {
                                "startup_s": 90.0 + day % 7,
                                "ttft_s": 0.35,
                                "decode_tokens_per_s": 28.0 + (day % 30) / 3,
                                "accept_length": 1.5 + (day % 10) / 20
                                if recipe == "sglang-eagle-tp1"
                                else None,
                            },
                            "log_path": f"data/runs/bench-{day:04d}.log",
                            "started_at": at,
                            "finished_at": at,
                            "stage_reached": "passed" if passed else "launch",
                            "excerpt": ""
                            if passed
                            else "RuntimeError: size_n = 96 is not divisible",
                        }
                    )
                    counts["smoke_runs"] += 1
    finally:
        store.close()
    run_cycle(cfg, offline=True, now=start + timedelta(hours=days * 24))
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="watcher-bench-site-"))
    try:
        (tmp / "watch.toml").write_text(
            (REPO / "watch.toml").read_text(encoding="utf-8") + EXTRA_ITEMS, encoding="utf-8"
        )
        cfg = load_config(tmp / "watch.toml")
        t = time.perf_counter()
        counts = make_history(cfg, args.days)
        seed_s = time.perf_counter() - t
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            report = build_site(cfg)
            times.append(time.perf_counter() - t)
        files = sorted(cfg.site_dir.rglob("*"))
        sizes = {str(p.relative_to(cfg.site_dir)): p.stat().st_size for p in files if p.is_file()}
        db_mib = cfg.db_path.stat().st_size / 2**20
        rows = [
            ("history", f"{args.days} days, {len(cfg.items)} items, hourly checks"),
            ("checks / observations", f"{counts['checks']} / {counts['observations']}"),
            ("events / smoke runs", f"{counts['events']} / {counts['smoke_runs']}"),
            ("database size", f"{db_mib:.1f} MiB (seeded in {seed_s:.1f} s)"),
            ("build time (median)", f"{statistics.median(times):.2f} s of {args.repeat}"),
            ("build time (min/max)", f"{min(times):.2f} / {max(times):.2f} s"),
            ("files written", str(len(report.files))),
            ("output size", f"{sum(sizes.values()) / 1024:.0f} KiB"),
            ("index.html", f"{sizes['index.html'] / 1024:.0f} KiB"),
            ("feed.xml", f"{sizes['feed.xml'] / 1024:.0f} KiB"),
            (
                "largest item page",
                f"{max(v for k, v in sizes.items() if k.startswith('item/')) / 1024:.0f} KiB",
            ),
            ("status.json", f"{sizes['status.json'] / 1024:.0f} KiB"),
        ]
        width = max(len(r[0]) for r in rows)
        print(f"{'measure':<{width}}  value")
        print(f"{'-' * width}  {'-' * 40}")
        for k, v in rows:
            print(f"{k:<{width}}  {v}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
