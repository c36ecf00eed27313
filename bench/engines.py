"""A page for every engine: the guide's whole shelf (122 recipes over its 8 engines), 1,000 stored
runs, a 160-row tracker and the guide's engines README, rendered by `check-now --offline` with
`[engines]` (eight engine pages and the At-a-glance table) and without it (`pages = false`,
`glance = ""`), in turn; then every output read back and cross-checked (tests/kits/crosscheck).

Prints the pages made, the offline cycle's seconds both ways (medians of --repeat, min–max),
the sizes written, and the disagreements found between outputs (0 expected).

    python bench/engines.py [--runs 1000] [--rows 160] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from kits.crosscheck import disagreements, every_claim  # noqa: E402
from kits.enginekit import README  # noqa: E402

from watcher.config.load import load_config  # noqa: E402
from watcher.core.clock import iso  # noqa: E402
from watcher.loop.cycle import run_cycle  # noqa: E402
from watcher.store.db import Store  # noqa: E402

NOW = datetime(2026, 12, 1, tzinfo=UTC)
GPU = {"name": "NVIDIA GeForce RTX 3090", "memory_mib": 24576, "compute_capability": "8.6"}
SHELF = {  # the guide's engines and their compose counts (2026-08-22 head)
    "vllm": 74,
    "ik_llama.cpp": 15,
    "llama.cpp": 14,
    "beellama": 10,
    "llamacpp-club3090": 5,
    "sglang": 2,
    "vllm-omni": 1,
    "vllm-lmcache": 1,
}
REPOS = ["vllm-project/vllm", "sgl-project/sglang", "ggml-org/llama.cpp"] + [
    f"org{i}/lib{i}" for i in range(12)
]


def watch(engines: bool) -> str:
    out = ['[watcher]\ndata_dir = "data"\nsite_dir = "site"\n']
    n = 0
    for engine, count in SHELF.items():
        for i in range(count):
            gpus = (1, 2)[i % 2]
            image = f"example/{engine.replace('.', '-')}:v1.{i % 3}"
            spec = 'spec_decode = true\nspec_method = "mtp"\n' if i % 3 == 0 else ""
            out.append(
                f'[[recipe]]\nid = "r{n:03d}"\nengine = "{engine}"\n{spec}'
                f'command = ["docker", "run", "{image}"]\n'
                f"[recipe.hardware]\ngpu_count = {gpus}\n[recipe.checks]\ntool_call = true\n"
            )
            n += 1
    out.append('[tracker]\nsource = "docs/UPSTREAM.md"\n')
    if engines:
        out.append('[engines]\nhand = "fragments/engines-readme.md"\n')
    else:
        out.append('[engines]\npages = false\nglance = ""\n')
    return "\n".join(out)


def tracker(rows: int) -> str:
    lines = ["# Upstream tracker", ""]
    per = -(-rows // len(REPOS))
    n = 0
    for repo in REPOS:
        lines += [f"## {repo.split('/')[1]} (`{repo}`)", "", "| Issue / PR | Status | Why |"]
        lines.append("|---|---|---|")
        for _ in range(per):
            if n == rows:
                break
            lines.append(
                f"| [#{1000 + n}](https://github.com/{repo}/issues/{1000 + n}) | 🟡 Open | row {n} |"
            )
            n += 1
        lines.append("")
    return "\n".join(lines)


def runs(count: int, recipes: list[str], rng: random.Random) -> list[dict]:
    out = []
    for k in range(count):
        at = NOW - timedelta(hours=k * 3)
        recipe = rng.choice(recipes)
        out.append(
            {
                "run_id": f"run{k:05d}",
                "recipe": recipe,
                "backend": "local",
                "outcome": "passed" if rng.random() < 0.7 else "failed",
                "reason": "bench",
                "hardware": {"gpus": [GPU] * 2, "matches_target": True},
                "metrics": {
                    "decode_tokens_per_s": round(rng.uniform(15, 90), 1),
                    "accept_length": round(rng.uniform(1.5, 3.5), 2),
                },
                "checks": [{"name": "tool-call", "ok": rng.random() < 0.9}],
                "started_at": iso(at - timedelta(minutes=5)),
                "finished_at": iso(at),
                "host": "box",
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=160)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    rng = random.Random(7)
    times: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        (base / "docs").mkdir()
        (base / "fragments").mkdir()
        (base / "docs" / "UPSTREAM.md").write_text(tracker(a.rows), encoding="utf-8")
        (base / "fragments" / "engines-readme.md").write_text(README, encoding="utf-8")
        cfgs = {}
        for engines in (True, False):
            (base / "watch.toml").write_text(watch(engines), encoding="utf-8")
            cfgs[engines] = load_config(base / "watch.toml")
        store = Store(cfgs[True].db_path)
        for r in runs(a.runs, [r.id for r in cfgs[True].recipes], rng):
            store.add_smoke_run(r)
        store.close()
        for _ in range(a.repeat):
            for engines in (True, False):  # in turn, so the host's load falls on both
                t = time.perf_counter()
                run_cycle(cfgs[engines], offline=True, now=NOW, no_smoke=True)
                times[engines].append(time.perf_counter() - t)
        cfg = cfgs[True]
        run_cycle(cfg, offline=True, now=NOW, no_smoke=True)  # the outputs read back below
        made = [p for p in cfg.pages if p.engine]
        glance = cfg.resolve(cfg.engines.glance).read_text(encoding="utf-8")
        sizes = sum(len(cfg.resolve(p.output).read_text(encoding="utf-8")) for p in made)
        found = disagreements(every_claim(cfg, {}))
        doc = json.loads((cfg.site_dir / "status.json").read_text(encoding="utf-8"))
    for engines, label in ((True, "with [engines]"), (False, "without")):
        ts = times[engines]
        print(
            f"{label}: check-now --offline median {statistics.median(ts):.3f} s"
            f" ({min(ts):.3f}–{max(ts):.3f})"
        )
    print(
        f"pages made: {len(made)} ({', '.join(p.id for p in made)}); status.json pages {len(doc['pages'])}"
    )
    print(f"engine pages {sizes} characters in all; At-a-glance page {len(glance)} characters")
    print(f"disagreements between outputs: {len(found)}")
    for f in found[:10]:
        print("  " + f)


if __name__ == "__main__":
    main()
