"""Matrix benchmark: the guide's whole shelf (122 compose recipes) on four rigs and three hosts.

Builds a config with N recipes and a store with R runs spread over recipes, rigs and hosts, then
times `build_matrix` over the stored runs and the engines page's whole render (`page_text`),
medians of --repeat.

    python bench/matrix.py [--recipes 122] [--runs 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from watcher.config.load import load_config  # noqa: E402
from watcher.core.clock import iso
from watcher.judge.evaluate import evaluate  # noqa: E402
from watcher.publish.context import page_sources  # noqa: E402
from watcher.publish.matrix import build_matrix  # noqa: E402
from watcher.publish.page import page_text  # noqa: E402
from watcher.store.db import Store  # noqa: E402

NOW = datetime(2026, 12, 1, tzinfo=UTC)
GPU = {"name": "NVIDIA GeForce RTX 3090", "memory_mib": 24576, "compute_capability": "8.6"}


def config(n: int) -> str:
    engines = ["vllm"] * 74 + ["ik_llama.cpp"] * 15 + ["llama.cpp"] * 14 + ["sglang"] * 19
    out = ['[watcher]\ndata_dir = "data"\n']
    for i in range(n):
        gpus = (1, 2, 4)[i % 3]
        out.append(
            f'[[recipe]]\nid = "r{i:03d}"\nengine = "{engines[i % len(engines)]}"\n'
            f'model = "/models/m{i % 7}"\nquant = "q{i % 5}"\ncommand = ["true"]\n'
            f"[recipe.hardware]\ngpu_count = {gpus}\n"
        )
    ids = ", ".join(f'"r{i:03d}"' for i in range(n))
    out.append(
        '[[page]]\nid = "engines"\ntitle = "Engines"\noutput = "docs/engines/README.md"\n'
        f'template = "matrix.md.j2"\nrecipes = [{ids}]\n'
    )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipes", type=int, default=122)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "watch.toml").write_text(config(a.recipes))
        cfg = load_config(Path(d) / "watch.toml")
        store = Store(cfg.db_path)
        for k in range(a.runs):
            at = NOW - timedelta(hours=rng.randrange(24 * 60))
            store.add_smoke_run(
                {
                    "run_id": f"run-{k:05d}",
                    "recipe": f"r{rng.randrange(a.recipes):03d}",
                    "outcome": rng.choice(["passed", "passed", "failed", "timeout", "error"]),
                    "hardware": {"gpus": [GPU] * rng.choice([1, 2, 4, 8]), "matches_target": True},
                    "metrics": {"decode_tokens_per_s": rng.uniform(10, 90), "accept_length": 2.1},
                    "host": rng.choice(["box-a", "box-b", "box-c"]),
                    "started_at": iso(at),
                    "finished_at": iso(at + timedelta(minutes=9)),
                    "reason": "x",
                }
            )
        runs = store.smoke_runs()
        times = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            mx = build_matrix(cfg, runs, recipes=cfg.page("engines").recipes, now=NOW)
            times.append(time.perf_counter() - t)
        ev = evaluate(cfg, store.items(), store.evaluation_runs(), store.statuses(), NOW)
        page = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            text = page_text(
                cfg, cfg.page("engines"), ev, page_sources(store), [], None, None, None
            )
            page.append(time.perf_counter() - t)
        store.close()
    cells = sum(len(r["cells"]) for r in mx["rows"])
    print(
        f"{a.recipes} recipes x {len(mx['rigs'])} rigs = {cells} cells from {len(runs)} runs"
        f" ({len(mx['evidence'])} evidence entries)"
    )
    print(f"build_matrix: median {statistics.median(times) * 1000:.1f} ms")
    print(
        f"engines page render (page_text, its 200 newest runs): median"
        f" {statistics.median(page) * 1000:.1f} ms, {len(text)} chars"
    )


if __name__ == "__main__":
    main()
