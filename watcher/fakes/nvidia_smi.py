"""`python -m watcher.fakes.nvidia_smi DIR`: an `nvidia-smi` that reports one RTX 3090, for trying
smoke runs and `watcher bisect` by hand on a host without one (docs/bisect.md's worked example).

It writes DIR/nvidia-smi, answering the query watcher makes (name, memory, compute capability)
with one line. Put DIR first on PATH and set WATCHER_GPU_SOURCE=nvidia-smi (so NVML, which would
read a real driver, is skipped). A run on it proves nothing about a GPU: it is for the fake engine.
"""

from __future__ import annotations

import argparse
import stat
import sys
from pathlib import Path

RTX3090 = "NVIDIA GeForce RTX 3090, 24576, 8.6"


def install(folder: Path, line: str = RTX3090) -> Path:
    """Write folder/nvidia-smi (executable) that prints `line`; -> its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "nvidia-smi"
    path.write_text(f"#!{sys.executable}\nprint({line!r})\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m watcher.fakes.nvidia_smi", description=__doc__.splitlines()[0]
    )
    ap.add_argument("folder", type=Path, help="where to write nvidia-smi (put it first on PATH)")
    args = ap.parse_args(argv)
    path = install(args.folder)
    print(f"export PATH={path.parent.resolve()}:$PATH WATCHER_GPU_SOURCE=nvidia-smi")
    return 0


if __name__ == "__main__":
    sys.exit(main())
