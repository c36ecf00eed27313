"""The hand-kept SGLang page and the part of the shipped watch list it covered: its two
blockers, their items, and the one recipe it showed (with the vLLM baseline that recipe is
judged against). The reader-page length test and bench/page_words.py compare the two."""

from __future__ import annotations

import re
from pathlib import Path

HAND_KEPT = Path(__file__).resolve().parents[1] / "seeds" / "SGLANG.hand-kept.md"
EXTRA_BLOCKERS = ("eagle3-layer-capture", "offloader-tied-weights")  # not on the hand-kept page
EXTRA_ITEMS = ("sglang-qwen35-eagle3", "sglang-releases", "sglang-offloader-tied-weights")
EXTRA_RECIPES = ("sglang-nospec-tp1", "sglang-mtp-tp1")


def reader_words(text: str) -> list[str]:
    """Words as a reader counts them: no comments, no link targets, no table pipes or marks."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return [w for w in text.split() if re.search(r"\w", w)]


def watch_section(text: str) -> str:
    """From the watch-list heading to the next horizontal rule (either page)."""
    m = re.search(r"(?ms)^(?:## )?Watch list\b.*?(?=^---\s*$)", text)
    return m.group(0) if m else ""


def drop_tables(text: str, kind: str, ids: set[str] | tuple[str, ...]) -> str:
    """watch.toml without the [[kind]] tables whose id is in `ids` (their subtables too)."""
    chunks = re.split(r"(?m)^(?=\[\[|# -{10,})", text)
    keep = []
    for chunk in chunks:
        m = re.match(rf'\[\[{kind}\]\]\nid = "([^"]+)"', chunk)
        if m and m.group(1) in ids:
            continue
        keep.append(chunk)
    return "".join(keep)


def hand_kept_subset(text: str) -> str:
    """The shipped watch.toml cut down to what the hand-kept page covered."""
    text = drop_tables(text, "blocker", EXTRA_BLOCKERS)
    text = drop_tables(text, "item", EXTRA_ITEMS)
    text = drop_tables(text, "recipe", EXTRA_RECIPES)
    for b in EXTRA_BLOCKERS:
        text = text.replace(f', "{b}"', "")
    for r in EXTRA_RECIPES:
        text = text.replace(f', "{r}"', "").replace(f'"{r}", ', "")
    return text
