"""`watcher init --adopt docs/UPSTREAM.md`: the guide's upstream tracker becomes the watch list.

A file is taken for a tracker by its shape (watcher.config.tracker.looks_like_tracker: a table
with a Status or Trigger-to-revisit column whose rows link to GitHub) when no [[page]] writes
it. Every issue, pull-request, discussion and commit link in its rows becomes an `[[item]]`
appended to watch.toml (one already watched is reused, never doubled), and `[tracker]` is added
when missing. Nothing is removed: running it again after the maintainers added rows adds their
items only. Rows without a link are kept in the tracker and shown as not trackable. The tracker
file itself is only read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from watcher.config.load import parse_config
from watcher.config.model import Config
from watcher.config.tracker import Link, Row, parse_tracker, plain
from watcher.core.errors import WatcherError
from watcher.core.files import atomic_write
from watcher.judge.audit import item_for


@dataclass
class TrackerAdoption:
    """What `adopt_tracker` did, for the CLI to say."""

    path: Path
    rows: int = 0
    added: list[str] = field(default_factory=list)  # new item ids
    watched: list[str] = field(default_factory=list)  # links already on the watch list
    untrackable: int = 0  # rows without a GitHub link
    tracker_table: bool = False  # [tracker] was added


def item_id(link: Link, taken: set[str]) -> str:
    """`<repo name>-<number>` (vllm-45295), the owner prefixed when that name is taken."""
    owner, _, name = link.repo.lower().partition("/")
    ref = link.ref[:8] if link.kind == "commit" else link.ref
    for base in (f"{name}-{ref}", f"{owner}-{name}-{ref}"):
        ident = re.sub(r"[^a-z0-9._-]+", "-", base).strip("-")
        if ident not in taken:
            return ident
    n = 2
    while f"{ident}-{n}" in taken:
        n += 1
    return f"{ident}-{n}"


def label_for(row: Row) -> str:
    """The row's first cell as words, without the link text (its title as the maintainers say)."""
    first = plain(row.cells[0].text) if row.cells else ""
    first = re.sub(r"^#\d+\s*[—–-]\s*", "", first)
    return first[:100]


def toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def adopt_tracker(cfg: Config, path: Path) -> TrackerAdoption:
    """Append an [[item]] for every new issue or pull link of the tracker, and [tracker]."""
    tracker = parse_tracker(path)
    out = TrackerAdoption(path=path, rows=len(tracker.rows))
    text = cfg.path.read_text(encoding="utf-8")
    blocks: list[str] = []
    taken = {i.id for i in cfg.items}
    new: dict[tuple[str, int | str | None], str] = {}
    for row in tracker.rows:
        if not row.links:
            out.untrackable += 1
        for link in row.links:
            key = (link.repo.lower(), link.number if link.kind != "commit" else link.ref)
            known = item_for(cfg, link) or new.get(key)
            if known:
                if known not in out.watched and known not in out.added:
                    out.watched.append(known)
                continue
            ident = item_id(link, taken)
            taken.add(ident)
            new[key] = ident
            out.added.append(ident)
            blocks.append(
                "[[item]]\n"
                f"id = {toml_string(ident)}\n"
                f"repo = {toml_string(link.repo)}\n"
                f'kind = "{link.kind}"\n'
                + (f"sha = {toml_string(link.ref)}\n" if link.kind == "commit" else "")
                + (f"number = {link.number}\n" if link.kind != "commit" else "")
                + f"label = {toml_string(label_for(row))}\n"
            )
    if cfg.tracker is None:
        source = os.path.relpath(path.resolve(), cfg.base_dir)
        blocks.insert(0, f"[tracker]\nsource = {toml_string(source)}\n")
        out.tracker_table = True
    if blocks:
        head = "\n# from the upstream tracker (watcher init --adopt)\n"
        new_text = text.rstrip("\n") + "\n" + head + "\n".join(blocks)
        parse_config(new_text, cfg.path)  # never leave a watch.toml that does not load
        atomic_write(cfg.path, new_text)
    return out


def describe(done: TrackerAdoption) -> list[str]:
    """The lines `init --adopt` prints on stderr."""
    lines = [
        f"read {done.rows} rows of {done.path}: {_n(len(done.added), 'item')} added to watch.toml,"
        f" {len(done.watched)} already watched, {done.untrackable} rows without a GitHub link"
        " (kept, shown as not trackable)"
    ]
    if done.tracker_table:
        lines.append("added [tracker] to watch.toml: each cycle writes the audited copy beside it")
    if not done.added and not done.tracker_table:
        lines.append("nothing new: every issue and pull link of the tracker is already watched")
    return lines


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def is_tracker(path: Path) -> bool:
    from watcher.config.tracker import looks_like_tracker

    try:
        return looks_like_tracker(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise WatcherError(f"{path}: cannot read it ({e})") from None
