"""watch.toml for a test: the text written into a folder (its tmp_path) and loaded as watcher
loads it, relative paths resolved against that folder."""

from pathlib import Path

from watcher.config.load import load_config
from watcher.config.model import Config


def write_watch(folder: Path, text: str) -> Path:
    """`text` as `folder`/watch.toml (UTF-8); its path."""
    path = folder / "watch.toml"
    path.write_text(text, encoding="utf-8")
    return path


def load_watch(folder: Path, text: str) -> Config:
    """`text` written as `folder`/watch.toml, then loaded."""
    return load_config(write_watch(folder, text))
