"""Adopting a tracker's links: each new link its own item, under an id nobody has (issue 32's
mutation set: two slips that passed the adoption tests)."""

from __future__ import annotations

from pathlib import Path

from watcher.config.load import load_config
from watcher.config.tracker import Link
from watcher.onboard.adopt_tracker import adopt_tracker, item_id

A, B = "a" * 40, "b" * 40


def test_a_taken_id_gets_the_owner_then_a_number():
    link = Link(
        "vllm-project/vllm", "pull", "45295", "https://github.com/vllm-project/vllm/pull/45295"
    )
    assert item_id(link, set()) == "vllm-45295"
    assert item_id(link, {"vllm-45295"}) == "vllm-project-vllm-45295"
    assert item_id(link, {"vllm-45295", "vllm-project-vllm-45295"}) == "vllm-project-vllm-45295-2"


def test_two_commits_of_one_repository_are_two_items(tmp_path: Path):
    (tmp_path / "watch.toml").write_text('[watcher]\ndata_dir = "data"\n', encoding="utf-8")
    u = "https://github.com/ggml-org/llama.cpp/commit"
    (tmp_path / "tracker.md").write_text(
        "| Issue / PR | Status |\n|---|---|\n"
        f"| [one]({u}/{A}) | 🔵 Merged |\n| [two]({u}/{B}) | 🔵 Merged |\n",
        encoding="utf-8",
    )
    done = adopt_tracker(load_config(tmp_path / "watch.toml"), tmp_path / "tracker.md")
    assert done.added == ["llama.cpp-aaaaaaaa", "llama.cpp-bbbbbbbb"]
    cfg = load_config(tmp_path / "watch.toml")
    assert [(i.kind, i.sha) for i in cfg.items] == [("commit", A), ("commit", B)]
