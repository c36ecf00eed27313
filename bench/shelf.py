"""Shelf benchmark: `init --scan-composes` on a guide shaped like the real one, scored.

Writes 122 compose files in the guide's house style (its counts at its 2026-08-22 head: vLLM 74,
ik_llama.cpp 15, llama.cpp 14, beellama 10, llamacpp-club3090 5, SGLang 2, vllm-omni 1,
vllm-lmcache 1; 21 under `compose/_archive/`; Status 49 Deprecated, 36 Experimental, 25
Production, 8 Incubating, 2 Preview, 2 PARKED, 1 none), each with the truth it was written
from: the host port its nested default publishes, the GPU count, the engine, the spec-decode
method, whether it is live. Then scans it and counts the proposals that are right. The files are
written here from what the real ones do (nested port defaults, `count: all` with header lines,
several ids in one `device_ids` string, spec decode in an entrypoint script or the command,
`${MODEL_DIR:?…}`), not copied from them.

    python bench/shelf.py [--seed 1] [--all] [--old PATH]   # --old: a watcher checkout to score too
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ENGINES = [  # (folder, label, image, count)
    ("vllm", "vllm", "${VLLM_IMAGE:-vllm/vllm-openai:v0.27.1}", 74),
    ("ik-llama", "ik_llama.cpp", "${IK_LLAMA_IMAGE:-ghcr.io/ex/ik-llama-cpp@sha256:" + "5f" * 32 + "}", 15),
    ("llama-cpp", "llama.cpp", "${LLAMA_CPP_IMAGE:-ghcr.io/ggml-org/llama.cpp:server-cuda-b9001}", 14),
    ("beellama", "beellama", "${BEELLAMA_IMAGE:-ghcr.io/ex/beellama-cpp:multiarch-v0.3.0}", 10),
    ("llamacpp-club3090", "llamacpp-club3090", "ghcr.io/ex/llamacpp-club3090@sha256:" + "1c" * 32, 5),
    ("sglang", "sglang", "lmsysorg/sglang:v0.5.12", 2),
    ("vllm-omni", "vllm-omni", "${VLLM_IMAGE:-vllm/vllm-omni:v0.20.0}", 1),
    ("vllm-lmcache", "vllm-lmcache", "${VLLM_IMAGE:-lmcache/vllm-openai@sha256:" + "66" * 32 + "}", 1),
]  # fmt: skip
STATUSES = (
    ["🗑️ Deprecated"] * 49 + ["🧪 Experimental"] * 36 + ["✅ Production"] * 25
    + ["🐣 Incubating"] * 8 + ["👀 Preview"] * 2 + ["⚠ PARKED 2026-05-21"] * 2 + [""]
)  # fmt: skip
TOPOLOGY = {"single": 1, "dual": 2, "multi4": 4, "multi8": 8}
VLLM_SPEC = [("mtp", '{"method":"mtp","num_speculative_tokens":3}'),
             ("eagle3", '{"method":"eagle3","model":"/d/eagle3"}'), ("", "")]  # fmt: skip
LLAMA_SPEC = [("mtp", "--spec-type draft-mtp"), ("mtp", "--spec-type mtp:n_max=2,p_min=0.0"),
              ("draft", "-md /models/draft.gguf"), ("dflash", "--spec-dflash-cross-ctx 4096"),
              ("", "")]  # fmt: skip


def _gpus(rng, label: str, n: int) -> tuple[str, str]:
    """(device lines, header lines) for n GPUs in one of the house forms."""
    ids = ",".join(str(i) for i in range(n))
    form = rng.choice(["all+header", "ids", "all+tp"] if label.startswith("vllm") or
                      label == "sglang" else ["ids", "all", "all+header"])  # fmt: skip
    if form == "ids":
        return f"device_ids: ['${{ESTATE_GPUS:-{ids}}}']", ""
    head = (
        f"# Requires-min-gpu-count: {n}\n# Tensor-parallel: {n}\n" if form == "all+header" else ""
    )
    return "count: all", head


def compose_text(rng, label, image, status, n, port, spec, required) -> str:
    devices, head = _gpus(rng, label, n)
    status_line = f"#   Status:    {status} — see the notes\n" if status else ""
    volume = "${MODEL_DIR:?MODEL_DIR is required}" if required else "${MODEL_DIR:-../../models}"
    out = (
        "# ===========================================================================\n"
        f"# Profile (at-a-glance):\n#   Model:     a model\n{status_line}"
        f"# Requires-min-vram-gb: 24\n{head}services:\n  engine-{rng.randrange(10**6)}:\n"
        f"    image: {image}\n    ports:\n"
        f'      - "${{BIND_HOST:-0.0.0.0}}:${{ESTATE_PORT:-${{PORT:-{port}}}}}:8000"\n'
        f"    volumes:\n      - {volume}:/models\n"
        f"    deploy:\n      resources:\n        reservations:\n          devices:\n"
        f"            - driver: nvidia\n              {devices}\n              capabilities: [gpu]\n"
    )
    method, flags = spec
    if label.startswith("vllm"):
        tp = f'      - --tensor-parallel-size\n      - "${{TP:-{n}}}"\n'
        config = f"      - --speculative-config\n      - '{flags}'\n" if flags else ""
        if rng.random() < 0.5 and flags:  # in the entrypoint script's default flags
            out += (
                "    entrypoint:\n      - bash\n      - -c\n      - |\n"
                '        # exec vllm serve --speculative-config \'{"method":"ngram"}\'\n'
                f"        exec vllm serve --speculative-config '{flags}' \"$$@\"\n      - --\n"
            )
            config = ""
        return out + "    command:\n      - --model\n      - /models/m\n" + tp + config
    if label == "sglang":
        return out + (
            '    entrypoint: ["/bin/bash", "-c"]\n    command:\n      - |\n'
            "        exec python3 -m sglang.launch_server --model-path /models/target \\\n"
            f"          --tp-size {n} --speculative-algorithm EAGLE3 --port 8000\n"
        )
    return out + f"    command: >-\n      --port 8000 -m /models/m.gguf {flags} -ngl all\n"


def write_shelf(root: Path, seed: int) -> dict[str, dict]:
    rng = random.Random(seed)
    statuses = STATUSES[:]
    rng.shuffle(statuses)
    archived = set(rng.sample(range(122), 21))
    truth: dict[str, dict] = {}
    i = 0
    for folder, label, image, count in ENGINES:
        for _ in range(count):
            topo = rng.choice(
                ["single", "dual", "dual", "multi4"] + (["multi8"] if i % 9 == 0 else [])
            )
            n = TOPOLOGY[topo]
            port = 8000 + i
            if label == "sglang":
                spec = ("eagle3", "")
            else:
                spec = rng.choice(VLLM_SPEC if label.startswith("vllm") else LLAMA_SPEC)
            required = i % 61 == 7  # two files require MODEL_DIR
            status = statuses[i]
            where = "_archive/" if i in archived else ""
            rel = f"models/m{i % 19}/{folder}/compose/{where}{topo}/q{i % 5}/v{i}.yml"
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(compose_text(rng, label, image, status, n, port, spec, required))
            live = not where and "Deprecated" not in status
            truth[rel] = {"port": port, "gpus": n, "engine": label, "spec": spec[0],
                          "live": live, "required": required}  # fmt: skip
            i += 1
    return truth


SCAN = """
import json, sys
from pathlib import Path
root, base = Path(sys.argv[1]), Path(sys.argv[2])
try:
    from watcher.onboard.shelf import scan_composes
    found = scan_composes(root, base, include_all=sys.argv[3] == "all").proposals
except ImportError:  # watcher before the shelf module
    from watcher.onboard.scaffold import scan_composes
    found = scan_composes(root, base)
from watcher.config.composefile import read_service
out = {}
for p in found:
    svc = read_service(base / p.compose, p.service, environ={})
    out[p.compose] = {"port": svc.host_port or 30000, "gpus": p.gpu_count, "engine": p.engine,
                      "spec": p.spec_method, "pass_env": getattr(p, "pass_env", [])}
print(json.dumps(out))
"""


def score(truth: dict[str, dict], got: dict[str, dict]) -> dict[str, int]:
    live = {k for k, t in truth.items() if t["live"]}
    s = {"files": len(truth), "live": len(live), "proposed": len(got)}
    s["not live proposed"] = sum(1 for k in got if not truth[k]["live"])
    for key in ("port", "gpus", "engine", "spec"):
        s[f"{key} right"] = sum(1 for k, g in got.items() if g[key] == truth[k][key])
    s["required as pass_env"] = sum(
        1 for k, g in got.items() if truth[k]["required"] and "MODEL_DIR" in g["pass_env"]
    )
    s["required (proposed)"] = sum(1 for k in got if truth[k]["required"])
    return s


def run(checkout: Path, root: Path, every: bool = False) -> dict[str, dict]:
    r = subprocess.run(
        [sys.executable, "-c", SCAN, str(root / "models"), str(root), "all" if every else ""],
        capture_output=True, text=True, check=True, cwd=checkout,  # `-c` puts the cwd first
        env={"PYTHONPATH": str(checkout), "PATH": ""},
    )  # fmt: skip
    return json.loads(r.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--old", type=Path, help="another watcher checkout to score on the same shelf")
    ap.add_argument("--all", action="store_true", help="score `--scan-composes --all` too")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        truth = write_shelf(root, args.seed)
        here = Path(__file__).resolve().parent.parent
        for name, checkout in [("this checkout", here)] + (
            [("--old", args.old)] if args.old else []
        ):
            print(name, json.dumps(score(truth, run(checkout, root))))
        if args.all:
            print("this checkout, --all", json.dumps(score(truth, run(here, root, every=True))))


if __name__ == "__main__":
    main()
