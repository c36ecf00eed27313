"""Readers' "What changed" and the label (issue 33, truth 4 and 5): a new match on a stream that
was already matching is news for the maintainer's feed only, and where GitHub's title disagrees
with the config's label, every place that prints the label says so. Over real HTTP against the
fake GitHub, two cycles, the files on disk."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "poll"))

from test_code_items import cycle, write_config  # noqa: E402

from watcher.fakes.github import FakeGitHub  # noqa: E402
from watcher.judge.views import mislabel  # noqa: E402

V, S = "vllm-project/vllm", "sgl-project/sglang"
LABEL = "Qwen3-Next hybrid attention rollback support"
TITLE = "[Quant] TurboQuant KV cache"
BODY = f'''
[[item]]
id = "vllm-39931"
repo = "{V}"
kind = "pull"
number = 39931
label = "{LABEL}"

[[item]]
id = "gdn"
repo = "{S}"
kind = "commits"
label = "SGLang spec work"
paths = ["spec/"]
terms = ['(?i)\\bspec\\b']

[[blocker]]
id = "b"
title = "GDN rollback"
items = ["gdn"]
watch = ["vllm-39931"]

[[page]]
id = "guide"
title = "The guide"
output = "GUIDE.md"
blockers = ["b"]
'''


def test_a_new_match_is_feed_news_and_a_mislabel_is_said_everywhere(tmp_path):
    with FakeGitHub() as gh:
        gh.add_pull(V, 39931, title=TITLE)
        gh.add_commit(
            S, message="spec fix one", date="2026-03-01T00:00:00Z", contents={"spec/a": "x"}
        )
        cfg = write_config(tmp_path, gh, BODY)
        cycle(cfg, gh)
        gh.update(V, 39931, merged=True)
        gh.add_commit(
            S, message="spec fix two", date="2026-03-02T00:00:00Z", contents={"spec/b": "y"}
        )
        report = cycle(cfg, gh)
    assert sorted(e["subject"] for e in report.events if e["kind"] == "item") == [
        "gdn",
        "vllm-39931",
    ]
    page = (tmp_path / "GUIDE.md").read_text()
    changed = page.split("## What changed")[1]
    said = f"{LABEL} (GitHub: “\\[Quant\\] TurboQuant KV cache”)"
    assert f"— {said}: open → merged" in changed
    assert "SGLang spec work" not in changed and "matched" not in changed  # feed only
    feed = (tmp_path / "site" / "feed.xml").read_text()
    assert "spec fix two" in feed  # the maintainer's feed names the new match
    site = (tmp_path / "site" / "index.html").read_text()
    assert f"{LABEL} (GitHub: “{TITLE}”)" in site
    item_page = (tmp_path / "site" / "item" / "vllm-39931.html").read_text()
    assert f"{LABEL} (GitHub: “{TITLE}”)" in item_page
    doc = json.loads((tmp_path / "site" / "status.json").read_text())
    view = next(i for i in doc["items"] if i["id"] == "vllm-39931")
    assert view["label"] == LABEL and view["mislabel"] == TITLE


def test_a_label_that_shares_a_word_with_the_title_agrees():
    assert (
        mislabel("vLLM's own Marlin pad-sub-tile-n fix", "[Bugfix] Marlin pad sub-tile n") is None
    )
    assert mislabel("DeltaNet KV rollback", "[Feature]: KV cache rollback for DeltaNet") is None
    assert mislabel(LABEL, TITLE) == TITLE
    assert mislabel(LABEL, None) is None and mislabel("", TITLE) is None
