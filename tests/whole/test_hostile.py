"""Hostile input: upstream text is inert everywhere, and secrets never land in any written file."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from watcher.config.load import load_config
from watcher.fakes.github import FakeGitHub
from watcher.fakes.scenarios import load, real_threads
from watcher.github.client import GitHubClient
from watcher.loop.cycle import run_cycle

REPO = Path(__file__).resolve().parents[2]
TOKEN = "ghp_KnownTestToken0123456789abcdefABCDEF"
HOSTILE_TITLE = (
    '<script>alert("x")</script> [click me](javascript:alert(1)) <img src=x onerror=alert(2)> '
    "\x1b[31mred\x1b[0m \u202eevil\u202c ghp_LeakedTokenInTitle0123456789abcdef " + "Ω≈ç√∫" * 200
)


def written_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and p.name != "watch.toml"]


def test_full_cycle_with_hostile_titles_leaks_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    with FakeGitHub(tokens={TOKEN: "watcher-bot"}) as gh:
        real_threads(gh)
        load(gh, "sglang_code")
        gh.update("vllm-project/vllm", 40124, title=HOSTILE_TITLE)
        gh.add_commit(
            "fla-org/flash-linear-attention",
            message=HOSTILE_TITLE.replace("ghp_", "rollback ghp_"),
            date="2026-09-01T00:00:00Z",
            files=["fla/ops/gated_delta_rule/chunk.py"],
        )
        cfg = load_config(tmp_path / "watch.toml")
        report = run_cycle(cfg, client=GitHubClient(gh.url), no_smoke=True)
        assert report.item_errors == {}
        assert any(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in gh.requests)
    files = written_files(tmp_path)
    assert any(p.suffix == ".db" for p in files) and any(p.name == "SGLANG.md" for p in files)
    for path in files:
        data = path.read_bytes()
        assert TOKEN.encode() not in data, path
    page = (tmp_path / "docs" / "engines" / "SGLANG.md").read_text()
    assert "<script" not in page and "<img" not in page
    assert not re.search(r"(?<!\\)\]\(javascript:", page)  # only an escaped, inert bracket
    assert "\x1b" not in page and "\u202e" not in page
    assert "ghp_LeakedTokenInTitle" not in page
    import markdown

    html = markdown.markdown(page, extensions=["tables", "fenced_code"])
    assert "<script" not in html and "javascript:" not in html.replace("javascript:alert(1))", "")
    assert 'href="javascript' not in html and "<img" not in html


def test_token_never_in_env_dump_or_errors(tmp_path, monkeypatch):
    """A revoked token (401) is reported without echoing the token."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    with FakeGitHub(tokens={"other": "someone"}) as gh:
        real_threads(gh)
        load(gh, "sglang_code")
        report = run_cycle(
            load_config(tmp_path / "watch.toml"), client=GitHubClient(gh.url), no_smoke=True
        )
    assert report.item_errors and all("401" in e for e in report.item_errors.values())
    for path in written_files(tmp_path):
        assert TOKEN.encode() not in path.read_bytes(), path
    assert os.environ["GITHUB_TOKEN"] == TOKEN
