"""Status-site build time and output size for N days of history (bench/history.py seeds it).

    python bench/site_build.py [--days 365] [--repeat 3]

bench/history.py compares one year against five side by side; this prints what one build writes.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "bench"))

from history import seeded_copy  # noqa: E402

from watcher.config.load import load_config  # noqa: E402
from watcher.publish.site import build_site  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="watcher-bench-site-"))
    try:
        path, counts = seeded_copy(args.days, tmp)
        cfg = load_config(path)
        seed_s = counts["seed_s"]
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
            ("checks / observations", f"{counts['checks']:.0f} / {counts['observations']:.0f}"),
            ("events / smoke runs", f"{counts['events']:.0f} / {counts['smoke_runs']:.0f}"),
            ("database size", f"{db_mib:.1f} MiB (seeded once in {seed_s:.1f} s, cached)"),
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
