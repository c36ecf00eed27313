"""Proposal benchmark (issue 29.6): does appending `init --scan-composes` to a watch list make a
verdict out of a proposal?

Takes a watcher checkout's shipped watch.toml and its guide fixture (tests/onboard/guide), appends
the scan's proposals and adds them to the engines page as the scan's last line says, then
evaluates with nothing read and no run stored, and asks the trigger which recipes one cycle
would start given a new SGLang release, a new vLLM release and the engines page turning
ready-to-test. Prints the engines page's status and how many proposals would get a GPU run.

    python bench/proposal.py [--old PATH]   # --old: a watcher checkout to measure too
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

EVENTS = [
    {"kind": "item", "subject": "sglang-releases", "old": "v0.5.12", "new": "v0.5.13"},
    {"kind": "item", "subject": "vllm-releases", "old": "v0.27.0", "new": "v0.27.1"},
    {"kind": "page", "subject": "engines", "old": "blocked", "new": "ready-to-test"},
]


def measure(checkout: Path) -> dict:
    """Run in a process whose watcher is `checkout`'s."""
    from click.testing import CliRunner

    from watcher.cli import cli
    from watcher.config.load import load_config
    from watcher.judge.evaluate import evaluate
    from watcher.smoke.trigger import due_recipes
    from watcher.store.db import Store

    with tempfile.TemporaryDirectory() as tmp:
        guide = Path(tmp) / "guide"
        shutil.copytree(checkout / "tests/onboard/guide", guide)
        shipped = (checkout / "watch.toml").read_text()
        (guide / "watch.toml").write_text(shipped)
        out = CliRunner().invoke(
            cli, ["init", str(guide), "--scan-composes", str(guide / "models")]
        )
        ids = re.search(r"^# for the engines page: recipes = \[(.*)\]$", out.stdout, re.M)[1]
        old = 'recipes = ["sglang-eagle-tp1", "sglang-nospec-tp1"]\n'
        text = shipped.replace(old, f'recipes = ["sglang-eagle-tp1", "sglang-nospec-tp1", {ids}]\n')
        (guide / "watch.toml").write_text(text + "\n" + out.stdout)
        cfg = load_config(guide / "watch.toml")
        now = datetime(2026, 11, 30, tzinfo=UTC)
        ev = evaluate(cfg, {}, [], {}, now)
        store = Store(Path(tmp) / "w.db")
        due = {d.recipe for d in due_recipes(cfg, store, ev, EVENTS, now)}
        store.close()
        scanned = [r for r in cfg.recipes if r.compose]
        return {
            "proposed": len(scanned),
            "engines_page": ev.pages["engines"].status,
            "sglang_page": ev.pages["sglang"].status,
            "proposals_started": len(due & {r.id for r in scanned}),
            "proposals_with_blockers": sum(bool(r.blockers) for r in scanned),
        }


def run(checkout: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    code = f"import json,sys; sys.path.insert(0, {str(Path(__file__).parent)!r});"
    code += " from proposal import measure; from pathlib import Path;"
    code += f" print(json.dumps(measure(Path({str(checkout)!r}))))"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=checkout, capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", type=Path, help="another watcher checkout to measure too")
    args = ap.parse_args()
    here = Path(__file__).resolve().parent.parent
    for name, checkout in [("this checkout", here)] + ([("--old", args.old)] if args.old else []):
        print(name, json.dumps(run(checkout)))


if __name__ == "__main__":
    main()
