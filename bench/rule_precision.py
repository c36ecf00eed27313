"""Precision and recall of each default commit rule on the recorded upstream history.

Every commit of the record (tests/history: the export's commits, unchanged) that a rule reads
(since its `since`, in its paths, as the commits API lists them, a rename's old path included)
is run through poll.commit_matches, the very function the poller uses. The labels are those of
tests/poll/test_history_rules.py (each with a person's reason): relevant = its must-match commits plus
the relevant ones it names as misses; precision = labelled-relevant matches / matches; recall =
labelled-relevant matches / labelled-relevant commits. Side by side: the rules of another
watch.toml (default: the one on `main`), so a change of a rule shows what it bought. A second
table does the same on tests/poll/test_relevance.py's labelled subjects: the classes (off-stack
vendors, formats and drafters; `extra_buffer`, `replayssm`, `_mtp_`, "drafted") found after the
record ends.

    python bench/rule_precision.py [--against REF]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "poll"))

from test_history_rules import (  # noqa: E402
    FLA_MATCH,
    FLA_NOT,
    SGLANG_GDN_MATCH,
    SGLANG_GDN_NOT,
    SGLANG_MARLIN_NOT,
)
from test_relevance import (  # noqa: E402
    FLA_MUST_MATCH,
    FLA_MUST_NOT,
    GDN_MUST_MATCH,
    GDN_MUST_NOT,
)

from watcher.config.load import load_config  # noqa: E402
from watcher.config.model import Item  # noqa: E402
from watcher.fakes.history import default_history, parse_time  # noqa: E402
from watcher.poll import poller as poll  # noqa: E402

# relevant = must-match plus the labelled misses ("(a miss)" in the reason)
LABELS = {
    "sglang-gdn": (SGLANG_GDN_MATCH, SGLANG_GDN_NOT),
    "sglang-marlin": ({}, SGLANG_MARLIN_NOT),
    "fla-rollback": (FLA_MATCH, FLA_NOT),
}


def read(item: Item) -> list:
    h = default_history()[item.repo]
    since = parse_time(item.since) if item.since else None
    out = []
    for sha in h.order:
        c = h.commits[sha]
        if since is not None and c.committed < since:
            continue
        wanted = [p.strip("/") for p in item.paths]
        if wanted and not any(f == p or f.startswith(p + "/") for f in c.files for p in wanted):
            continue
        out.append(c)
    return out


def measure(item: Item) -> dict:
    must, must_not = LABELS[item.id]
    relevant = set(must) | {k for k, why in must_not.items() if "(a miss)" in why}
    commits = read(item)
    matched = {c.sha[:10] for c in commits if poll.commit_matches(item, c.message)}
    hits = matched & relevant
    return {
        "read": len(commits),
        "matched": len(matched),
        "relevant": len(relevant),
        "precision": len(hits) / len(matched) if matched else None,
        "recall": len(hits) / len(relevant) if relevant else None,
        "false": sorted(matched - relevant),
    }


SUBJECTS = {
    "sglang-gdn": (GDN_MUST_MATCH, GDN_MUST_NOT),
    "fla-rollback": (FLA_MUST_MATCH, FLA_MUST_NOT),
}


def measure_subjects(item: Item) -> dict:
    """The same on the labelled subjects of the classes found after the record ends."""
    must, must_not = SUBJECTS[item.id]
    matched = {s for s in (*must, *must_not) if poll.commit_matches(item, s)}
    hits = matched & set(must)
    return {
        "matched": len(matched),
        "labelled": len(must) + len(must_not),
        "precision": len(hits) / len(matched) if matched else None,
        "recall": len(hits) / len(must) if must else None,
    }


def fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", default="main", help="git ref whose watch.toml to compare")
    args = ap.parse_args()
    text = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{args.against}:watch.toml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "watch.toml").write_text(text)
        other = load_config(Path(tmp) / "watch.toml")
    now = load_config(REPO / "watch.toml")
    print("| rule | watch.toml | read | matched | precision | recall | not relevant |")
    print("|---|---|---|---|---|---|---|")
    for rule in LABELS:
        for name, cfg in ((args.against, other), ("this branch", now)):
            m = measure(cfg.item(rule))
            print(
                f"| {rule} | {name} | {m['read']} | {m['matched']} | {fmt(m['precision'])}"
                f" | {fmt(m['recall'])} | {', '.join(m['false']) or '—'} |"
            )
    print()
    print("| rule | watch.toml | labelled subjects | matched | precision | recall |")
    print("|---|---|---|---|---|---|")
    for rule in SUBJECTS:
        for name, cfg in ((args.against, other), ("this branch", now)):
            m = measure_subjects(cfg.item(rule))
            print(
                f"| {rule} | {name} | {m['labelled']} | {m['matched']} | {fmt(m['precision'])}"
                f" | {fmt(m['recall'])} |"
            )


if __name__ == "__main__":
    main()
