"""Rendering: hostile upstream text stays inert, secrets never land, templates ship in the wheel."""

from __future__ import annotations

import importlib.util
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from watcher.core.files import atomic_write
from watcher.core.redact import redact
from watcher.publish.page import code_block, md_escape, safe_url, shell_join
from watcher.publish.site import write_site
from watcher.store.db import Store

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "hostile, forbidden",
    [
        ("<script>alert(1)</script>", "<script"),
        ("[click](javascript:alert(1))", "<a"),
        ("![x](http://evil.example/t.png)", "<img"),
        ("<img src=x onerror=alert(1)>", "<img"),
        ("**bold** _em_ `code`", "<strong"),
        ("line\nbreak | table", "<td>table"),
        ("bell\x07 and bidi \u202e override", "\x07"),
    ],
)
def test_md_escape_makes_markup_inert(hostile, forbidden):
    """Rendered as Markdown (as GitHub and the site do), the text stays text."""
    import markdown

    out = md_escape(hostile)
    assert "\n" not in out and "\x07" not in out and "\u202e" not in out
    html = markdown.markdown(f"| a |\n|---|\n| {out} |", extensions=["tables"])
    assert forbidden not in html.replace("<table", "").replace("<thead", "").replace("<tbody", "")


def test_md_escape_bounds_length():
    assert len(md_escape("x" * 10_000, limit=50)) <= 50


def test_safe_url_only_http():
    assert safe_url("https://github.com/o/r/pull/1") == "https://github.com/o/r/pull/1"
    assert safe_url("javascript:alert(1)") == "#"
    assert safe_url("data:text/html,hi") == "#"
    assert safe_url(None) == "#"


def test_code_block_cannot_be_closed_by_its_content():
    block = code_block("before\n```\n<script>x</script>\n```")
    fence = block.splitlines()[0].removesuffix("text")
    assert len(fence) > 3 and block.rstrip().endswith(fence)


def test_redact_tokens(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "s3cr3t-value-123")
    text = (
        "auth s3cr3t-value-123 ghp_abcdefghijklmnopqrstuvwxyz0123 "
        "github_pat_11ABCDEFG0123456789_abcdefghijkl hf_abcdefghijklmnopqrstuvwx"
    )
    out = redact(text)
    for secret in ("s3cr3t-value-123", "ghp_abc", "github_pat_11", "hf_abcdef"):
        assert secret not in out


def test_shell_join_is_display_only_and_quotes():
    shown = shell_join(["python", "-m", "x", "--name", "a b; rm -rf /"])
    assert "'a b; rm -rf /'" in shown


@pytest.mark.slow
def hatchling_present() -> bool:
    return importlib.util.find_spec("hatchling") is not None


def test_wheel_ships_templates_and_default_config(tmp_path):
    """Templates must be found from an installed wheel, not only from a checkout."""
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0 and not hatchling_present() and os.environ.get("CI") != "true":
        pytest.skip("hatchling is not installed (pip install -e '.[test]' brings it)")
    # with hatchling there (or under CI), a failed build is a broken package, never a skip
    assert r.returncode == 0, r.stderr[-2000:]
    wheel = next(tmp_path.glob("upstream_blocker_watcher-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "watcher/templates/sglang.md.j2" in names
    assert "watcher/default_watch.toml" in names
    assert "watcher/fakes/scenarios/real_threads.json" in names  # the demo's seed data
    # install it into an isolated target and render from there, away from the checkout
    target = tmp_path / "site-packages"
    zipfile.ZipFile(wheel).extractall(target)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(target))
    code = (
        "import watcher.publish.page as r, watcher.config.load as c; "
        "print(r.package_templates()); print(len(c.default_config_text())); "
        "from watcher.fakes.github import FakeGitHub; from watcher.fakes.scenarios import load; "
        "gh = FakeGitHub(); load(gh, 'real_threads'); gh.stop(); print(sorted(gh._repos))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert str(target) in out.stdout
    assert "vllm-project/vllm" in out.stdout


# ---------------------------------------------------------------- file modes


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_pages_and_site_files_are_readable_as_the_umask_allows(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        page = tmp_path / "ENGINE.md"
        assert atomic_write(page, "# page\n")
        write_site(tmp_path / "site", {"index.html": "<p>", "page/x.html": "<p>"})
        store = Store(tmp_path / "data" / "watcher.db")
        store.add_event("2026-12-01T00:00:00Z", None, "item", "x", None, "open", "m")
        store.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(page.stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "site" / "index.html").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "site").stat().st_mode) == mode | 0o111 & ~mask
    db_files = list((tmp_path / "data").glob("watcher.db*"))
    assert db_files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in db_files)
