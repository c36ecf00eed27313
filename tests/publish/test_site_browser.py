"""The status site in a real Chromium (Debian's), from file://, with nothing leaving the machine.

Skipped only where /usr/bin/chromium is missing and CI is not set; under CI it must run.
Screenshots land in test-artifacts/ (gitignored) for a person to look at.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from kits.site_seed import REPO, make_config, seed

from watcher.publish.site import build_site

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = REPO / "test-artifacts"

pytestmark = pytest.mark.browser


def _playwright():
    if not CHROMIUM.exists() and not os.environ.get("CI"):
        pytest.skip("Debian's chromium is not installed (/usr/bin/chromium); CI installs it")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("the playwright Python package is not installed")
    return sync_playwright


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser-site")
    cfg = make_config(root)
    last = seed(cfg, hostile=True)
    build_site(cfg, now=last + timedelta(minutes=7))
    # The stored items were read 2 h before the last cycle: that is when the page says it checked.
    return cfg, last - timedelta(hours=2)


def _open(p, tmp_path: Path, scheme: str, viewport: dict, at):
    """A fresh profile each time; every request that is not file:// is recorded and aborted."""
    ctx = p.chromium.launch_persistent_context(
        str(tmp_path / f"profile-{scheme}-{viewport['width']}"),
        executable_path=str(CHROMIUM),
        args=ARGS,
        headless=True,
        color_scheme=scheme,
        viewport=viewport,
        offline=True,
    )
    outside: list[str] = []
    errors: list[str] = []

    def route(r):
        url = r.request.url
        if url.startswith(("file://", "data:")):
            r.continue_()
        else:
            outside.append(url)
            r.abort()

    ctx.route("**/*", route)
    page = ctx.new_page()
    page.clock.install(time=at)
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return ctx, page, outside, errors


def test_index_in_chromium_light_dark_desktop_phone(built_site, tmp_path):
    sync_playwright = _playwright()
    cfg, checked = built_site
    ARTIFACTS.mkdir(exist_ok=True)
    index = (cfg.site_dir / "index.html").as_uri()
    with sync_playwright() as p:
        for scheme in ("light", "dark"):
            for name, viewport in (
                ("desktop", {"width": 1280, "height": 900}),
                ("phone", {"width": 390, "height": 844}),
            ):
                at = checked + timedelta(minutes=10)
                ctx, page, outside, errors = _open(p, tmp_path, scheme, viewport, at)
                try:
                    page.goto(index)
                    page.wait_for_load_state("load")
                    assert page.locator("h1").first.is_visible()
                    status = page.locator("#pages ~ .cards .pill").first
                    assert status.is_visible() and status.inner_text() == "blocked"
                    assert page.get_by_text("Last read from GitHub").is_visible()
                    assert page.locator("#freshness .ago").inner_text() == "10 minutes ago"
                    assert not page.locator("#stale-warning").is_visible()
                    assert page.locator("img[src='badge/sglang.svg']").evaluate(
                        "img => img.complete && img.naturalWidth > 0"
                    )
                    overflow = page.evaluate(
                        "document.documentElement.scrollWidth - window.innerWidth"
                    )
                    assert overflow <= 0, f"{overflow}px of horizontal scroll on {name}"
                    # No column off screen: on a phone each row is a card of labelled cells.
                    off = page.evaluate(
                        """() => [...document.querySelectorAll('table.stack td')]
                            .map(td => td.getBoundingClientRect())
                            .filter(r => r.left < 0 || r.right > window.innerWidth + 0.5)
                            .length"""
                    )
                    assert off == 0, f"{off} key cells off screen on {name}"
                    page.screenshot(
                        path=str(ARTIFACTS / f"site-index-{scheme}-{name}.png"),
                        full_page=name == "desktop",
                    )
                    # Later, with no new check: the script turns the line into a warning.
                    page.clock.run_for(3 * 3600 * 1000)
                    assert page.locator("#stale-warning").is_visible()
                    assert "3 hours ago" in page.locator("#stale-warning").inner_text()
                finally:
                    ctx.close()
                assert outside == [], f"requests left file://: {outside}"
                assert errors == [], f"console errors: {errors}"


def test_document_and_item_pages_in_chromium(built_site, tmp_path):
    sync_playwright = _playwright()
    cfg, checked = built_site
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        ctx, page, outside, errors = _open(
            p, tmp_path, "dark", {"width": 390, "height": 844}, checked + timedelta(days=2)
        )
        try:
            page.goto((cfg.site_dir / "index.html").as_uri())
            page.get_by_role("link", name="SGLang", exact=True).click()
            page.wait_for_load_state("load")
            assert page.url.endswith("/page/sglang.html")
            assert page.locator("article.doc h1").inner_text().startswith("SGLang")
            assert page.locator("article.doc table").count() >= 2  # Pros, Cons
            assert page.locator("#stale-warning").is_visible()  # two days without a check
            page.screenshot(path=str(ARTIFACTS / "site-document-dark-phone.png"))
            page.goto((cfg.site_dir / "item" / "vllm-40361.html").as_uri())
            assert page.get_by_role("heading", name="State history").is_visible()
            assert page.locator("tbody tr").count() == 3
        finally:
            ctx.close()
        assert outside == [], f"requests left file://: {outside}"
        assert errors == [], f"console errors: {errors}"


def test_matrix_page_in_chromium_desktop_and_phone(built_site, tmp_path):
    """The engines × rigs matrix: readable at 1280 and 390 px, every cell's evidence reachable."""
    sync_playwright = _playwright()
    cfg, checked = built_site
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        for name, viewport in (
            ("desktop", {"width": 1280, "height": 900}),
            ("phone", {"width": 390, "height": 844}),
        ):
            ctx, page, outside, errors = _open(p, tmp_path, "light", viewport, checked)
            dialogs: list[str] = []
            page.on("dialog", lambda d, seen=dialogs: (seen.append(d.message), d.dismiss()))
            try:
                page.goto((cfg.site_dir / "index.html").as_uri())
                page.get_by_role("link", name="Engines at a glance").first.click()
                page.wait_for_load_state("load")
                assert page.url.endswith("/matrix.html")
                assert page.locator("h1").inner_text() == "Engines at a glance"
                cells = page.locator("table.matrix td")
                assert cells.count() >= 2
                # never blank: every cell says something
                assert all(t.strip() for t in cells.all_inner_texts())
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 0, f"{overflow}px of horizontal scroll on {name}"
                off = page.evaluate(
                    """() => [...document.querySelectorAll('table.matrix td')]
                        .map(td => td.getBoundingClientRect())
                        .filter(r => r.left < 0 || r.right > window.innerWidth + 0.5).length"""
                )
                assert off == 0, f"{off} matrix cells off screen on {name}"
                links = page.locator("table.matrix td a")
                assert links.count() >= 1
                target = links.first.get_attribute("href")
                links.first.click()
                box = page.locator(target).bounding_box()
                assert box is not None and -1 <= box["y"] < viewport["height"]  # scrolled to it
                page.screenshot(
                    path=str(ARTIFACTS / f"site-matrix-{name}.png"), full_page=name == "desktop"
                )
            finally:
                ctx.close()
            assert outside == [], f"requests left file://: {outside}"
            assert errors == [], f"console errors: {errors}"
            assert dialogs == []


# Words (runs of letters and digits) the browser split across two lines, inside `root`; code
# blocks scroll on their own and are left out. A word wider than the whole line by itself may
# still break (a long path), so only words narrower than their block count.
SPLIT_WORDS = """(root) => {
  const out = [];
  const walker = document.createTreeWalker(document.querySelector(root), NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (node.parentElement.closest('pre')) continue;
    const box = node.parentElement.closest('td, th, p, li, h1, h2, h3, dd, blockquote');
    const width = box ? box.getBoundingClientRect().width : window.innerWidth;
    for (const m of node.textContent.matchAll(/[\\p{L}\\p{N}]+/gu)) {
      const r = document.createRange();
      r.setStart(node, m.index);
      r.setEnd(node, m.index + m[0].length);
      const rects = [...r.getClientRects()].filter(x => x.width > 0);
      const tops = new Set(rects.map(x => Math.round(x.top)));
      const wide = rects.reduce((a, x) => a + x.width, 0);
      if (tops.size > 1 && wide < width) out.push(m[0]);
    }
  }
  return out;
}"""


def test_the_page_and_an_item_page_fit_a_phone(built_site, tmp_path):
    """At 390 px the rendered SGLANG.md and an item page scroll only down, and no word is
    broken in the middle; screenshots of the page at 1280 and 390 px go to test-artifacts/."""
    sync_playwright = _playwright()
    cfg, checked = built_site
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        for width in (1280, 390):
            ctx, page, outside, errors = _open(
                p, tmp_path, "light", {"width": width, "height": 844}, checked
            )
            try:
                for path, root in (
                    (cfg.site_dir / "page" / "sglang.html", "article.doc"),
                    (cfg.site_dir / "item" / "sglang-autoround-mapping.html", "main"),
                ):
                    page.goto(path.as_uri())
                    page.wait_for_load_state("load")
                    overflow = page.evaluate(
                        "document.documentElement.scrollWidth - window.innerWidth"
                    )
                    assert overflow <= 0, f"{overflow}px of horizontal scroll in {path.name}"
                    split = page.evaluate(SPLIT_WORDS, root)
                    assert split == [], f"words broken mid-word in {path.name} at {width}: {split}"
                    if path.parent.name == "page":
                        page.screenshot(
                            path=str(ARTIFACTS / f"page-sglang-{width}.png"), full_page=True
                        )
                        if width == 390:  # every table of the page is a stack of cards
                            tables = page.locator("article.doc table")
                            assert tables.count() >= 2
                            assert tables.evaluate_all(
                                "ts => ts.every(t => t.classList.contains('stack'))"
                            )
            finally:
                ctx.close()
            assert outside == [], f"requests left file://: {outside}"
            assert errors == [], f"console errors: {errors}"
