"""The static status site: escaping, Atom, SVG, atomic swap, determinism, freshness, CLI."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from kits.site_seed import HOSTILE, make_config, seed, smoke_doc

from watcher.cli import cli
from watcher.core.clock import iso
from watcher.core.errors import WatcherError
from watcher.loop.cycle import run_cycle
from watcher.publish import site as site_mod
from watcher.publish.context import feed_base
from watcher.publish.site import build_site, markdown_to_html, render_site
from watcher.store.db import Store

ATOM = "{http://www.w3.org/2005/Atom}"
SVG = "{http://www.w3.org/2000/svg}"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


class Tags(HTMLParser):
    """Every start tag with its attributes, to look for scripts and handlers."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture
def hostile(tmp_path):
    cfg = make_config(tmp_path)
    last = seed(cfg, hostile=True)
    build_site(cfg, now=last + timedelta(minutes=7))
    return cfg


def test_hostile_text_is_inert_in_every_html_file(hostile):
    files = tree(hostile.site_dir)
    html = {k: v.decode() for k, v in files.items() if k.endswith(".html")}
    assert {"index.html", "page/sglang.html", "item/vllm-40124.html"} <= set(html)
    for name, text in html.items():
        tags = Tags(text).tags
        scripts = [t for t, _ in tags if t == "script"]
        assert len(scripts) == (0 if name.startswith("item/") else 1), name  # ours only
        assert not [t for t, a in tags if t == "img" and not a.get("src", "").startswith("badge/")]
        for tag, attrs in tags:
            assert not any(k.startswith("on") for k in attrs), (name, tag, attrs)
            for key in ("href", "src"):
                value = (attrs.get(key) or "").strip().lower()
                assert not value.startswith(("javascript:", "data:text", "vbscript:")), (name, tag)
        assert "\x07" not in text and "\x1b" not in text, name
    assert "&lt;script&gt;alert(&#34;title&#34;)&lt;/script&gt;" in html["index.html"]
    assert "&lt;script&gt;alert(&#34;title&#34;)" in html["item/vllm-40124.html"]
    # The document page: the hostile title arrives through SGLANG.md's Markdown.
    assert "&lt;script&gt;alert(" in html["page/sglang.html"]
    assert "[click me](javascript:alert(2))" in html["page/sglang.html"]  # shown as text
    assert "&lt;/code&gt;&lt;/pre&gt;&lt;b&gt;x&lt;/b&gt;" in html["index.html"]  # log excerpt


def test_hostile_text_is_inert_in_sglang_md_and_feed(hostile):
    md = (hostile.base_dir / "docs/engines/SGLANG.md").read_text()
    assert HOSTILE not in md
    assert "RuntimeError" not in md  # log excerpts are on the site, never on the reader's page
    assert not re.search(r"(?<!\\)<(script|img)", md)  # only backslash-escaped, inert
    assert not re.search(r"(?<!\\)\]\(javascript:", md)  # the link's brackets are escaped
    assert "&lt;script&gt;" in md or r"\<script\>" in md
    feed = (hostile.site_dir / "feed.xml").read_text()
    ET.fromstring(feed)  # control characters would make this raise
    assert "<script>" not in feed and "&lt;script&gt;" in feed


def test_feed_is_atom_with_stable_ids(hostile):
    root = ET.parse(hostile.site_dir / "feed.xml").getroot()
    assert root.tag == f"{ATOM}feed"
    for name in ("id", "title", "updated"):
        assert (root.findtext(f"{ATOM}{name}") or "").strip(), name
    assert RFC3339.match(root.findtext(f"{ATOM}updated"))
    assert root.find(f"{ATOM}author/{ATOM}name") is not None
    entries = root.findall(f"{ATOM}entry")
    store = Store(hostile.db_path)
    try:
        events = store.events()
    finally:
        store.close()
    assert len(entries) == len(events) > 3
    ids = [e.findtext(f"{ATOM}id") for e in entries]
    assert len(set(ids)) == len(ids)
    for e in entries:
        assert e.findtext(f"{ATOM}id").startswith(f"{feed_base(hostile)}event/")
        assert e.findtext(f"{ATOM}title").strip()
        assert RFC3339.match(e.findtext(f"{ATOM}updated"))
    assert root.findtext(f"{ATOM}updated") == max(e.findtext(f"{ATOM}updated") for e in entries)

    # A new event adds an entry; every earlier entry keeps its id.
    store = Store(hostile.db_path)
    try:
        store.add_event(
            "2026-11-29T00:00:00Z", None, "item", "vllm-40124", "open", "completed", "x"
        )
    finally:
        store.close()
    build_site(hostile, now=hostile_now())
    again = ET.parse(hostile.site_dir / "feed.xml").getroot().findall(f"{ATOM}entry")
    new_ids = [e.findtext(f"{ATOM}id") for e in again]
    assert new_ids[1:] == ids and new_ids[0] not in ids


def hostile_now():
    from kits.site_seed import T0

    return T0 + timedelta(days=9)


def test_badge_is_valid_svg(hostile):
    root = ET.parse(hostile.site_dir / "badge/sglang.svg").getroot()
    assert root.tag == f"{SVG}svg"
    assert int(root.get("width")) > 40 and root.get("height") == "20"
    assert root.findtext(f"{SVG}title") == "SGLang: blocked"
    assert root.get("role") == "img" and root.get("aria-label") == "SGLang: blocked"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert texts == ["SGLang", "blocked"]


def test_failed_render_leaves_the_previous_site_whole(hostile, monkeypatch):
    before = tree(hostile.site_dir)

    def boom(*a, **kw):
        raise RuntimeError("template exploded")

    monkeypatch.setattr(site_mod, "markdown_to_html", boom)
    with pytest.raises(RuntimeError, match="template exploded"):
        build_site(hostile, now=hostile_now())
    assert tree(hostile.site_dir) == before
    assert [p.name for p in hostile.site_dir.parent.iterdir() if p.name.startswith(".site")] == []


def test_failed_write_leaves_the_previous_site_whole(hostile, monkeypatch):
    before = tree(hostile.site_dir)
    real = site_mod.render_site

    def half_writable(*a, **kw):
        files = real(*a, **kw)
        files["index.html/oops"] = "index.html is a file, so this write fails midway"
        return files

    monkeypatch.setattr(site_mod, "render_site", half_writable)
    with pytest.raises(OSError):
        build_site(hostile, now=hostile_now())
    assert tree(hostile.site_dir) == before
    assert [p.name for p in hostile.site_dir.parent.iterdir() if p.name.startswith(".site")] == []


def test_swap_replaces_old_files_and_keeps_cname(hostile):
    (hostile.site_dir / "CNAME").write_text("status.example.org\n")
    (hostile.site_dir / "item/gone.html").write_text("from an item no longer configured")
    build_site(hostile, now=hostile_now())
    assert (hostile.site_dir / "CNAME").read_text() == "status.example.org\n"
    assert not (hostile.site_dir / "item/gone.html").exists()
    assert (hostile.site_dir / "index.html").is_file()


def test_same_database_renders_the_same_bytes(tmp_path):
    cfg = make_config(tmp_path)
    last = seed(cfg)
    store = Store(cfg.db_path)
    try:
        one = render_site(cfg, store, now=last + timedelta(minutes=5))
        two = render_site(cfg, store, now=last + timedelta(minutes=5))
        later_at = last + timedelta(hours=5, seconds=17)
        later = render_site(cfg, store, now=later_at)
    finally:
        store.close()
    assert one == two
    assert one.keys() == later.keys()
    differing = 0
    for name in one:
        a, b = one[name].splitlines(), later[name].splitlines()
        assert len(a) == len(b), name
        for x, y in zip(a, b, strict=True):
            if x != y:
                differing += 1
                assert "data-volatile" in y or iso(later_at) in y, (name, x, y)
    assert differing > 0  # the generation time did change
    # And through the files on disk, via two real builds.
    build_site(cfg, now=last + timedelta(minutes=5))
    first = tree(cfg.site_dir)
    build_site(cfg, now=last + timedelta(minutes=5))
    assert tree(cfg.site_dir) == first


def test_freshness_turns_into_a_warning_when_checks_stop(tmp_path):
    cfg = make_config(tmp_path)
    last = seed(cfg)
    store = Store(cfg.db_path)
    try:
        fresh = render_site(cfg, store, now=last + timedelta(minutes=5))["index.html"]
        old = render_site(cfg, store, now=last + timedelta(hours=2))["index.html"]
    finally:
        store.close()
    # The stored items were last read 2 hours before the last (offline) cycle.
    assert "2 hours ago" in fresh
    warning = re.compile(
        r'<div class="alert" id="stale-warning" role="alert" data-volatile( hidden)?>'
    )
    assert warning.search(fresh).group(1) is None  # 2 h 5 min > 6 × 5 min
    assert "4 hours ago" in old
    (tmp_path / "fresh").mkdir()
    cfg2 = make_config(tmp_path / "fresh")
    # A site built right after a check shows no warning.
    run_cycle(cfg2, offline=True, now=last)
    store = Store(cfg2.db_path)
    try:
        row = {"id": "vllm-40124", "kind": "issue", "repo": "vllm-project/vllm", "state": "open"}
        store.upsert_item(dict(row, checked_at=iso(last), details={}))
        recent = render_site(cfg2, store, now=last + timedelta(minutes=12))["index.html"]
    finally:
        store.close()
    assert "12 minutes ago" in recent
    assert warning.search(recent).group(1) == " hidden"
    assert "more than 6 × the 5 min interval" in recent


def test_item_page_shows_state_history(hostile):
    text = (hostile.site_dir / "item/vllm-40361.html").read_text()
    rows = re.findall(
        r"<tr>\s*<td>([^<]*)</td>\s*<td>[^<]*</td>\s*<td class=\"num\">(\d+)</td>\s*<td>(.*?)</td>",
        text,
        re.S,
    )
    states = [re.sub(r"<[^>]+>", "", r[2]).strip() for r in rows]
    assert states[0].startswith("closed, superseded by #45295")
    assert states[1].startswith("error HTTP 502")
    assert states[2] == "open"


def test_index_shows_status_blockers_runs_chart_and_timeline(hostile):
    text = (hostile.site_dir / "index.html").read_text()
    assert 'href="page/sglang.html"' in text and 'src="badge/sglang.svg"' in text
    assert "superseded by #45295 (merged); first in v0.24.0" in text
    assert "[Quant] TurboQuant KV cache compression" in text  # the real title beside the label
    assert 'role="img"' in text and "<polyline" in text  # the charts
    assert "Decode speed" in text and "accept length" in text
    assert "HTTP 503 from GitHub" in text  # the stale item and its error
    assert "off target" in text  # the H200 run
    assert 'id="timeline"' in text and "<main" in text and "<nav" in text
    assert 'href="http' not in text.split("<main", 1)[0]  # nothing external in the head


def test_markdown_rendering_keeps_tables_and_code_and_drops_html():
    src = (
        "# Title\n<!-- Generated -->\n<div onclick=x>raw</div>\n\n| a | b |\n|---|---|\n"
        "| x \\| y | 2 |\n\nMatching:\n- one\n- two\n\n"
        "[bad](javascript:alert(1)) [ok](https://x.org/a) [doc](OTHER.md) ![i](https://e/x.png)\n\n"
        "[e1](java&#115;cript:alert(1)) [e2](JAVASCRIPT:x) [e3](java&#9;script:x) [e4](data:text/html,x)\n\n"
        "```text\na < b </script>\n```\n"
    )
    out = str(markdown_to_html(src, {"OTHER.md": "other.html"}))
    assert '<table class="stack">' in out and '<td data-label="a">x | y</td>' in out
    assert "<ul>\n<li>one</li>" in out
    assert "&lt;div onclick=x&gt;raw&lt;/div&gt;" in out and "Generated" not in out
    assert 'href="javascript' not in out and '<span class="inert-link">bad</span>' in out
    for name in ("e1", "e2", "e3", "e4"):
        assert f'<span class="inert-link">{name}</span>' in out
    assert '<a href="https://x.org/a">ok</a>' in out and '<a href="other.html">doc</a>' in out
    assert "<img" not in out and "[image: i]" in out
    assert "a &lt; b &lt;/script&gt;" in out


def test_status_json_keeps_the_contract(hostile):
    doc = json.loads((hostile.site_dir / "status.json").read_text())
    assert set(doc) == {"generated_at", "pages", "blockers", "items", "runs", "pins"}
    assert doc["pages"][0]["id"] == "sglang" and doc["pages"][0]["status"] == "blocked"
    assert {"last_cycle", "last_checked", "interval_s", "smoke"} <= set(doc["runs"])
    assert len(doc["items"]) == len(hostile.items)


def test_cycle_builds_the_site_and_dry_run_writes_nothing(tmp_path):
    cfg = make_config(tmp_path)
    report = run_cycle(cfg, offline=True, dry_run=True)
    assert report.site_error is None and not cfg.site_dir.exists()
    report = run_cycle(cfg, offline=True)
    assert report.site_error is None
    assert (cfg.site_dir / "index.html").is_file() and (cfg.site_dir / "status.json").is_file()
    assert json.loads((cfg.site_dir / "status.json").read_text()) == report.status


def test_cycle_and_build_site_render_the_same_site(tmp_path):
    cfg = make_config(tmp_path)
    last = seed(cfg)
    from_cycle = tree(cfg.site_dir)
    build_site(cfg, now=last)
    rebuilt = tree(cfg.site_dir)
    assert from_cycle.keys() == rebuilt.keys()
    # status.json is the cycle's own document (its cycle row was not finished yet); all else equal.
    assert {k for k in from_cycle if from_cycle[k] != rebuilt[k]} <= {"status.json"}


def test_cycle_survives_a_site_failure(tmp_path, monkeypatch):
    cfg = make_config(tmp_path)
    run_cycle(cfg, offline=True)
    before = tree(cfg.site_dir)
    monkeypatch.setattr(site_mod, "markdown_to_html", lambda *a, **k: 1 / 0)
    report = run_cycle(cfg, offline=True)
    assert report.site_error and "ZeroDivisionError" in report.site_error
    assert tree(cfg.site_dir) == before
    store = Store(cfg.db_path)
    try:
        assert len(store.cycles()) == 2 and store.cycles()[0]["finished_at"]  # data kept
    finally:
        store.close()


def test_build_site_cli(tmp_path):
    cfg = make_config(tmp_path)
    seed(cfg)
    result = CliRunner().invoke(cli, ["build-site", "--config", str(cfg.path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(cfg.site_dir / "index.html")
    assert (cfg.site_dir / "feed.xml").is_file()


def test_refuses_to_replace_a_folder_that_is_not_a_site(tmp_path):
    cfg = make_config(tmp_path)
    seed(cfg)
    import shutil

    shutil.rmtree(cfg.site_dir)
    cfg.site_dir.mkdir()
    (cfg.site_dir / "notes.md").write_text("hand-written, must survive")
    with pytest.raises(WatcherError, match="not a watcher site"):
        build_site(cfg)
    assert (cfg.site_dir / "notes.md").read_text() == "hand-written, must survive"
    result = CliRunner().invoke(cli, ["build-site", "--config", str(cfg.path)])
    assert result.exit_code == 1 and "not a watcher site" in result.output


def test_a_malformed_smoke_run_document_does_not_break_the_site(tmp_path):
    cfg = make_config(tmp_path)
    last = seed(cfg)
    odd = {"gpus": ["an RTX 3090, probably"], "matches_target": False}
    store = Store(cfg.db_path)
    try:
        store.add_smoke_run(
            smoke_doc(90, "sglang-eagle-tp1", last, hardware=odd, metrics=["not", "a", "dict"])
        )
        doc = smoke_doc(91, "sglang-eagle-tp1", last, hardware=odd, started_at="yesterday")
        doc["metrics"].update(decode_tokens_per_s=float("nan"), accept_length="fast")
        store.add_smoke_run(doc)
    finally:
        store.close()
    build_site(cfg, now=last)
    text = (cfg.site_dir / "index.html").read_text()
    assert 'id="run-run-0090"' in text and 'id="run-run-0091"' in text


# ---------------------------------------------------------------- for readers


def _with_site_table(cfg, table: str):
    from watcher.config.load import load_config

    cfg.path.write_text(cfg.path.read_text() + "\n" + table)
    return load_config(cfg.path)


def test_title_and_links_back_to_the_guide_and_its_issue(tmp_path):
    cfg = make_config(tmp_path)
    cfg = _with_site_table(
        cfg,
        '[site]\ntitle = "SGLang on 3090s"\nguide_url = "https://github.com/club-3090/club-3090"\n'
        'issue_url = "https://github.com/club-3090/club-3090/issues/7"\n',
    )
    last = seed(cfg)
    build_site(cfg, now=last)
    for name in ("index.html", "page/sglang.html", "item/vllm-40361.html"):
        text = (cfg.site_dir / name).read_text()
        assert '<a class="brand" href="' in text and ">SGLang on 3090s</a>" in text, name
        assert '<a href="https://github.com/club-3090/club-3090">The guide</a>' in text, name
        assert 'href="https://github.com/club-3090/club-3090/issues/7">Tracking issue<' in text
    index = (cfg.site_dir / "index.html").read_text()
    assert (
        "<title>SGLang on 3090s — SGLang: blocked · Engines at a glance: blocked</title>" in index
    )
    assert "watcher status" not in index


def test_a_bad_site_url_is_a_config_error(tmp_path):
    cfg = make_config(tmp_path)
    with pytest.raises(WatcherError, match=r"\[site\] key 'url': must be an http\(s\) URL"):
        _with_site_table(cfg, '[site]\nurl = "javascript:alert(1)"\n')


def test_atom_ids_are_unique_per_installation(tmp_path):
    """Two guides watching the same upstream must not share entry ids (feed readers merge them)."""
    ids = {}
    for name, url in (("a", "https://one.example/watch/"), ("b", "https://two.example/")):
        folder = tmp_path / name
        folder.mkdir()
        cfg = _with_site_table(make_config(folder), f'[site]\nurl = "{url}"\n')
        last = seed(cfg)
        build_site(cfg, now=last)
        root = ET.parse(cfg.site_dir / "feed.xml").getroot()
        assert root.findtext(f"{ATOM}id") == url.rstrip("/") + "/feed"
        ids[name] = [e.findtext(f"{ATOM}id") for e in root.findall(f"{ATOM}entry")]
        assert all(i.startswith(url.rstrip("/") + "/event/") for i in ids[name])
    assert ids["a"] and not set(ids["a"]) & set(ids["b"])


def test_last_change_is_githubs_date_not_first_sight(tmp_path):
    cfg = make_config(tmp_path)
    last = seed(cfg)
    store = Store(cfg.db_path)
    try:
        row = store.items()["vllm-40124"]
        row.update(updated_at="2026-06-12T08:00:00Z", changed_at=iso(last))
        store.upsert_item(row)
    finally:
        store.close()
    build_site(cfg, now=last)
    index = (cfg.site_dir / "index.html").read_text()
    row = index[index.index("vllm-project/vllm#40124") :].split("</tr>")[0]
    assert '<td data-label="Last change">2026-06-12</td>' in row


def test_before_the_first_read_the_badge_says_unknown(tmp_path):
    cfg = make_config(tmp_path)
    run_cycle(cfg, offline=True)
    badge = (cfg.site_dir / "badge" / "sglang.svg").read_text()
    assert ">unknown<" in badge and ">blocked<" not in badge
    index = (cfg.site_dir / "index.html").read_text()
    assert "Not checked yet: No check has read GitHub yet." in index
    assert "Checks have stopped" not in index and "❌" not in index
    doc = json.loads((cfg.site_dir / "status.json").read_text())
    assert doc["runs"]["last_successful_read"] is None and doc["runs"]["stale_at"] is None


def test_pending_smoke_tests_show_their_details_on_the_site(tmp_path):
    cfg = make_config(tmp_path)
    last = seed(cfg)
    store = Store(cfg.db_path)
    try:
        store.put_trigger(
            "sglang-nospec-tp1",
            state="waiting",
            reasons=["item sglang-marlin of blocker marlin-pad changed"],
            since=iso(last),
            attempts=2,
            note="no GPU: NVMLError_LibraryNotFound",
        )
    finally:
        store.close()
    build_site(cfg, now=last)
    index = (cfg.site_dir / "index.html").read_text()
    assert "Waiting to run" in index and "NVMLError_LibraryNotFound" in index
    assert "item sglang-marlin of blocker marlin-pad changed" in index and "2 tries" in index
