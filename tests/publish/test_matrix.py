"""The evidence matrix from a real store: runs on two rigs and three hosts, a stale pass, a cell
never tested, a recipe too big for a rig, and two hosts that disagree; the generated page, the
site page and matrix.json all say the same."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from watcher.config.load import load_config
from watcher.core.clock import iso
from watcher.publish.context import page_sources
from watcher.publish.matrix import build_matrix, cell_summary, run_rig
from watcher.publish.page import page_text
from watcher.publish.site import render_site
from watcher.store.db import Store

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
GPU = {"name": "NVIDIA GeForce RTX 3090", "memory_mib": 24576, "compute_capability": "8.6"}

CONFIG = """
[watcher]
data_dir = "data"
site_dir = "site"

[site]
url = "https://example.org/status"

[[blocker]]
id = "marlin-pad"
title = "Marlin crash at load"
signatures = ["marlin-tile-n"]

[[recipe]]
id = "sglang-tp1"
title = "SGLang TP1 EAGLE-3"
engine = "sglang"
model = "/models/qwen3.6-27b-autoround-int4"
quant = "autoround-int4"
spec_method = "eagle3"
spec_decode = true
blockers = ["marlin-pad"]
command = ["true"]

[[recipe]]
id = "vllm-tp2"
engine = "vllm"
model = "/models/qwen3.6-27b-autoround-int4"
quant = "autoround-int4"
spec_method = "mtp"
command = ["true"]
[recipe.hardware]
gpu_count = 2

[[recipe]]
id = "llama-tp1"
engine = "llama.cpp"
model = "/models/qwen3.6-27b-q4_k_m.gguf"
quant = "Q4_K_M"
command = ["true"]

[[page]]
id = "engines"
title = "Engines at a glance"
output = "docs/engines/README.md"
template = "matrix.md.j2"
recipes = ["sglang-tp1", "vllm-tp2", "llama-tp1"]

[smoke]
validation_max_age = "14d"
"""


def doc(run_id, recipe, outcome, at, host, gpus=1, **over):
    d = {
        "run_id": run_id,
        "recipe": recipe,
        "backend": "local",
        "outcome": outcome,
        "signature": None,
        "blockers_reproduced": [],
        "reason": f"{outcome}: details",
        "hardware": {"gpus": [GPU] * gpus, "matches_target": True},
        "engine_version": "0.5.9",
        "metrics": {"decode_tokens_per_s": None, "accept_length": None},
        "started_at": iso(at - timedelta(minutes=10)),
        "finished_at": iso(at),
        "host": host,
    }
    d.update(over)
    return d


@pytest.fixture
def seeded(tmp_path):
    (tmp_path / "watch.toml").write_text(CONFIG)
    cfg = load_config(tmp_path / "watch.toml")
    store = Store(cfg.db_path)
    runs = [
        # sglang-tp1 on a 1×3090 box: an old pass, then a fresh pass with numbers
        doc("r1", "sglang-tp1", "passed", NOW - timedelta(days=40), "box-a"),
        doc("r2", "sglang-tp1", "passed", NOW - timedelta(days=1), "box-a",
            metrics={"decode_tokens_per_s": 17.2, "accept_length": 2.31},
            image={"ref": "lmsysorg/sglang:latest", "digest": "lmsysorg/sglang@sha256:abc"}),
        # ... and on a 2×3090 box: fails on the Marlin blocker
        doc("r3", "sglang-tp1", "failed", NOW - timedelta(days=2), "box-b", gpus=2,
            signature="marlin-tile-n", blockers_reproduced=["marlin-pad"]),
        # vllm-tp2 on two 2×3090 boxes: a stale pass and a fresh failure disagree
        doc("r4", "vllm-tp2", "passed", NOW - timedelta(days=30), "box-b", gpus=2,
            metrics={"decode_tokens_per_s": 85.1, "accept_length": 2.6}),
        doc("r5", "vllm-tp2", "timeout", NOW - timedelta(days=3), "box-c", gpus=2),
        # not tests: a skipped run and a runner error fill no cell
        doc("r6", "llama-tp1", "skipped", NOW - timedelta(days=1), "box-a"),
        doc("r7", "llama-tp1", "error", NOW - timedelta(days=1), "box-a"),
    ]  # fmt: skip
    for r in runs:
        store.add_smoke_run(r)
    yield cfg, store
    store.close()


def test_rigs_are_named_like_the_hardware_gate():
    assert run_rig({"hardware": {"gpus": [GPU, GPU]}}) == "2× RTX 3090"
    assert run_rig({"hardware": {"gpus": []}}) == "no GPU"
    h200 = {"name": "NVIDIA H200"}
    assert run_rig({"hardware": {"gpus": [GPU, h200]}}) == "1× H200 + 1× RTX 3090"


def test_matrix_cells(seeded):
    cfg, store = seeded
    mx = build_matrix(cfg, store.smoke_runs(), recipes=cfg.page("engines").recipes, now=NOW)
    assert mx["rigs"] == ["1× RTX 3090", "2× RTX 3090"]
    rows = {r["recipe"]: r for r in mx["rows"]}
    assert [rows["sglang-tp1"][k] for k in ("engine", "model", "quant", "spec_method")] == [
        "sglang", "qwen3.6-27b-autoround-int4", "autoround-int4", "eagle3",
    ]  # fmt: skip

    fresh = rows["sglang-tp1"]["cells"]["1× RTX 3090"]
    assert fresh["state"] == "passed" and len(fresh["entries"]) == 1
    e = fresh["entries"][0]
    assert (e["run_id"], e["host"], e["build"], e["digest"]) == (
        "r2", "box-a", "0.5.9", "lmsysorg/sglang@sha256:abc",
    )  # fmt: skip
    assert e["href"] == "https://example.org/status/matrix.html#run-r2"
    assert cell_summary(e) == "passed · 17.2 tok/s · AL 2.31 · 2026-11-30"

    broken = rows["sglang-tp1"]["cells"]["2× RTX 3090"]
    assert broken["state"] == "failed"
    assert broken["entries"][0]["text"] == "Marlin crash at load"  # the ❌ names its blocker

    split = rows["vllm-tp2"]["cells"]["2× RTX 3090"]
    assert split["disagree"] is True and split["state"] == "disagree"
    states = {x["host"]: x["state"] for x in split["entries"]}
    assert states == {"box-b": "stale", "box-c": "timeout"}  # both show
    stale = next(x for x in split["entries"] if x["host"] == "box-b")
    assert stale["text"] == "stale, last passed 2026-11-01"
    assert mx["disagreements"] == [{"recipe": "vllm-tp2", "rig": "2× RTX 3090"}]

    too_big = rows["vllm-tp2"]["cells"]["1× RTX 3090"]
    assert (too_big["state"], too_big["text"]) == ("not-for-rig", "needs 2× RTX 3090")
    for rig in mx["rigs"]:  # skipped and errored runs are not tests
        untested = rows["llama-tp1"]["cells"][rig]
        assert (untested["state"], untested["text"]) == ("untested", "never tested")


def test_a_row_says_its_pin_and_a_run_of_another_build_is_no_cell(seeded):
    """The build line (pin, fixes in it, gone and its successor, the bump gate) leads a row; a
    bump gate's or bisect step's run ran another build and fills no cell."""
    cfg, store = seeded
    store.add_smoke_run(
        doc("g1", "llama-tp1", "failed", NOW, "box-a", bisect={"bump": "b1", "build": "x:v2"})
    )
    pin = {
        "kind": "tag", "reference": "vllm/vllm-openai:v0.23.1", "ref": "v0.23.1",
        "fixes": [{"blocker": "marlin-pad", "compare": "behind", "ref": "vllm#1"}],
        "liveness": {"exists": False, "gone_since": "2026-11-30T00:00:00Z", "checked_at": "x"},
        "successor": {"release": "v0.24.0", "image": "vllm/vllm-openai:v0.24.0"},
        "bump": {"state": "ready", "new": "v0.24.0", "text": "bump ready: …"},
    }  # fmt: skip
    mx = build_matrix(cfg, store.smoke_runs(), now=NOW, pins={"vllm-tp2": pin})
    rows = {r["recipe"]: r for r in mx["rows"]}
    assert rows["vllm-tp2"]["pin_line"] == (
        "v0.23.1 · 1 fix not in pin · GONE, next v0.24.0 · bump ready → v0.24.0"
    )
    assert rows["sglang-tp1"]["pin_line"] is None  # no pin read: nothing claimed
    assert all(c["state"] == "untested" for c in rows["llama-tp1"]["cells"].values())


def test_a_pass_ages_into_stale(seeded):
    cfg, store = seeded
    later = NOW + timedelta(days=20)
    mx = build_matrix(cfg, store.smoke_runs(), now=later)
    cell = next(r for r in mx["rows"] if r["recipe"] == "sglang-tp1")["cells"]["1× RTX 3090"]
    assert cell["state"] == "stale"
    assert cell["entries"][0]["text"] == "stale, last passed 2026-11-30"


def test_the_generated_page_has_every_cell_and_its_evidence(seeded):
    cfg, store = seeded
    from watcher.judge.evaluate import evaluate

    ev = evaluate(cfg, store.items(), store.evaluation_runs(), store.statuses(), NOW)
    text = page_text(cfg, cfg.page("engines"), ev, page_sources(store), [], None, None, None)
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == (
        "| Engine | Model | Quant | Spec method | Build | 1× RTX 3090 | 2× RTX 3090 |"
    )
    assert len(table) == 2 + 3  # header, rule, one row per recipe
    assert all(line.count("|") == 8 for line in table[2:])  # no cell is missing (or blank)
    sglang = next(line for line in table if line.startswith("| sglang"))
    assert "| eagle3 | — (ran `lmsysorg/sglang:latest@sha256:abc`) |" in sglang
    assert (
        "✅ passed · 17.2 tok/s · AL 2.31 · 2026-11-30"
        " ([r2](https://example.org/status/matrix.html#run-r2), box-a)"
    ) in sglang
    assert "❌ Marlin crash at load · 2026-11-29" in sglang
    vllm = next(line for line in table if line.startswith("| vllm"))
    assert "⚠️ rigs disagree: 🕰️ stale, last passed 2026-11-01" in vllm
    assert "➖ needs 2× RTX 3090" in vllm
    llama = next(line for line in table if line.startswith("| llama.cpp"))
    assert llama.count("⬜ never tested") == 2
    assert "## Evidence" in text and "`lmsysorg/sglang@sha256:abc`" in text
    assert "⚠️ Rigs disagree on 1 cell: `vllm-tp2` on 2× RTX 3090" in text


def test_a_fragment_cannot_type_a_cell(seeded, tmp_path):
    cfg, store = seeded
    frag = tmp_path / "fragments" / "engines"
    frag.mkdir(parents=True)
    (frag / "intro.md").write_text("Hand-written intro.")
    (frag / "table.md").write_text("| sglang | x | y | z | ✅ typed by hand | ✅ |")
    text = (
        (tmp_path / "watch.toml")
        .read_text()
        .replace(
            'template = "matrix.md.j2"',
            'template = "matrix.md.j2"\nfragments = "fragments/engines"',
        )
    )
    (tmp_path / "watch.toml").write_text(text)
    cfg = load_config(tmp_path / "watch.toml")
    from watcher.judge.evaluate import evaluate

    ev = evaluate(cfg, store.items(), store.evaluation_runs(), store.statuses(), NOW)
    page = page_text(cfg, cfg.page("engines"), ev, page_sources(store), [], None, None, None)
    assert "Hand-written intro." in page
    assert "typed by hand" not in page


def test_site_matrix_page_and_json(seeded):
    cfg, store = seeded
    files = render_site(cfg, store, now=NOW)
    mx = json.loads(files["matrix.json"])
    assert mx["rigs"] == ["1× RTX 3090", "2× RTX 3090"]
    assert {e["run_id"] for e in mx["evidence"]} == {"r2", "r3", "r4", "r5"}
    html = files["matrix.html"]
    for e in mx["evidence"]:
        assert f'href="#{e["anchor"]}"' in html  # every cell links its evidence ...
        assert f'id="{e["anchor"]}"' in html  # ... which is on the page
    assert html.count('data-state="untested"') == 2
    assert 'data-state="disagree"' in html
    assert "matrix.html" in files["index.html"]  # linked from every page's navigation


def test_default_config_has_the_matrix_page():
    cfg = load_config(Path(__file__).resolve().parents[2] / "watch.toml")
    page = cfg.page("engines")
    assert (page.output, page.template) == ("docs/engines/README.md", "matrix.md.j2")
    assert [p.id for p in cfg.pages] == ["sglang", "engines"]


# ---------------------------------------------------------------- many rigs: what is accepted


def _dispatched(tmp_path, fake_github, mutate):
    """Dispatch r1 through the fake GitHub; the fake runner's result.json is `mutate`d first."""
    from kits.triggerkit import gha_cfg, remote_doc

    from watcher.github.client import GitHubClient
    from watcher.smoke.dispatch import dispatch_and_wait

    cfg = gha_cfg(tmp_path)

    def on_dispatch(inputs):
        doc = remote_doc(inputs)
        mutate(doc)
        return {"result.json": json.dumps(doc)}

    fake_github.add_workflow(
        "org/guide", "smoke.yml", on_dispatch=on_dispatch,
        run_name="smoke {recipe} {run_id}", artifact_name="smoke-result",
    )  # fmt: skip
    with GitHubClient(fake_github.url, token="test-token") as client:
        return cfg, dispatch_and_wait(cfg, cfg.recipe("r1"), "r1-run-9", client, sleep=lambda s: 0)


def test_a_matching_result_is_accepted_with_its_host(tmp_path, fake_github):
    cfg, doc = _dispatched(tmp_path, fake_github, lambda d: d.update(host="rig-b-runner"))
    assert doc["outcome"] == "passed" and not doc.get("refused")
    assert doc["host"] == "rig-b-runner"


@pytest.mark.parametrize(
    ("mutate", "why"),
    [
        (lambda d: d.update(recipe_digest="sha256:0000"), "its recipe digest (sha256:0000) is not"),
        (lambda d: d.pop("recipe_digest"), "its recipe digest (missing) is not"),
        (
            lambda d: d["hardware"].update(gpus=[{"name": "NVIDIA A10", "memory_mib": 23028}]),
            "it claims the target hardware, but not the target hardware",
        ),
    ],
)
def test_a_result_that_does_not_match_the_dispatch_is_refused_and_logged(
    tmp_path, fake_github, caplog, mutate, why
):
    cfg, doc = _dispatched(tmp_path, fake_github, mutate)
    assert doc["outcome"] == "error" and doc["refused"] is True
    assert doc["reason"].startswith("refused: " + why), doc["reason"]
    assert doc["claimed"]["outcome"] == "passed"  # what it claimed, kept, never counted
    assert any("refused the result of Actions run" in r.message for r in caplog.records)


def test_runs_watcher_did_not_dispatch_are_refused(tmp_path):
    from kits.triggerkit import gha_cfg, remote_doc

    from watcher.smoke.dispatch import refusal

    cfg = gha_cfg(tmp_path)
    doc = remote_doc({"recipe": "r1", "run_id": "x"})
    ok = {"event": "workflow_dispatch", "head_repository": {"full_name": "org/guide"}}
    assert refusal(cfg, cfg.recipe("r1"), ok, doc) is None
    pushed = dict(ok, event="push")
    assert "started by 'push', not a dispatch" in refusal(cfg, cfg.recipe("r1"), pushed, doc)
    fork = dict(ok, head_repository={"full_name": "mallory/guide"})
    assert "ran code from mallory/guide, not org/guide" in refusal(cfg, cfg.recipe("r1"), fork, doc)
    other = dict(doc, recipe="r2")
    assert "is for recipe 'r2', dispatched 'r1'" in refusal(cfg, cfg.recipe("r1"), ok, other)


def test_a_refused_result_fills_no_cell_and_is_listed(seeded):
    cfg, store = seeded
    refused = doc("r8", "llama-tp1", "error", NOW - timedelta(hours=1), "mallory", refused=True,
                  reason="refused: its recipe digest (missing) is not the dispatched recipe's")  # fmt: skip
    store.add_smoke_run(refused)
    mx = build_matrix(cfg, store.smoke_runs(), now=NOW)
    row = next(r for r in mx["rows"] if r["recipe"] == "llama-tp1")
    assert {c["state"] for c in row["cells"].values()} == {"untested"}
    assert [r["run_id"] for r in mx["refused"]] == ["r8"]
    from watcher.judge.evaluate import evaluate

    ev = evaluate(cfg, store.items(), store.evaluation_runs(), store.statuses(), NOW)
    text = page_text(cfg, cfg.page("engines"), ev, page_sources(store), [], None, None, None)
    assert "## Refused results" in text and "`r8`: refused: its recipe digest" in text
    assert "Refused results" in render_site(cfg, store, now=NOW)["matrix.html"]
