"""Bisect benchmark: smoke runs per bisect against the budget ceil(log2 N) + 2.

The grid is real (the fake GitHub's tags and compare answers, every build checked on the fake
OCI registry, one HEAD each, as on Docker Hub); the search is watcher's own (`watcher.bisect.search.advance`,
the store, the daily budget). Only the smoke run is replaced by a function that passes builds
before the first bad one and fails after it with the Marlin signature, so every first-bad
position of every grid size can be tried: N = 4, 16, 64, 200 (one commit per release).

Modes per N: `plain` (every first-bad position), `skips` (each interior build untestable with
probability 0.1, seeded: it fails with another signature), `gone` (each interior build purged
from the registry with probability 0.1, seeded: never run, stepped around), `candidate`
(watcher knows the culprit's merge commit). With --real, also one end-to-end `watcher bisect` per N through the
fake docker and the fake engine (real processes), with wall time.

    python bench/bisect_runs.py [--real] [--sizes 4,16,64,200]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from kits.bisectkit import published, seed_releases, write_config  # noqa: E402
from kits.smokekit import RTX3090, fake_docker, fake_nvidia_smi  # noqa: E402

from watcher.bisect import search as bs  # noqa: E402
from watcher.config.load import load_config  # noqa: E402
from watcher.fakes.github import FakeGitHub  # noqa: E402
from watcher.store.db import Store  # noqa: E402


def synthetic_runner(first_bad: int, broken: set[int], index_of: dict[str, int]):
    def run(cfg, recipe, run_id):
        build = dict(recipe.env)["WATCHER_BUILD"]
        i = index_of[build]
        doc = {
            "run_id": run_id,
            "recipe": recipe.id,
            "backend": "bench",
            "hardware": {"gpus": [{"name": "RTX 3090"}], "matches_target": True},
            "metrics": {"decode_tokens_per_s": None},
            "engine_version": build.rsplit(":v", 1)[-1],
            "started_at": "2000-01-01T00:00:00Z",  # outside the daily budget's window
            "finished_at": "2000-01-01T00:00:01Z",
        }
        if i in broken:
            doc.update(outcome="failed", signature="cuda-oom", reason="another failure")
        elif i >= first_bad:
            doc.update(outcome="failed", signature="marlin-tile-n", reason="marlin")
        else:
            doc.update(outcome="passed", signature=None, reason="passed")
        return doc

    return run


def make_grid(tmp: Path, n: int):
    gh = FakeGitHub().__enter__()
    rel = seed_releases(gh, n, commits_per_release=1)
    tags = [r["tag"] for r in rel]
    cfg_path = write_config(tmp, gh, tags, [], max_runs=10**6)
    cfg = load_config(cfg_path)
    store = Store(cfg.db_path)
    t0 = time.monotonic()
    state = bs.plan(cfg, store, cfg.recipe("fake"), tags[0], tags[-1])
    grid_s = time.monotonic() - t0
    return gh, cfg, store, state, rel, grid_s


def one(cfg, store, base, first_bad, broken, candidate=None, gone=()):
    state = copy.deepcopy(base)
    state["id"] = bs.new_bisect_id("fake")
    for i in gone:
        state["points"][i]["gone"] = "purged (bench)"
    if candidate is not None:
        state["candidate"] = {"index": candidate, "sha": state["points"][candidate]["sha"]}
        state["candidate_done"] = False
    index_of = {p["build"]: p["index"] for p in state["points"]}
    state = bs.advance(cfg, store, state, runner=synthetic_runner(first_bad, broken, index_of))
    r = state["report"]
    lo, hi = r.get("before", {}).get("index", -1), r.get("after", {}).get("index", -1)
    found = lo < first_bad <= hi  # the range reported holds the true first bad build
    return r["runs"], r["steps_judged"], r["exact"], found


MODES = ("plain", "skips", "gone", "candidate")


def bench_size(n: int, real: bool) -> dict:
    with tempfile.TemporaryDirectory() as d, published():
        tmp = Path(d)
        bin_dir = tmp / "bin"
        fake_docker(bin_dir)
        fake_nvidia_smi(bin_dir, [RTX3090])
        os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
        os.environ["FAKE_DOCKER_STATE"] = str(tmp / "docker-state")
        os.environ.pop("GITHUB_TOKEN", None)
        gh, cfg, store, base, rel, grid_s = make_grid(tmp, n)
        budget = base["budget"]
        rows = {}
        positions = list(range(1, n))
        for mode in MODES:
            runs, judged, exact, found, spare = [], [], 0, 0, 0
            rng = random.Random(n)
            for b in positions:
                broken, gone = set(), set()
                if mode == "skips":
                    broken = {i for i in range(1, n - 1) if rng.random() < 0.1 and i != b}
                if mode == "gone":
                    gone = {i for i in range(1, n - 1) if rng.random() < 0.1 and i != b}
                cand = b if mode == "candidate" else None
                r, j, e, f = one(cfg, store, base, b, broken, cand, gone)
                # the bound: budget judged runs plus one per untestable build that ran
                spare += r <= budget + len(broken)
                runs.append(r)
                judged.append(j)
                exact += e
                found += f
            rows[mode] = {
                "bisects": len(positions),
                "runs_max": max(runs),
                "runs_mean": round(statistics.mean(runs), 2),
                "judged_max": max(judged),
                "over_budget": sum(1 for j in judged if j > budget),
                "exact": exact,
                "found": found,
                "within_bound": spare,
            }
        out = {"N": n, "budget": budget, "grid_s": round(grid_s, 2), **rows}
        store.close()
        if real:
            bad = rel[(2 * n) // 3]["tag"]
            (tmp / "real").mkdir()
            cfg_path = write_config(
                tmp / "real", gh, [r["tag"] for r in rel], ["--bad-from", bad], max_runs=10**6
            )
            from click.testing import CliRunner

            from watcher.cli import cli

            t0 = time.monotonic()
            res = CliRunner().invoke(
                cli,
                ["bisect", "fake", "--good", rel[0]["tag"], "--bad", rel[-1]["tag"]]
                + ["--config", str(cfg_path), "--json"],
            )
            wall = time.monotonic() - t0
            state = json.loads(res.stdout)
            out["real"] = {
                "first_bad": bad,
                "found": state["report"]["after"]["tag"],
                "runs": state["report"]["runs"],
                "wall_s": round(wall, 1),
            }
        gh.__exit__(None, None, None)
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="4,16,64,200")
    ap.add_argument("--real", action="store_true", help="also one real end-to-end bisect per N")
    args = ap.parse_args()
    print(
        f"{'N':>4} {'budget':>6} {'mode':>9} {'bisects':>7} {'runs max':>8} {'mean':>6}"
        f" {'judged max':>10} {'over':>4} {'exact':>5} {'found':>5} {'in bound':>8}"
    )
    for n in (int(x) for x in args.sizes.split(",")):
        r = bench_size(n, args.real)
        for mode in MODES:
            m = r[mode]
            print(
                f"{n:>4} {r['budget']:>6} {mode:>9} {m['bisects']:>7} {m['runs_max']:>8}"
                f" {m['runs_mean']:>6} {m['judged_max']:>10} {m['over_budget']:>4}"
                f" {m['exact']:>5} {m['found']:>5} {m['within_bound']:>8}"
            )
        print(f"     grid of {n} builds from the fake GitHub + registry checks: {r['grid_s']} s")
        if "real" in r:
            x = r["real"]
            print(
                f"     real: first bad {x['first_bad']}, found {x['found']} in {x['runs']} runs,"
                f" {x['wall_s']} s"
            )


if __name__ == "__main__":
    main()
