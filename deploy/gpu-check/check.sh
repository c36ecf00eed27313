#!/usr/bin/env bash
# The GPU check of watcher's smoke runner, as one short script for a lent GPU machine.
# Run from the repository root:  bash deploy/gpu-check/check.sh
# Needs python3 with torch and transformers (the device image has both) and watcher's other
# dependencies, installed from a carried wheelhouse (.gpu-wheels/, see README.md here) if missing.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-check-out}
mkdir -p "$OUT"
ROOT=$PWD
export PYTHONPATH=$ROOT PYTHONUNBUFFERED=1

if [ -d .gpu-wheels ]; then
  python3 -m pip install -q --no-index --find-links .gpu-wheels sqlite-utils PyGithub "apscheduler>=3.11,<4" 2>&1 | tail -2
fi

gpu_mem() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1; }
echo "== nvidia-smi"
nvidia-smi --query-gpu=name,memory.total,compute_cap,driver_version --format=csv,noheader,nounits 2>&1 | tee "$OUT/gpu.txt"
echo "== watcher's hardware reading"
python3 -c "from watcher.hardware import read_gpus; print(read_gpus())" 2>&1 | tee "$OUT/hardware.txt"
before=$(gpu_mem)

cd "$ROOT/deploy/gpu-check"
echo "== gate without --any-hardware (expect: skipped, not an RTX 3090)"
python3 -m watcher smoke tiny-gpu --json > "$OUT/gated.json" 2> "$OUT/gated.log"; echo "exit $?"
echo "== run with --any-hardware (expect: passed, off-target)"
python3 -m watcher smoke tiny-gpu --any-hardware --json > "$OUT/result.json" 2> "$OUT/smoke.log"; echo "exit $?"
cp data/smoke/*.log "$OUT/" 2>/dev/null
after=$(gpu_mem)
echo "== compute apps left on the GPU (expect none)"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>&1 | tee "$OUT/apps.txt"

python3 - "$OUT" "${before:-}" "${after:-}" <<'PY'
import json, sys
out, before, after = sys.argv[1:4]
gated = json.load(open(f"{out}/gated.json"))
d = json.load(open(f"{out}/result.json"))
print("gate:", gated["outcome"], "-", gated["reason"])
print("run:", d["outcome"], "| matches_target:", d["hardware"]["matches_target"], "| gpus:",
      [g["name"] for g in d["hardware"]["gpus"]])
print("engine:", d["engine_version"], "| metrics:", d["metrics"])
print("teardown:", d["teardown"])
print(f"GPU memory used before {before or '?'} MiB, after {after or '?'} MiB")
PY
