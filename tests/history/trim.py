"""Build tests/history/ from the full export in ../shared/history (run once; the output is committed).

Keeps, per repository: every commit that touches a kept path in full (sha, parents, dates, author,
message, files); every other commit as a skeleton `[sha, committed]` (its parent is the next
commit in the list unless a third element says otherwise) so the replay still knows the branch tip
at any date; the tags; the whole file tree at the cut; and the contents of the
few files that code items read. The kept paths are written into the data (`complete_paths`): the
replay answers commit lists only for paths inside them, and says "not in the recorded history"
for anything else, never "no commits".

    python tests/history/trim.py ../shared/history tests/history
"""

from __future__ import annotations

import gzip
import json
import sys
import tarfile
from pathlib import Path

KEEP = {
    "sgl-project/sglang": {
        "paths": [
            "python/sglang/srt/layers/quantization/marlin_utils.py",
            "python/sglang/srt/layers/quantization/auto_round.py",
            "python/sglang/jit_kernel/csrc/gemm/marlin/",
            "python/sglang/jit_kernel/gptq_marlin.py",
            "sgl-kernel/csrc/gemm/marlin/",
            "python/sglang/srt/layers/attention/fla/",
            "python/sglang/srt/layers/attention/linear/",
            "python/sglang/srt/layers/attention/mamba/",
            "python/sglang/srt/layers/attention/hybrid_linear_attn_backend.py",
            "python/sglang/srt/speculative/",
            "python/sglang/srt/models/qwen3_5.py",
            "python/sglang/srt/models/qwen3_5_mtp.py",
            "python/sglang/srt/models/qwen3_next.py",
            "python/sglang/srt/models/qwen3_next_mtp.py",
        ],
        "blobs": [
            "python/sglang/srt/layers/quantization/marlin_utils.py",
            "python/sglang/srt/layers/quantization/auto_round.py",
            "python/sglang/srt/models/qwen3_5.py",
            "python/sglang/srt/layers/attention/fla/fused_recurrent.py",
        ],
    },
    "fla-org/flash-linear-attention": {"paths": [""], "blobs": []},
    "MoonshotAI/FlashKDA": {"paths": [""], "blobs": []},
}


def under(path: str, prefixes: list[str]) -> bool:
    return any(p == "" or path == p or (p.endswith("/") and path.startswith(p)) for p in prefixes)


def trim(src: Path, dst: Path) -> None:
    meta = json.loads((src / "meta.json").read_text())
    tar = tarfile.open(src / "blobs.tar.gz")
    for repo, keep in KEEP.items():
        stem = repo.replace("/", "__")
        data = json.load(gzip.open(src / f"{stem}.commits.json.gz", "rt"))
        tags = json.load(gzip.open(src / f"{stem}.tags.json.gz", "rt"))
        tree = json.load(gzip.open(src / f"{stem}.tree.2026-04-30.json.gz", "rt"))
        order = data["commits"]  # newest first; every commit's parent is usually the next one
        commits, kept = [], 0
        for i, c in enumerate(order):
            if any(under(f, keep["paths"]) for f in c["files"]):
                commits.append(c)
                kept += 1
                continue
            implied = [order[i + 1]["sha"]] if i + 1 < len(order) else []
            entry = [c["sha"], c["committed"]]
            if c["parents"] != implied:
                entry.append(c["parents"])
            commits.append(entry)  # elided: no message, no files
        blobs = {}
        for path in keep["blobs"]:
            sha = tree["tree"][path]
            blobs[sha] = tar.extractfile(sha).read().decode("utf-8")
        out = {
            "repo": repo,
            "branch": data["branch"],
            "since": data["since"],
            "until": meta["until"],
            "tip": data["tip"],
            "complete_paths": keep["paths"],
            "commits": commits,
            "tags": tags,
            "tree": tree,
            "blobs": blobs,
        }
        with gzip.open(dst / f"{stem}.json.gz", "wt", encoding="utf-8", compresslevel=9) as f:
            json.dump(out, f, separators=(",", ":"))
        print(f"{repo}: {kept} commits kept, {len(commits) - kept} elided, {len(blobs)} blobs")


if __name__ == "__main__":
    trim(Path(sys.argv[1]), Path(sys.argv[2]))
