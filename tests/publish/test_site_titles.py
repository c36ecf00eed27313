"""The site speaks in titles (issue 33, item 20): page and blocker cards, the timeline, the feed's
entry titles and the evidence name recipes, blockers and items as readers know them, and a
generated document's site page says "Last read from GitHub" once, under the site's own line."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

import pytest
from kits.site_seed import make_config, seed

from watcher.publish.prose import titled
from watcher.publish.site import build_site

ATOM = "{http://www.w3.org/2005/Atom}"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    cfg = make_config(tmp_path_factory.mktemp("site"))
    seed(cfg)
    build_site(cfg)
    return cfg


def ids_of(cfg) -> list[str]:
    ids = [r.id for r in cfg.recipes] + [b.id for b in cfg.blockers]
    return ids + [i.id for i in cfg.items if i.kind == "code"]


def shown(fragment: str) -> str:
    """Text a reader sees: no tags, no attributes (hrefs and anchors keep their ids)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment))


def has_id(text: str, ident: str) -> bool:
    return re.search(rf"(?<![\w/.-]){re.escape(ident)}(?![\w-])", text) is not None


def test_page_and_blocker_cards_name_recipes_and_blockers_by_title(built):
    index = (built.site_dir / "index.html").read_text()
    pages = shown(index[index.index('id="pages"') : index.index('id="blockers"')])
    assert "“SGLang, TP=1, MTP spec-decode (NEXTN)” by “Marlin crash at load" in pages
    blockers = index[index.index('id="blockers"') : index.index('id="runs"')]
    reasons = " ".join(shown(p) for p in re.findall(r"<article.*?<p>(.*?)</p>", blockers, re.S))
    assert "waiting for one of: “SGLang's OffloaderV1 handles tied weights”" in reasons
    evidence = shown(blockers)
    assert re.search(r"smoke run\s+run-\d+\s+of SGLang, TP=1, no spec-decode on 2026", evidence)
    for ident in ids_of(built):
        assert not has_id(pages, ident), ident
        assert not has_id(reasons, ident), ident


def test_feed_titles_and_the_timeline_use_titles(built):
    feed = ET.parse(built.site_dir / "feed.xml").getroot()
    titles = [e.findtext(f"{ATOM}title") for e in feed.iter(f"{ATOM}entry")]
    assert "SGLang page: blocked" in titles
    assert "Marlin crash at load: in_proj_ba routed to GPTQ-Marlin: still fails" in titles
    index = (built.site_dir / "index.html").read_text()
    timeline = shown(index[index.index('class="timeline"') :])
    for text in (*titles, timeline):
        assert not re.search(r"^(?:page|blocker|item|smoke) [\w-]+:", text or ""), text
        for ident in ids_of(built):
            assert not has_id(text or "", ident), (ident, text)


def test_a_documents_site_page_says_last_read_once(built):
    for page in built.pages:
        doc = (built.site_dir / "page" / f"{page.id}.html").read_text()
        assert doc.count("Last read from GitHub") == 1, page.id
    page = built.resolve(built.pages[0].output).read_text()
    assert page.count("Last read from GitHub") == 1  # the Markdown page keeps its own
    doc = (built.site_dir / "page" / "sglang.html").read_text()
    assert "Status: blocked" in doc and "needs attention" in doc  # the rest of the quote stays


def test_titled_leaves_words_that_only_contain_an_id(built):
    cfg = built
    text = "page sglang: sgl-project/sglang and sglang.launch_server; marlin-pad-x, marlin-pad."
    assert titled(cfg, text) == (
        "page SGLang: sgl-project/sglang and sglang.launch_server; marlin-pad-x,"
        " “Marlin crash at load: in_proj_ba routed to GPTQ-Marlin”."
    )
