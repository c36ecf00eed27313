"""Adopt benchmark: `init --adopt` on a hand-kept engine page, scored by what the first generated
page keeps of it.

Runs `watcher init .` then `watcher init --adopt docs/engines/SGLANG.md .` in a fresh guide
folder, as subprocesses of each watcher tree given (this checkout, and `--old` trees), and
counts: the maintainers' lines (every non-blank line but the H1 and the rules) found on the
generated page, and found in their order; their words (a multiset) found; the fragments adopt
saved that the page does not show; the status the page gives itself against the generated one;
the template's own status sentence and placeholder recipes (`sglang:latest`) added.

    python bench/adopt.py [--page PATH] [--old PATH ...] [--status WORD]

Default page: the test fixture. `--status validated` (or blocked, experimental) scores the same
page with that word in place of PARKED in its H1 and status paragraph. "title words" counts the
H1's words (watcher's headline replaces the H1 line) found in the page's header lines.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from watcher.onboard.adopt_plan import split_sections  # noqa: E402

FIXTURE = ROOT / "tests" / "onboard" / "pages" / "SGLANG.hand-kept.md"


def hand_lines(text: str) -> list[str]:
    intro, sections = split_sections(text)
    body = "\n".join([intro, *(f"{h}\n{b}" for h, b in sections)])
    return [line for line in body.splitlines() if line.strip()]


def words(text: str) -> collections.Counter:
    return collections.Counter(re.findall(r"\w[\w.'-]*", text))


def adopt(tree: Path, page: Path) -> tuple[str, Path]:
    guide = Path(tempfile.mkdtemp(prefix="bench-adopt-"))
    dest = guide / "docs" / "engines" / "SGLANG.md"
    dest.parent.mkdir(parents=True)
    dest.write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(tree))
    for args in (["init", "."], ["init", "--adopt", "docs/engines/SGLANG.md", "."]):
        out = subprocess.run(
            [sys.executable, "-m", "watcher", *args], cwd=guide, env=env, capture_output=True
        )
        if out.returncode:
            sys.exit(f"{tree}: watcher {' '.join(args)} exited {out.returncode}: {out.stderr!r}")
    return dest.read_text(encoding="utf-8"), guide


def score(tree: Path, page: Path) -> dict:
    hand = page.read_text(encoding="utf-8")
    new, guide = adopt(tree, page)
    try:
        return _score(hand, new, guide)
    finally:
        shutil.rmtree(guide, ignore_errors=True)


def _score(hand: str, new: str, guide: Path) -> dict:
    lines = hand_lines(hand)
    found = sum(1 for line in lines if line in new)
    at = in_order = 0
    for line in lines:
        k = new.find(line, at)
        if k >= 0:
            in_order += 1
            at = k + len(line)
    want, have = words("\n".join(lines)), words(new)
    kept = sum(min(n, have[w]) for w, n in want.items())
    frags = [  # what adopt saved: the packaged defaults `init` wrote are not the hand page's
        f
        for f in (guide / "fragments" / "sglang").glob("*.md")
        if re.match(r"(adopted-|status-|intro\.md)", f.name)
    ]
    hidden = [f.name for f in frags if f.read_text(encoding="utf-8").strip() not in new]
    own = re.search(r"status\W{0,10}\(?(\d{4}-\d{2}-\d{2})\)?\W{0,10}(\w+)", hand, re.I)
    shown = re.search(r"\*\*Status: ([\w -]+)\*\*( since (\d{4}-\d{2}-\d{2}))?", new)
    title = hand.splitlines()[0][2:] if hand.startswith("# ") else ""
    head = words("\n".join(new.splitlines()[:4]))
    title_words = words(title)
    return {
        "title words": f"{sum(min(n, head[w]) for w, n in title_words.items())}"
        f"/{sum(title_words.values())}",
        "lines": f"{found}/{len(lines)}",
        "in order": f"{in_order}/{len(lines)}",
        "words": f"{kept}/{sum(want.values())}",
        "fragments not shown": len(hidden),
        "page's own status": f"{own.group(2).lower()} since {own.group(1)}" if own else "none",
        "generated status": f"{shown.group(1)}{shown.group(2) or ''}" if shown else "none",
        "template status sentence added": "doesn't run cleanly" in new,
        "placeholder recipes": new.count("sglang:latest") - hand.count("sglang:latest"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", type=Path, default=FIXTURE)
    ap.add_argument("--old", type=Path, action="append", default=[])
    ap.add_argument("--status", choices=("parked", "blocked", "experimental", "validated"))
    args = ap.parse_args()
    if args.status and args.status != "parked":
        text = args.page.read_text(encoding="utf-8").replace("PARKED", args.status.upper())
        args.page = Path(tempfile.mkdtemp(prefix="bench-page-")) / args.page.name
        args.page.write_text(text, encoding="utf-8")
    for tree in [ROOT, *args.old]:
        print(f"{tree}:")
        for key, value in score(tree.resolve(), args.page).items():
            print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
