"""`watcher init --adopt docs/engines/README.md`: the guide's At-a-glance page becomes the
maintainers' copy that the generated table is made from, without losing a word.

A file is taken for the At-a-glance page by its shape (a table under an "At a glance" heading;
a tracker's "Pinned images" table of engines is not one) when no [[page]] writes it. It is copied byte for byte to
`fragments/engines-readme.md` ([engines] hand), `[engines]` is added to watch.toml (or given its
`hand` key), and the page is marked as watcher's, unchanged otherwise: the next cycle rebuilds
its table, keeping every row and all the prose (watcher.publish.glance).
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from watcher.config.load import parse_config
from watcher.config.model import Config
from watcher.core.errors import WatcherError
from watcher.core.files import atomic_write
from watcher.publish.glance import find_table
from watcher.publish.page import GENERATED_MARKER

HAND = "fragments/engines-readme.md"


@dataclass
class GlanceAdoption:
    """What `adopt_glance` did, for the CLI to say."""

    path: Path
    hand: Path
    rows: int
    config_added: str  # "table" ([engines] added), "key" (hand added to it)
    diff: str = ""  # watch.toml before and after, unified
    written: bool = True  # False: a dry run, nothing was written


def is_glance(path: Path) -> bool:
    """Does the file hold the guide's At-a-glance table (and is it not watcher's already)?"""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise WatcherError(f"{path}: cannot read it ({e})") from None
    lines = text.split("\n")
    return GENERATED_MARKER not in text and find_table(lines, heading_only=True) is not None


def _toml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def adopt_glance(cfg: Config, path: Path, dry_run: bool = False) -> GlanceAdoption:
    """Keep the page as the maintainers' copy, point [engines] at it, mark the page as ours.
    `dry_run`: say what would change (watch.toml's diff) and write nothing."""
    if cfg.engines is not None and cfg.engines.hand:
        raise WatcherError(
            f"{cfg.path}: [engines] key 'hand' already names {cfg.engines.hand}: edit that copy"
            f" (watcher rebuilds {cfg.engines.glance} from it each cycle)"
        )
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    span = find_table(lines)
    assert span is not None
    hand = cfg.resolve(HAND)
    if hand.exists() and hand.read_text(encoding="utf-8") != text:
        raise WatcherError(f"{hand} exists and differs from {path}: move it away, then adopt")
    glance = os.path.relpath(path.resolve(), cfg.base_dir.resolve())
    config = cfg.path.read_text(encoding="utf-8")
    header = re.search(r"^\[engines\][ \t]*$", config, re.M)
    if header:
        new_config = config[: header.end()] + f"\nhand = {_toml(HAND)}" + config[header.end() :]
        added = "key"
    else:
        block = f"[engines]\nhand = {_toml(HAND)}\n"
        if glance != "docs/engines/README.md":
            block += f"glance = {_toml(glance)}\n"
        head = "\n# the engine pages and the At-a-glance table (watcher init --adopt)\n"
        new_config = config.rstrip("\n") + "\n" + head + block
        added = "table"
    diff = "\n".join(
        difflib.unified_diff(
            config.splitlines(), new_config.splitlines(), str(cfg.path), str(cfg.path), lineterm=""
        )
    )
    done = GlanceAdoption(path, hand, span[1] - span[0] - 1, added, diff, not dry_run)
    if dry_run:
        return done
    atomic_write(hand, text)  # first: the config below names it
    try:
        parse_config(new_config, cfg.path)  # never leave a watch.toml that does not load
    except WatcherError:
        hand.unlink()
        raise
    atomic_write(cfg.path, new_config)
    marker = f"\n{GENERATED_MARKER} from {HAND} until the next check. Edit that copy. -->\n"
    atomic_write(path, text.rstrip("\n") + "\n" + marker)
    return done


def describe(done: GlanceAdoption) -> list[str]:
    """The lines `init --adopt` prints on stderr."""
    what = "added [engines] to" if done.config_added == "table" else "set [engines] hand in"
    if not done.written:
        return [f"dry run: would keep {done.path} in {done.hand} and change watch.toml:", done.diff]
    return [
        f"kept {done.path} word for word in {done.hand} ({done.rows} rows in its table)",
        f"{what} watch.toml: each cycle rebuilds the table from it, with evidence where a smoke"
        " run measured a cell and the maintainers' cell, marked ✋, where none did",
    ]
