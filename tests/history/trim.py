"""Build tests/history/ from the full export in ../shared/history (run once; the output is committed).

Keeps, per repository, every commit of the export in full (sha, parents, dates, author, message,
files: the engine lists commits by path and reads the branch tip, so none can be dropped without
the replay answering 503 for most lists), the tags, the whole file tree at the cut, and the
contents of only the few files that code items (and the tests of moved files) read (the export
has ~1,000 blobs, 2.2 MB). A commit keeps the export's `status` (A/D per path) and `renamed` ({new:
old}) where it has them: the fake's single-commit answer lists renames as GitHub does.

    python tests/history/trim.py ../shared/history tests/history
"""

from __future__ import annotations

import gzip
import json
import sys
import tarfile
from pathlib import Path

BLOBS = {
    "sgl-project/sglang": [
        "python/sglang/srt/layers/quantization/marlin_utils.py",
        "python/sglang/srt/layers/quantization/auto_round.py",
        "python/sglang/srt/models/qwen3_5.py",
        "python/sglang/srt/models/qwen3_5_mtp.py",
        "python/sglang/srt/layers/attention/fla/fused_recurrent.py",
        # moved files (issue 20): a rename (git: 99% similar) and a move with heavy edits
        "python/sglang/srt/layers/quantization/awq/awq_triton.py",
        "python/sglang/srt/layers/quantization/awq/awq.py",
    ],
    "fla-org/flash-linear-attention": [],
    "MoonshotAI/FlashKDA": [],
}


def trim(src: Path, dst: Path) -> None:
    meta = json.loads((src / "meta.json").read_text())
    tar = tarfile.open(src / "blobs.tar.gz")
    for repo, paths in BLOBS.items():
        stem = repo.replace("/", "__")
        data = json.load(gzip.open(src / f"{stem}.commits.json.gz", "rt"))
        tags = json.load(gzip.open(src / f"{stem}.tags.json.gz", "rt"))
        tree = json.load(gzip.open(src / f"{stem}.tree.2026-04-30.json.gz", "rt"))
        blobs = {}
        for path in paths:
            sha = tree["tree"][path]
            blobs[sha] = tar.extractfile(sha).read().decode("utf-8")
        out = {
            "repo": repo,
            "branch": data["branch"],
            "since": data["since"],
            "until": meta["until"],
            "tip": data["tip"],
            "commits": data["commits"],
            "tags": tags,
            "tree": tree,
            "blobs": blobs,
        }
        with gzip.open(dst / f"{stem}.json.gz", "wt", encoding="utf-8", compresslevel=9) as f:
            json.dump(out, f, separators=(",", ":"))
        print(f"{repo}: {len(data['commits'])} commits, {len(tags)} tags, {len(blobs)} blobs")


if __name__ == "__main__":
    trim(Path(sys.argv[1]), Path(sys.argv[2]))
