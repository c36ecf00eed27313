"""A page for every engine of the shelf, the At-a-glance table over them, and one cycle whose
outputs (pages, table, status.json, site, comment, tracker) never disagree about an engine."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from kits.crosscheck import Claim, disagreements, every_claim, glance_claims
from kits.enginekit import NOW, README, RUNS, config, seed_github, write_guide
from kits.notifykit import FakeClock, RecordingPacer

from watcher.config.load import load_config, parse_config
from watcher.core.errors import ConfigError
from watcher.fakes.github import FakeGitHub
from watcher.github.client import GitHubClient
from watcher.loop.cycle import run_cycle
from watcher.notify.plan import status_marker
from watcher.store.db import Store


@pytest.fixture(scope="module")
def guide(tmp_path_factory):
    """One check-now against the fake GitHub with the five-engine guide and its tracking issue;
    its config, its report, and the sticky comment that cycle posted for each page."""
    folder = tmp_path_factory.mktemp("guide")
    with FakeGitHub() as gh, pytest.MonkeyPatch.context() as mp:
        mp.setenv("GITHUB_TOKEN", "test-token")
        mp.setenv("GITHUB_API_URL", gh.url)
        seed_github(gh)
        gh.add_issue("guide/docs", 7, title="Engines on 3090s: tracking")
        path = write_guide(folder, gh.url)
        with path.open("a", encoding="utf-8") as f:
            f.write('\n[notify]\nenabled = true\nrepo = "guide/docs"\nissue = 7\n')
        cfg = load_config(path)
        store = Store(cfg.db_path)
        for r in RUNS:
            store.add_smoke_run(r)
        store.close()
        pacer = RecordingPacer(FakeClock())  # the comments' spacing, without waiting for it
        with GitHubClient(gh.url, token="test-token") as client:
            report = run_cycle(
                cfg, now=NOW, client=client, no_smoke=True, notify_kw={"pacer": pacer}
            )
        posted = gh.comments("guide/docs", 7)
    comments = {
        p.id: next(c["body"] for c in posted if status_marker(p.id) in c["body"]) for p in cfg.pages
    }
    return cfg, report, comments


def _parse(tmp_path, text: str | None = None):
    """The guide's files in `tmp_path`, and `text` (default: its watch.toml) parsed there."""
    write_guide(tmp_path, "http://127.0.0.1:1")
    return parse_config(text or config("http://127.0.0.1:1"), tmp_path / "watch.toml")


def _read(cfg, rel: str) -> str:
    return cfg.resolve(rel).read_text(encoding="utf-8")


def test_every_engine_of_the_shelf_has_a_page_and_forks_stay_apart(tmp_path):
    cfg = _parse(tmp_path)
    pages = {p.id: p for p in cfg.pages}
    assert {p.output for p in cfg.pages} == {
        "docs/engines/SGLANG.md",  # the maintainers' own [[page]] covers SGLang: no second one
        "docs/engines/VLLM.md",
        "docs/engines/LLAMA_CPP.md",
        "docs/engines/IK_LLAMA.md",
        "docs/engines/LLAMACPP_CLUB3090.md",
    }
    assert pages["vllm"].recipes == ("vllm-dual-mtp", "vllm-single")
    assert pages["ik-llama-cpp"].blockers == ("marlin-pad",)  # its recipes' blockers
    assert pages["llamacpp-club3090"].title == "llamacpp-club3090"
    assert pages["sglang"].engine is None and pages["vllm"].engine == "vllm"


def test_without_engines_or_with_pages_off_only_the_configured_pages(tmp_path):
    text = config("http://127.0.0.1:1")
    off = text.replace("[engines]\n", "[engines]\npages = false\n")
    assert [p.id for p in _parse(tmp_path, off).pages] == ["sglang"]
    gone = text.replace('[engines]\nhand = "fragments/engines-readme.md"\n', "")
    assert [p.id for p in _parse(tmp_path, gone).pages] == ["sglang"]


@pytest.mark.parametrize(
    ("table", "key", "words"),
    [
        ('glance = "x.md"\nhand = "x.md"', "hand", "also `glance`"),
        ('glance = "../elsewhere.md"', "glance", "not a file inside"),
        ('hand = "fragments/missing.md"', "hand", "does not exist (adopt the guide's copy"),
        ('glance = "docs/engines/VLLM.md"', "glance", "also a page's output"),
        ("pages = 1", "pages", ""),
    ],
)
def test_engines_table_errors_name_the_key_and_the_file(tmp_path, table, key, words):
    text = config("http://127.0.0.1:1").replace(
        '[engines]\nhand = "fragments/engines-readme.md"\n', f"[engines]\n{table}\n"
    )
    with pytest.raises(ConfigError) as e:
        _parse(tmp_path, text)
    assert str(tmp_path / "watch.toml") in str(e.value)
    assert f"'{key}'" in str(e.value) and words in str(e.value)


def test_one_cycle_no_two_outputs_disagree(guide):
    cfg, report, comments = guide
    claims = every_claim(cfg, comments)
    assert disagreements(claims) == []
    # a real cross-check: every engine's status is read from at least five outputs, and its pin
    # from the page, the table and status.json (SGLang's hand-made page states no pin)
    for engine in ("vllm", "llama.cpp", "ik_llama.cpp", "llamacpp-club3090", "sglang"):
        sources = {c.source.split(" ")[0] for c in claims if c.subject == engine}
        assert {"page", "status.json", "site", "comment"} <= sources, engine
    pins = {(c.subject, c.source): c.value for c in claims if c.field == "pin"}
    assert pins[("vllm", "glance")] == pins[("vllm", "status.json")] == "v0.27.1"
    assert pins[("vllm", "page VLLM.md")] == "v0.27.1"
    speeds = {(c.subject, c.source): c.value for c in claims if c.field == "speed"}
    assert speeds == {
        ("vllm", "glance"): "85.1 on 2026-11-30",
        ("vllm", "status.json"): "85.1 on 2026-11-30",
        ("recipe vllm-dual-mtp", "page VLLM.md"): "85.1 on 2026-11-30",
        ("recipe vllm-dual-mtp", "status.json"): "85.1 on 2026-11-30",
        ("llama.cpp", "glance"): "41.7 on 2026-11-29",
        ("llama.cpp", "status.json"): "41.7 on 2026-11-29",
        ("recipe llama-single", "page LLAMA_CPP.md"): "41.7 on 2026-11-29",
        ("recipe llama-single", "status.json"): "41.7 on 2026-11-29",
    }
    assert {c.value for c in claims if c.subject == "sglang" and c.field == "status"} == {"blocked"}
    # the tracker and the engine page say the same of the Marlin fix: merged, not yet in our pin
    marlin = "https://github.com/vllm-project/vllm/pull/45295"
    said = {c.source: c.value for c in claims if c.subject == marlin}
    assert said == {"page VLLM.md": "🔵", "tracker": "🔵"}


def test_the_checker_fails_on_a_planted_disagreement(guide, tmp_path):
    cfg, _, comments = guide
    glance = _read(cfg, cfg.engines.glance)
    planted = (
        glance.replace("pin `v0.27.1`", "pin `v0.24.0`")
        .replace("| blocked on 1 upstream fix", "| validated on two RTX 3090s")
        .replace("| 41.7 tok/s", "| 47.1 tok/s")
    )
    assert planted != glance
    claims = [c for c in every_claim(cfg, comments) if c.source != "glance"]
    found = disagreements(claims + glance_claims(cfg, planted))
    assert "vllm pin: page VLLM.md says 'v0.27.1', glance says 'v0.24.0'" in found
    assert any(f.startswith("sglang status:") and "glance says 'validated'" in f for f in found)
    assert (
        "llama.cpp speed: status.json says '41.7 on 2026-11-29', glance says '47.1 on 2026-11-29'"
        in found
    )
    # and from bare claims: two sources, one field, two values
    two = [Claim("vllm", "status", "a", "blocked"), Claim("vllm", "status", "b", "validated")]
    assert disagreements(two) == ["vllm status: a says 'blocked', b says 'validated'"]
    assert disagreements(two[:1] + [dataclasses.replace(two[0], source="c")]) == []


def test_the_glance_keeps_every_row_and_word_and_marks_hand_cells(guide):
    cfg, report, _ = guide
    text = _read(cfg, "docs/engines/README.md")
    assert report.pages["[engines] glance"]["written"]
    before, _, rest = README.partition("| Engine |")
    assert text.startswith(before)  # the prose above the table, as written
    assert (
        "## Which one\n\nPick vLLM unless you need the longest context on one card; then llama.cpp.\n"
        in text
    )
    # the maintainers' header and rule, as written; a row per hand row, then the engines it lacked
    head = "| Engine | Status on this stack | Per-stream TPS (1× 3090) | Max ctx (1× 3090) |"
    assert head in text and "|---|---|---|---|---|---|---|---|" in text
    rows = [ln for ln in text.split("\n") if ln.startswith("| ") and "---" not in ln][1:]
    assert [re.sub(r"\W", "", r.split("|")[1])[:8].lower() for r in rows] == [
        "vllmvllm", "llamacpp", "sglangsg", "exllamav", "ik_llama", "llamacpp",
    ]  # fmt: skip
    vllm, llama, sglang, exl3 = rows[:4]
    # evidence where a smoke run measured it
    assert "| validated on two RTX 3090s on 2026-11-30 · pin `v0.27.1` |" in vllm
    assert "| 85.1 tok/s (2× RTX 3090, 2026-11-30) |" in vllm
    assert "| ✅ tested 2026-11-30 | ✅ mtp, AL 3.12 |" in vllm
    # the maintainers' cells elsewhere, as written and marked
    assert "| 48K safe ✋ | ✅ ✋ |" in vllm and "| ✅ Full ✋ |" in vllm
    assert "| **262K** (q4_0 KV) ✋ |" in llama and "| ⚠️ Limited ✋ |" in llama
    # SGLang's stale hand status is replaced by the page's own; its hand cells stay
    assert (
        "Re-test pending" not in text and "| blocked on 1 upstream fix · pin `v0.5.12` |" in sglang
    )
    assert "| ⚠️ EAGLE-3 slow ✋ |" in sglang
    # a row for an engine watcher has no recipe for: as written, its status marked hand-kept
    assert (
        exl3 == "| **[ExLlamaV3](EXL3.md)** | Not tried here ✋ | — | — | ❌ | ⚠️ | ❌ | ⚠️ Partial |"
    )
    assert "✋ as the maintainers wrote it" in text
    assert "[ik\\_llama.cpp](IK_LLAMA.md)" in rows[4]


def test_an_engine_page_says_each_fact_once_in_the_readers_words(guide):
    cfg, _, _ = guide
    ik = _read(cfg, "docs/engines/IK_LLAMA.md")
    assert ik.startswith("# ik\\_llama.cpp — ready to test")  # Markdown-escaped, as titles are
    assert "> Pinned build: `server-b4100`." in ik
    assert "### ⚠️ Marlin sub-tile fix" in ik  # its recipe's blocker
    assert "Upstream, as the tracker has it" not in ik  # the only vLLM row is that blocker's item
    vllm = _read(cfg, "docs/engines/VLLM.md")
    assert "## Blockers" not in vllm  # no recipe of vLLM names a blocker
    assert "| 🟡 Open | 🔵 merged 2026-06-30 ⚠️ not what the tracker says |" in vllm
    assert "Last tested on 2026-11-30" in vllm
    assert "Measured: 85.1 tokens/s per stream on two RTX 3090s, 2026-11-30." in vllm
    for text in (ik, vllm):
        assert "blocker" not in text.lower().replace("## blockers", "")  # no rule internals
        assert "marlin-pad" not in text and "vllm-dual-mtp" not in text  # no ids
    doc = json.loads((cfg.site_dir / "status.json").read_text(encoding="utf-8"))
    assert [p["id"] for p in doc["pages"]] == [p.id for p in cfg.pages]


def test_a_made_engine_page_starts_no_gpu_run_for_a_recipe_nothing_blocked(tmp_path):
    """The first check makes the pages ready to test; only the recipe whose blocker's fix landed
    (ik_llama.cpp, the Marlin fix) is queued, never one that nothing blocked."""
    with FakeGitHub() as gh:
        seed_github(gh)
        path = write_guide(tmp_path, gh.url)
        with path.open("a", encoding="utf-8") as f:
            f.write("\n[smoke]\nmax_runs_per_day = 0\n")  # queued, never launched here
        cfg = load_config(path)
        with GitHubClient(gh.url, token="test-token") as client:
            report = run_cycle(cfg, now=NOW, client=client)
    assert report.smoke_runs == []
    store = Store(cfg.db_path)
    try:
        triggers = store.triggers()
    finally:
        store.close()
    assert sorted(triggers) == ["ik-single"]
    assert triggers["ik-single"]["reasons"] == ["page ik-llama-cpp became ready-to-test"]


def test_the_watch_workflow_commits_every_engine_page_the_table_and_the_audited_tracker(tmp_path):
    from watcher.onboard.scaffold import watch_workflow

    workflow = watch_workflow(_parse(tmp_path), tmp_path)
    line = next(ln for ln in workflow.splitlines() if "for page in" in ln)
    for path in (
        "docs/engines/SGLANG.md",
        "docs/engines/VLLM.md",
        "docs/engines/LLAMACPP_CLUB3090.md",
        "docs/engines/README.md",
        "docs/UPSTREAM.audit.md",
    ):
        assert path in line


def test_a_hand_kept_engine_page_is_refused_then_adopted_into_its_fragments(tmp_path):
    """A made page is a page like any other: its hand-kept file is never overwritten, and
    `init --adopt` keeps its prose in fragments/<id>/, which the next render shows."""
    from watcher.onboard.adopt import adopt_page

    with FakeGitHub() as gh:
        seed_github(gh)
        cfg = load_config(write_guide(tmp_path, gh.url))
        page = tmp_path / "docs" / "engines" / "VLLM.md"
        page.write_text("# vLLM\n\nOur main road: the fastest on two cards.\n", encoding="utf-8")
        with GitHubClient(gh.url, token="test-token") as client:
            report = run_cycle(cfg, now=NOW, client=client, no_smoke=True)
        assert "watcher init --adopt" in report.pages["vllm"]["refused"]
        done = adopt_page(cfg, page)
    assert done.fragments == [tmp_path / "fragments" / "vllm" / "intro.md"]
    text = page.read_text(encoding="utf-8")
    assert "Our main road: the fastest on two cards." in text and "> Pinned build:" in text


def test_a_hand_copy_gone_after_loading_refuses_the_table_and_nothing_else(tmp_path):
    with FakeGitHub() as gh:
        seed_github(gh)
        cfg = load_config(write_guide(tmp_path, gh.url))
        (tmp_path / "fragments" / "engines-readme.md").unlink()
        with GitHubClient(gh.url, token="test-token") as client:
            report = run_cycle(cfg, now=NOW, client=client, no_smoke=True)
    refused = report.pages["[engines] glance"]["refused"]
    assert "[engines] hand fragments/engines-readme.md: cannot be read" in refused
    assert not (tmp_path / "docs" / "engines" / "README.md").exists()
    assert report.pages["vllm"]["written"] and (tmp_path / "site" / "status.json").is_file()


def test_a_failed_tool_call_check_is_the_table_cell_even_after_an_older_pass(tmp_path):
    from kits.enginekit import run_doc

    from watcher.config.load import load_config as load
    from watcher.publish.engines import evidence_cells

    cfg = load(write_guide(tmp_path, "http://127.0.0.1:1"))
    page = next(p for p in cfg.pages if p.engine == "vllm")
    runs = [  # newest first, as the store gives them
        run_doc("r2", "vllm-dual-mtp", NOW, gpus=2, outcome="failed",
                checks=[{"name": "tool-call", "ok": False, "detail": "no tool_calls[]"}]),
        *RUNS,
    ]  # fmt: skip
    cells = evidence_cells(cfg, page, runs)
    assert cells["tools"] == "❌ tested 2026-12-01"
    assert cells["tps"] == "85.1 tok/s (2× RTX 3090, 2026-11-30)"  # speed: the newest pass


def test_a_mixed_page_covers_no_engine_and_a_page_on_the_same_file_covers_its_engine(tmp_path):
    text = config("http://127.0.0.1:1").replace(
        "[engines]\n",
        '[[page]]\nid = "shelf"\ntitle = "Shelf"\noutput = "docs/SHELF.md"\n'
        'template = "matrix.md.j2"\nrecipes = ["vllm-single", "llama-single"]\n\n'
        '[[page]]\nid = "llama-cpp"\ntitle = "llama.cpp, by hand"\n'
        'output = "docs/engines/IK_LLAMA.md"\nrecipes = ["club-single"]\n\n[engines]\n',
    )
    cfg = _parse(tmp_path, text)
    made = {p.id: p.output for p in cfg.pages if p.engine}
    # the shelf page mixes engines: vLLM and llama.cpp still get theirs; the hand-made
    # "llama-cpp" page writes IK_LLAMA.md (so ik_llama.cpp is covered) and covers the club fork
    assert made == {"vllm": "docs/engines/VLLM.md", "engine-llama-cpp": "docs/engines/LLAMA_CPP.md"}


HAND_VLLM = """# vLLM — our main road

Our main road: the fastest on two cards.

## What we ship

- The dual-card AWQ compose, pinned to a nightly we tested.

## Recipe

```bash
docker compose -f models/qwen/vllm/compose/dual/awq/mtp.yml up -d
```

## Tuning

`--max-num-seqs 4` keeps the KV cache inside 24 GB.
"""


def test_an_adopted_engine_page_shows_every_hand_section_where_it_stood(tmp_path):
    """A made engine page adopts like page.md.j2 does: each H2 section of the hand page is on
    the generated page in its order, and the hand recipe block stands in for the generated
    recipes until a run validates one (no second "Recipes" list beside it)."""
    from watcher.onboard.adopt import adopt_page
    from watcher.onboard.adopt_plan import split_sections

    cfg = load_config(write_guide(tmp_path, "http://127.0.0.1:1"))
    page = tmp_path / "docs" / "engines" / "VLLM.md"
    page.write_text(HAND_VLLM, encoding="utf-8")
    done = adopt_page(cfg, page)
    assert len(done.fragments) == 5  # the title, the intro and three sections
    text = page.read_text(encoding="utf-8")
    intro, sections = split_sections(HAND_VLLM)
    at = 0
    for line in "\n".join([intro, *(f"{h}\n{b}" for h, b in sections)]).splitlines():
        if line.strip():
            found = text.find(line, at)
            assert found >= 0, f"lost or moved: {line!r}"
            at = found + len(line)
    assert "> Pinned build:" in text
    assert text.splitlines()[2] == "*vLLM — our main road*"  # the hand H1, under the headline
    assert "## Recipes" not in text  # the hand "## Recipe" block holds that place


def test_a_made_engine_page_with_a_dated_status_is_adopted_with_its_paragraph(tmp_path):
    """A page [engines] makes has no [[page]] table for a park or an override: adopt keeps the
    status paragraph (shown while nothing says otherwise), says so, and writes watch.toml as
    it was."""
    from watcher.onboard.adopt import adopt_page

    path = write_guide(tmp_path, "http://127.0.0.1:1")
    before = path.read_text(encoding="utf-8")
    cfg = load_config(path)
    page = tmp_path / "docs" / "engines" / "VLLM.md"
    page.write_text(
        "# vLLM\n\nOur road.\n\n**Status (2026-06-02): validated** on two cards.\n",
        encoding="utf-8",
    )
    done = adopt_page(cfg, page)
    assert done.unrecorded and not done.overridden and done.status.word == "validated"
    assert path.read_text(encoding="utf-8") == before
    text = page.read_text(encoding="utf-8")
    assert "Our road." in text and "**Status (2026-06-02): validated** on two cards." in text
