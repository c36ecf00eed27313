"""Seeded history for the benchmarks: N days of hourly checks of every item, cached on disk.

One day = 24 hourly checks of the shipped watch list plus two extra items (one observation per
item per check, the worst case: the cycle stores one only on a change or an error), an event on
every state change and on a new commit in a commit stream (daily), one cycle row per check, and a
smoke run every day. Seeding five years takes about a minute here, so `seeded_copy` keeps one
database per length under bench/results/ (gitignored) and hands out copies.
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

from watcher.config.load import load_config  # noqa: E402
from watcher.core.clock import iso  # noqa: E402
from watcher.loop.cycle import run_cycle  # noqa: E402
from watcher.store.db import Store  # noqa: E402

RESULTS = REPO / "bench" / "results"
SEED_VERSION = "2"  # bump when make_history changes, so cached databases are seeded again

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
    "code": ["absent", "present"],
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


def write_config(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "watch.toml"
    path.write_text(
        (REPO / "watch.toml").read_text(encoding="utf-8") + EXTRA_ITEMS, encoding="utf-8"
    )
    return path


def seeded_copy(days: int, dest: Path) -> tuple[Path, dict]:
    """A fresh copy of the cached `days`-long history in `dest`; seeds the cache when missing.

    Returns the copy's watch.toml and what the seeding wrote (rows and seconds).
    """
    cache = RESULTS / f"history-{days}d-v{SEED_VERSION}"
    marker = cache / "counts.txt"
    if not marker.exists():
        shutil.rmtree(cache, ignore_errors=True)
        cfg = load_config(write_config(cache))
        t = time.perf_counter()
        counts = make_history(cfg, days)
        counts["seed_s"] = round(time.perf_counter() - t, 1)
        marker.write_text(" ".join(f"{k}={v}" for k, v in counts.items()))
    Store(cache / "data" / "watcher.db").close()  # a cache seeded by older code migrates once
    counts = {k: float(v) for k, v in (kv.split("=") for kv in marker.read_text().split())}
    path = write_config(dest)
    (dest / "data").mkdir(exist_ok=True)
    shutil.copy(cache / "data" / "watcher.db", dest / "data" / "watcher.db")
    return path, counts


COMMANDS = (
    ("build-site", ["build-site"]),
    ("check-now --offline", ["check-now", "--offline"]),
    ("status", ["status"]),
    ("explain", ["explain"]),
)


def time_commands(paths: dict[int, Path], repeat: int) -> dict[tuple[str, int], list[float]]:
    """Seconds per run of each command on each database, in this process, interleaved (short,
    long, short, ...) so that a busy moment of a shared machine hits both sides alike.

    Start-up is not counted here (bench/startup.py measures it).
    """
    from click.testing import CliRunner

    from watcher.cli import cli

    runner = CliRunner()
    out: dict[tuple[str, int], list[float]] = {}
    for name, args in COMMANDS:
        for n in range(repeat + 1):
            for days, path in paths.items():
                t = time.perf_counter()
                result = runner.invoke(cli, [*args, "--config", str(path)], catch_exceptions=False)
                took = time.perf_counter() - t
                if result.exit_code:
                    raise SystemExit(f"{name}: exit {result.exit_code}: {result.output}")
                if n:  # the first run warms the process up (templates, the page cache)
                    out.setdefault((name, days), []).append(took)
    return out


def spread(times: list[float]) -> str:
    return f"{statistics.median(times):.3f} ({min(times):.3f}–{max(times):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description="1-year against 5-year history, side by side")
    ap.add_argument("--short-days", type=int, default=365)
    ap.add_argument("--long-days", type=int, default=5 * 365)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="watcher-bench-history-"))
    try:
        paths, sizes = {}, {}
        for days in (args.short_days, args.long_days):
            paths[days], counts = seeded_copy(days, tmp / f"{days}d")
            sizes[days] = (counts, (tmp / f"{days}d" / "data" / "watcher.db").stat().st_size)
        results = time_commands(paths, args.repeat)
        for days, (counts, size) in sizes.items():
            site = tmp / f"{days}d" / "site"
            out = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
            rows = sum(f.read_text().count("<tr>") for f in (site / "item").iterdir())
            print(
                f"{days} days: {counts['observations']:.0f} observations, {counts['events']:.0f}"
                f" events, {counts['smoke_runs']:.0f} smoke runs, {size / 2**20:.0f} MiB; the"
                f" site it builds: {out / 1024:.0f} KiB, {rows} history rows on item pages"
            )
        s, lg = args.short_days, args.long_days
        print(f"\nseconds, median (min–max) of {args.repeat} runs in one process, interleaved")
        print(f"{'command':<20} {f'{s} days':>22} {f'{lg} days':>22} {'ratio':>6}")
        for name, _ in COMMANDS:
            a, b = results[(name, s)], results[(name, lg)]
            ratio = statistics.median(b) / statistics.median(a)
            print(f"{name:<20} {spread(a):>22} {spread(b):>22} {ratio:>6.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
