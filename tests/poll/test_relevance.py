"""Only relevant commits in front of readers (issue 20): `exclude`, the widened `sglang-gdn` rule,
`fla-rollback` without `draft\\w*`, and the headline chosen by relevance, not by date alone.

The commits the record holds are labelled in tests/poll/test_history_rules.py (replayed). The
subjects below are the classes the issue found after the record ends, written as labelled
subjects (each with its reason), so each class is checked against the default rules as they are.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_code_items import cycle, item_doc, write_config

from watcher.config.load import parse_config
from watcher.config.model import Item
from watcher.core.errors import ConfigError
from watcher.fakes.github import FakeGitHub
from watcher.poll import relevance
from watcher.poll.poller import commit_matches, excluded

REPO = Path(__file__).resolve().parents[2]
SGL = "sgl-project/sglang"


GDN_MUST_MATCH = {
    "[Fix] extra_buffer with spec v2 on Qwen3.5": "extra_buffer is the mamba spec-decode "
    "state strategy this stack runs",
    "Fix replayssm for EAGLE on hybrid models": "replayssm: the mamba state replay after "
    "verification",
    "Fix drafting for Qwen3.5 linear attention": "'drafting' is a spec-decode word",
    "fix qwen3_5_mtp weight loading": "`_mtp` has no word boundary after qwen3_5",
    "[Qwen3.6] MTP accept length regression on GDN layers": "MTP on the model served here",
    "[Spec V2] Support specV2 for mamba hybrid attention (#18808)": "the real #18808 "
    "(also in the record)",
    # issue 33's recall gaps (subjects in the shape of the real commits)
    "Fix extra_buffer_lazy state leak": "`extra_buffer\\b` missed extra_buffer_lazy (0a06cc5317)",
    "Support extra buffer in the scheduler": "'extra buffer' with a space (e0b692600f)",
    "[Spec] Fix dflash naming in the mamba hybrid spec worker": "a rename in the spec path "
    "that mentions dflash is not DFlash work (f526e3fa27)",
}
GDN_MUST_NOT = {
    "[AMD] Enable MTP for Qwen3.5 with aiter": "AMD/ROCm/aiter: another vendor",
    "[ROCm] Fix spec decode for mamba hybrid": "ROCm: another vendor",
    "[NPU] Support MTP for Qwen3.5 (#20918)": "NPU/Ascend (the real #20918)",
    "[Ascend] EAGLE for Qwen3-Next": "Ascend: another vendor",
    "[XPU] Spec decode for GDN hybrid": "Intel XPU",
    "[SM100] FlashInfer verify for mamba hybrid spec decoding": "Blackwell (SM100) kernels",
    "Blackwell: fast MTP verify for Qwen3.5": "Blackwell only",
    "NVFP4 MTP draft for Qwen3.5": "NVFP4 quantization: not this int4 checkpoint",
    "MXFP4 eagle3 for Qwen3-Next": "MXFP4 quantization",
    "[DeepEP] MTP with Qwen3.5 MoE": "DeepEP: multi-node expert parallel",
    "Kimi Linear: spec decode for KDA": "Kimi/KDA: another model",
    "[DFlash] draft model for Qwen3.5": "DFlash: another drafter",
    "[HiCache] Support mamba hybrid spec decode": "the hierarchical cache: not run here",
    "Fix PD disaggregation with MTP on Qwen3.5": "prefill/decode split: not run here",
    "Fix hybrid_linear_attn_backend crash with ngram speculation (#20739)": "NGRAM (the real #20739)",
    "Refactor mamba state handling in spec decode": "a refactor, no fix",
    "[Docs] Fix the drafted example for mamba": "'drafted' in docs; and no spec-decode fix",
}
FLA_MUST_MATCH = {
    "[GDN] Keep intermediate states for spec decoding": "intermediate states for spec-decode",
    "Fix state rollback in gated delta rule": "a rollback of the recurrent state",
}
FLA_MUST_NOT = {
    "[Docs] Fix the drafted example for chunk_kda": "'drafted' is not spec-decode (draft\\w* "
    "is gone)",
    "Roll back initializer_range change": "a code rollback, not a state rollback",
}


@pytest.mark.parametrize("subject, why", GDN_MUST_MATCH.items())
def test_sglang_gdn_must_match(cfg, subject, why):
    assert commit_matches(cfg.item("sglang-gdn"), subject), why


@pytest.mark.parametrize("subject, why", GDN_MUST_NOT.items())
def test_sglang_gdn_must_not_match(cfg, subject, why):
    assert not commit_matches(cfg.item("sglang-gdn"), subject), why


@pytest.mark.parametrize("subject, why", FLA_MUST_MATCH.items())
def test_fla_rollback_must_match(cfg, subject, why):
    assert commit_matches(cfg.item("fla-rollback"), subject), why


@pytest.mark.parametrize("subject, why", FLA_MUST_NOT.items())
def test_fla_rollback_must_not_match(cfg, subject, why):
    assert not commit_matches(cfg.item("fla-rollback"), subject), why


def test_the_widened_gdn_rule_watches_the_new_paths(cfg):
    paths = cfg.item("sglang-gdn").paths
    for p in (
        "python/sglang/srt/managers/schedule_batch.py",
        "python/sglang/srt/mem_cache/",
        "python/sglang/srt/layers/attention/hybrid_attn_backend.py",
    ):
        assert p in paths


def test_exclude_is_word_bounded_on_the_subject_only():
    item = Item(id="x", repo=SGL, kind="commits", terms=(r"(?i)\bspec\b",), exclude=("amd", "npu"))
    assert excluded(item, "[AMD] spec fix") == "amd"
    assert excluded(item, "spec fix for amdahl's law") is None  # a word, not a substring
    assert not commit_matches(item, "[amd] spec fix")  # any case
    assert commit_matches(item, "spec fix\n\nTested on AMD too")  # the body is not the subject
    message = dataclasses.replace(item, match="message")
    assert commit_matches(message, "spec fix\n\nTested on NPU too")  # even with match = message


def test_exclude_and_supersede_from_are_checked_at_load(tmp_path):
    base = '[[item]]\nid = "x"\nrepo = "o/r"\n'
    with pytest.raises(ConfigError, match="exclude"):
        parse_config(base + 'kind = "commits"\nexclude = ["(unclosed"]\n', tmp_path)
    with pytest.raises(ConfigError, match="supersede_from"):
        parse_config(base + 'kind = "pull"\nnumber = 1\nsupersede_from = ["nope"]\n', tmp_path)
    with pytest.raises(ConfigError, match="supersede_from"):
        parse_config(base + 'kind = "issue"\nnumber = 1\nsupersede_from = ["a/b"]\n', tmp_path)
    with pytest.raises(ConfigError, match="core"):
        parse_config(base + 'kind = "commits"\npaths = ["a/"]\ncore = ["b/"]\n', tmp_path)
    for key in ("prefer", "demote"):
        with pytest.raises(ConfigError, match=f"{key}.*entry 1"):
            parse_config(base + f'kind = "commits"\n{key} = ["(unclosed"]\n', tmp_path)
        with pytest.raises(ConfigError, match=f"{key}.*applies only to kind 'commits'"):
            parse_config(base + f'kind = "issue"\nnumber = 1\n{key} = ["x"]\n', tmp_path)


# ------------------------------------------------------------------ the headline


def c(sha: str, message: str) -> dict:
    return {"sha": sha, "commit": {"message": message}}


def test_rank_puts_explicit_links_first_then_the_recipes_words_then_the_newest():
    item = Item(
        id="s",
        repo=SGL,
        kind="commits",
        paths=("a/", "core/"),
        core=("core/",),
        prefer=("qwen3[._]?5", r"extra_buffer\w*"),
        demote=("eplb",),
    )
    tracked = frozenset({("vllm-project/vllm", 40124), (SGL.lower(), 19406)})
    commits = [
        c("1", "newest: a cleanup"),
        c("2", "in core"),
        c("3", "older fix\n\nFixes vllm-project/vllm#40124"),
        c("4", "closes #19406 here"),
        c("5", "Fix extra_buffer_lazy with spec v2"),
        c("6", "Fix qwen3.5 mtp eplb related issues"),
        c("7", "Qwen3.5 spec fix"),
    ]
    paths_of = {"1": ["a/"], "2": ["core/"], "3": ["a/"], "4": ["a/"], "5": ["a/"], "6": ["core/"]}
    paths_of["7"] = ["a/"]
    ranked = [x["sha"] for x in relevance.rank(item, commits, paths_of, tracked)]
    # links, then the recipe's words newest first, then the rest newest first (a core path
    # no longer lifts an older commit), then what the recipe does not use (EPLB wins over qwen3.5)
    assert ranked == ["3", "4", "5", "7", "1", "2", "6"]
    assert relevance.reasons(item, commits[2], paths_of, tracked) == [
        "closes tracked vllm-project/vllm#40124"
    ]
    assert relevance.reasons(item, commits[4], paths_of, tracked) == [
        "names “extra_buffer_lazy”, which this recipe runs"
    ]
    assert relevance.reasons(item, commits[5], paths_of, tracked) == [
        "names “eplb”, which this recipe does not use",
        "touches core path core/",
    ]


HEADLINE = f"""
[[item]]
id = "tracked"
repo = "{SGL}"
kind = "issue"
number = 19406

[[item]]
id = "gdn"
repo = "{SGL}"
kind = "commits"
paths = ["python/sglang/srt/speculative/", "python/sglang/srt/layers/attention/mamba/"]
core = ["python/sglang/srt/layers/attention/mamba/"]
terms = ['(?i)\\bspec\\b']
prefer = ["verify"]
"""


def test_the_headline_is_the_relevant_match_not_the_newest(tmp_path):
    with FakeGitHub() as gh:
        gh.add_issue(SGL, 19406, title="Marlin crash")
        gh.add_commit(
            SGL,
            message="Fix mamba state in spec verify (#2)",
            date="2026-03-01T00:00:00Z",
            contents={"python/sglang/srt/layers/attention/mamba/ops.py": "x\n"},
        )
        gh.add_commit(
            SGL,
            message="Spec worker cleanup (#3)",
            date="2026-03-05T00:00:00Z",
            contents={"python/sglang/srt/speculative/worker.py": "y\n"},
        )
        cfg_path = write_config(tmp_path, gh, HEADLINE)
        doc = item_doc(cycle(cfg_path, gh), "gdn")
        # the recipe's word first, not the newest; the newest still dates the stream
        assert doc["title"] == "Fix mamba state in spec verify (#2)"
        assert doc["summary"] == "matching commits in SGLang, newest on 2026-03-05"
        assert doc["updated_at"] == "2026-03-05T00:00:00Z"
        gh.add_commit(
            SGL,
            message="Spec loader fix (#4)\n\nFixes #19406",
            date="2026-03-09T00:00:00Z",
            contents={"python/sglang/srt/speculative/loader.py": "z\n"},
        )
        doc = item_doc(cycle(cfg_path, gh), "gdn")
        assert doc["title"] == "Spec loader fix (#4)"  # an explicit link to a tracked item wins
        assert doc["evidence"]["matches"][0]["relevance"] == [f"closes tracked {SGL.lower()}#19406"]


def test_a_commit_whose_pr_a_tracked_issue_cross_references_headlines(tmp_path):
    with FakeGitHub() as gh:
        gh.add_issue(SGL, 19406, title="Marlin crash")
        gh.add_commit(
            SGL,
            message="Fix mamba state in spec verify (#2)",
            date="2026-03-01T00:00:00Z",
            contents={"python/sglang/srt/layers/attention/mamba/ops.py": "x\n"},
        )
        gh.add_commit(
            SGL,
            message="Spec worker cleanup (#3)",
            date="2026-03-05T00:00:00Z",
            contents={"python/sglang/srt/speculative/worker.py": "y\n"},
        )
        gh.add_pull(SGL, 3, title="Spec worker cleanup", merged=True)
        gh.add_cross_reference(SGL, 19406, source_repo=SGL, source_number=3)
        # a stranger's PR with the same number links nothing in sgl-project/sglang
        gh.add_pull("stranger/sglang", 2, title="mention", merged=True)
        gh.add_cross_reference(SGL, 19406, source_repo="stranger/sglang", source_number=2)
        doc = item_doc(cycle(write_config(tmp_path, gh, HEADLINE), gh), "gdn")
    assert doc["title"] == "Spec worker cleanup (#3)"
    first, second = doc["evidence"]["matches"][:2]
    assert first["relevance"] == [f"its PR is cross-referenced by tracked {SGL}#19406"]
    assert second["subject"] == "Fix mamba state in spec verify (#2)"
    assert second["relevance"] == [
        "names “verify”, which this recipe runs",
        "touches core path python/sglang/srt/layers/attention/mamba/",
    ]


def test_an_event_names_the_commit_that_caused_it_not_the_headline(tmp_path):
    with FakeGitHub() as gh:
        gh.add_issue(SGL, 19406, title="Marlin crash")
        gh.add_commit(
            SGL,
            message="Fix mamba state in spec verify (#2)",
            date="2026-03-01T00:00:00Z",
            contents={"python/sglang/srt/layers/attention/mamba/ops.py": "x\n"},
        )
        cfg_path = write_config(tmp_path, gh, HEADLINE)
        cycle(cfg_path, gh)
        new = gh.add_commit(
            SGL,
            message="Spec worker cleanup (#3)",
            date="2026-03-05T00:00:00Z",
            contents={"python/sglang/srt/speculative/worker.py": "y\n"},
        )
        report = cycle(cfg_path, gh)
    (event,) = [e for e in report.events if e["subject"] == "gdn"]
    assert item_doc(report, "gdn")["title"] == "Fix mamba state in spec verify (#2)"
    assert event["message"] == (
        f"{SGL} (commits) changed: matched, new: {new['sha'][:10]} “Spec worker cleanup (#3)”"
    )
