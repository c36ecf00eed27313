"""The default watch list replayed over the real upstream history (tests/history, through the
replay fake only): for each rule, the commits it must match and must not, each with the reason a
person gave it; code checks and the page status at several dates, which must never claim more
than the record supports; and `watcher backtest` on the replay."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from watcher.cli import cli
from watcher.config.model import Item
from watcher.fakes.replay import ReplayGitHub
from watcher.github.client import GitHubClient
from watcher.poll import heads, relevance
from watcher.poll import poller as poll

REPO = Path(__file__).resolve().parents[2]
CUT = "2026-04-30T23:59:59Z"


@pytest.fixture(scope="module")
def replay():
    with ReplayGitHub() as gh:
        yield gh


def read(gh: ReplayGitHub, item: Item) -> tuple[dict[str, str], dict[str, str]]:
    """(matched, rejected) commits of a commit item at the cut: {sha: subject}, by poll's own
    read and matching functions."""
    with GitHubClient(gh.url, token="test-token", retries=0) as client:
        commits, truncated = poll.read_commit_stream(client, item)
    assert truncated == []
    matched, rejected = {}, {}
    for c in commits:
        subject = poll.commit_message(c).splitlines()[0]
        (matched if poll.commit_matches(item, c) else rejected)[c["sha"]] = subject
    return matched, rejected


def by_prefix(shas: dict[str, str], prefix: str) -> str | None:
    return next((s for s in shas if s.startswith(prefix)), None)


def check_labels(matched, rejected, must_match: dict[str, str], must_not: dict[str, str]):
    for prefix, why in must_match.items():
        assert by_prefix(matched, prefix), f"{prefix} should match: {why}"
    for prefix, why in must_not.items():
        # Each one is in the watched paths (read), and the rule rejects it.
        assert by_prefix(rejected, prefix), f"{prefix} should be read and rejected: {why}"


# ------------------------------------------------------------------ commit rules

SGLANG_GDN_MATCH = {
    "e4b708d3e9": "spec-decode v2 for the mamba/GDN hybrid backend; `\\beagle\\b` missed 'Spec V2'",
    "3ca29dffc7": "EAGLE-3 on Qwen3-Next, a GDN hybrid; `\\beagle\\b` missed 'eagle3'",
    "9457c049e1": "MTP with spec v2 enabled for Qwen3.5 (GDN hybrid); '-NVFP4' in the test "
    "checkpoint's name is a model, not NVFP4 work, so `exclude` must not drop it",
    "86c5617787": "Mamba state tracking fixed in EAGLE verification",
    "a1b39c1c26": "mamba state scatter fused into MTP verify",
    "03e4f2858d": "Qwen3.5 SpecV2 path: a host-to-device copy removed",
    "f7de9375ac": "GDN gating and recurrent update fused in the spec-decode verify step",
    "2ba94136ce": "mamba state tracking in spec decoding ('specdec')",
    "e77bfba24d": "hang in Qwen3-Next MTP (written 'Qwen3 Next', with a space)",
    "cabe171b6c": "Qwen3.5 MTP fix",
}
# Of those, the ones a reader of this recipe's page must see first: the commit names the model
# served (Qwen3.5/3.6's hybrid) or a flag the recipes run (EAGLE/EAGLE-3, MTP, spec v2,
# extra_buffer), and is not work these one-card dense-model recipes cannot use.
SGLANG_GDN_STRONG = {
    "e4b708d3e9": "spec v2 for the mamba hybrid: SGLANG_ENABLE_SPEC_V2=1 on this stack",
    "3ca29dffc7": "EAGLE-3 on a GDN hybrid: the EAGLE-3 recipe's path",
    "9457c049e1": "MTP with spec v2 on Qwen3.5",
    "86c5617787": "a crash in mamba state tracking during EAGLE verification",
    "a1b39c1c26": "the MTP verify step's mamba state scatter",
    "f7de9375ac": "Qwen3.5's GDN update in the verify step",
    "03e4f2858d": "Qwen3.5's SpecV2 path",
}
# The other three are the guide's news, not this recipe's headline: spec-decode perf that names
# neither the model nor a flag (2ba94136ce), an NCCL all-gather hang across cards (e77bfba24d),
# EPLB, an expert-parallel MoE balancer, for a dense 27B (cabe171b6c).
SGLANG_GDN_NOT = {
    "f57ec8d6ef": "spec-decode only ('spec_hidden_size'), nothing about hybrid layers",
    "6c2714f5ae": "adaptive speculative decoding guard, not about hybrid layers",
    "343a7ac652": "a GDN prefill kernel fusion, not spec-decode",
    "8ba9646044": "a GDN accuracy fix for non-contiguous input, not spec-decode",
    "48daa831ea": "a KDA gate kernel fusion, not spec-decode",
    # A recall limit, kept visible: spec-decode state work whose subject names neither.
    "c76251f70c": "'Return intermediate Mamba states': relevant, but no spec-decode word (a miss)",
    # Off this stack (excluded by `exclude`): spec-decode on the hybrid, but not for CUDA/3090s.
    "32c3513816": "MTP for Qwen3.5 on NPU (Ascend): another vendor's backend",
    "c89afaea7c": "hybrid backend crash with NGRAM speculation: a drafter this stack does not use",
}


def test_sglang_gdn_rule(cfg, replay):
    matched, rejected = read(replay, cfg.item("sglang-gdn"))
    check_labels(matched, rejected, SGLANG_GDN_MATCH, SGLANG_GDN_NOT)
    # Every match in the record is one of the labelled true positives: no false positive.
    assert sorted(s[:10] for s in matched) == sorted(SGLANG_GDN_MATCH)


# Days where the old ranking (core paths before dates) headlined something else: the day a
# spec v2 MTP change landed beside an older core commit, the three weeks of EPLB, the cut.
HEADLINE_DAYS = ["2026-02-01", "2026-03-05", "2026-03-14", "2026-04-01", "2026-04-12", "2026-04-30"]


@pytest.mark.parametrize("day", HEADLINE_DAYS)
def test_the_headline_is_the_newest_strongly_relevant_match(cfg, replay, day):
    item = cfg.item("sglang-gdn")
    paths_of: dict[str, list[str]] = {}
    with GitHubClient(replay.url, token="test-token", retries=0) as client:
        commits, _ = poll.read_commit_stream(
            client, item, until=f"{day}T23:59:59Z", paths_of=paths_of
        )
    matched = [c for c in commits if poll.commit_matches(item, c)]
    ranked = relevance.rank(item, matched, paths_of, frozenset())
    strong = [c["sha"][:10] for c in matched if c["sha"][:10] in SGLANG_GDN_STRONG]
    assert ranked[0]["sha"][:10] == strong[0], poll.commit_message(ranked[0]).splitlines()[0]


def test_the_old_gdn_rule_missed_what_the_new_one_finds(cfg, replay):
    """The rule the old watch list had (whole message, one regex, three folders)."""
    old = Item(
        id="old-sglang-gdn",
        repo="sgl-project/sglang",
        kind="commits",
        paths=(
            "python/sglang/srt/layers/attention/linear/",
            "python/sglang/srt/layers/attention/fla/",
            "python/sglang/srt/layers/attention/hybrid_linear_attn_backend.py",
        ),
        pattern=r"(?i)\b(rollback|roll[- ]?back|speculative|spec[-_ ]?decod(?:e|ing)|eagle|mtp|draft)\b",
        since="2026-01-01T00:00:00Z",
        match="message",
    )
    matched, _ = read(replay, old)
    assert [s[:10] for s in matched] == ["a1b39c1c26"]  # 1 of the 10 labelled above


SGLANG_MARLIN_NOT = {
    "aa390d2762": "the GEMM kernel's move to JIT: a refactor, not a pad fix",
    "9dff933164": "the AOT Marlin kernels deleted: a move, not a fix",
    "991f3aa5b3": "an NVFP4 Marlin fallback feature",
    "6aafe756b9": "the revert of that feature",
    "24f52e66d3": "duplicate words removed from comments in marlin_utils.py",
}


def test_sglang_marlin_rule(cfg, replay):
    # No SGLang commit in the record pads or relaxes the Marlin tile check: nothing may match.
    matched, rejected = read(replay, cfg.item("sglang-marlin"))
    check_labels(matched, rejected, {}, SGLANG_MARLIN_NOT)
    assert matched == {}


FLA_MATCH = {
    "6f91f7aea0": "'[KDA] Return intermediate state in vLLM': the per-token states spec-decode "
    "verification rolls back to",
}
FLA_NOT = {
    "1feb67a963": "gate activation fused into the recurrent kernels: no state handling",
    "9b3c930c91": "'respect user-provided cu_seqlens': a bare `spec` would match 'respect'",
    "13a9087431": "context parallelism; only its body mentions state words (subjects only)",
    "ca3905f087": "GVA support for GDN, a feature unrelated to spec-decode",
}


def test_fla_rule(cfg, replay):
    matched, rejected = read(replay, cfg.item("fla-rollback"))
    check_labels(matched, rejected, FLA_MATCH, FLA_NOT)
    assert sorted(s[:10] for s in matched) == sorted(FLA_MATCH)


def test_flashkda_rule(cfg, replay):
    # FlashKDA ships Hopper kernels only; nothing in its record is about Ampere.
    matched, rejected = read(replay, cfg.item("flashkda-ampere"))
    check_labels(
        matched,
        rejected,
        {},
        {
            "9f54414575": "the initial commit (Hopper kernels)",
            "a359431630": "a README note about FLA integration",
        },
    )
    assert matched == {}


# ------------------------------------------------------------------ code checks


def code_state(gh: ReplayGitHub, item: Item, ref: str) -> tuple[str, dict]:
    with GitHubClient(gh.url, token="test-token", retries=0) as client:
        sha = heads.head_sha(client, item.repo, ref)
        return poll.read_code_item(client, item, sha, sha=sha)


def test_marlin_guard_is_read_at_the_guard_not_its_split_message(cfg, replay):
    guard = dataclasses.replace(cfg.item("sglang-marlin-guard"), ref=None)  # main, not a release
    state, evidence = code_state(replay, guard, "main")
    assert state == "absent"  # SGLang still rejects sizes that are not a multiple of 64
    line = evidence["lines"][0]
    assert line["text"] == "if output_size_per_partition % GPTQ_MARLIN_MIN_THREAD_N != 0:"
    assert line["url"].startswith(f"https://github.com/sgl-project/sglang/blob/{evidence['sha']}/")
    # The obvious rule on the error message would claim the fix is in: the message is split
    # over two f-strings ("is not divisible by " / " min_thread_n = ").
    naive = dataclasses.replace(guard, absent=("not divisible by min_thread_n",))
    assert code_state(replay, naive, "main")[0] == "present"


def test_code_checks_at_the_cut(cfg, replay):
    # AutoRoundConfig.from_config never reads the mapping the loader passes it.
    assert code_state(replay, cfg.item("sglang-autoround-mapping"), "main")[0] == "absent"
    # qwen3_5.py has set_dflash_layers_to_capture, not the EAGLE-3 one.
    assert code_state(replay, cfg.item("sglang-qwen35-eagle3"), "main")[0] == "absent"
    state, evidence = code_state(replay, cfg.item("sglang-gdn-spec-state"), "main")
    assert state == "present" and evidence["line_count"] > 2


# ------------------------------------------------------------------ the page at several dates


def cycle(tmp_path: Path, gh: ReplayGitHub) -> dict:
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    r = CliRunner().invoke(
        cli,
        ["check-now", "--no-smoke", "--json", "--config", str(tmp_path / "watch.toml")],
        env={"GITHUB_API_URL": gh.url, "GITHUB_TOKEN": "test-token"},
    )
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def statuses(doc: dict) -> tuple[str, dict, dict]:
    items = {i["id"]: i for i in doc["items"]}
    return doc["pages"][0]["status"], {b["id"]: b["status"] for b in doc["blockers"]}, items


def test_page_in_march_claims_nothing_the_record_cannot_say(tmp_path):
    with ReplayGitHub(as_of="2026-03-01T00:00:00Z") as gh:
        page, blockers, items = statuses(cycle(tmp_path, gh))
    assert page == "blocked"
    assert set(blockers.values()) == {"blocked"}
    # Every SGLang file a code item reads changed after March 1: unknown, never "absent".
    for code in ("sglang-autoround-mapping", "sglang-gdn-spec-state", "sglang-qwen35-eagle3"):
        assert items[code]["state"] in (None, "unknown") and items[code]["stale"], code
    # Commit streams are known: the spec v2 hybrid commit of 2026-02-27 is already there.
    assert items["sglang-gdn"]["state"] == "matched"


def test_page_in_mid_april(tmp_path):
    with ReplayGitHub(as_of="2026-04-15T00:00:00Z") as gh:
        page, blockers, items = statuses(cycle(tmp_path, gh))
    # fused_recurrent.py last changed on 2026-03-29: from then on its state is known.
    assert items["sglang-gdn-spec-state"]["state"] == "present"
    assert blockers["deltanet-rollback"] == "fix-merged"
    assert blockers["marlin-pad"] == "blocked" and page == "blocked"


def test_page_at_the_cut_dead_path_and_hints(tmp_path):
    with ReplayGitHub() as gh:
        # vLLM is not in the record; seed its fix as it really went (closed, superseded, merged).
        gh.add_pull(
            "vllm-project/vllm", 40361, title="[Bugfix] Marlin pad sub-tile n", state="closed"
        )
        gh.add_pull("vllm-project/vllm", 45295, title="[Kernel] Marlin: pad n", merged=True)
        gh.add_cross_reference(
            "vllm-project/vllm", 40361, source_repo="vllm-project/vllm", source_number=45295
        )
        page, blockers, items = statuses(cycle(tmp_path, gh))
    assert items["vllm-40361"]["state"] == "closed"
    # A fix in vLLM's own Marlin copy is a hint: SGLang's loader still drops the mapping.
    assert items["sglang-autoround-mapping"]["state"] == "absent"
    assert blockers["marlin-pad"] == "blocked"
    # SGLang cuts releases on release branches the record does not hold: unknown, not absent.
    assert items["sglang-marlin-guard"]["stale"]
    assert items["sglang-qwen35-eagle3"]["state"] == "absent"
    assert blockers["eagle3-layer-capture"] == "blocked" and page == "blocked"
    # gone at main since the JIT move, declared so in retired_paths: it warns nobody
    assert items["sglang-marlin"]["warnings"] == []


# ------------------------------------------------------------------ backtest on the replay


def test_backtest_on_the_replay(tmp_path, replay):
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    args = [
        "backtest",
        "sglang-gdn",
        "sglang-gdn-spec-state",
        "vllm-40361",
        "--since",
        "2026-01-01",
        "--as-of",
        "2026-03-01",
        "--as-of",
        "2026-04-30",
        "--show-unmatched",
        "--config",
        str(tmp_path / "watch.toml"),
    ]
    env = {"GITHUB_API_URL": replay.url, "GITHUB_TOKEN": "test-token"}
    r = CliRunner().invoke(cli, args, env=env)
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "sglang-gdn (commits, sgl-project/sglang)" in out
    assert "+ e4b708d3e9 2026-02-26 [Spec V2] Support specV2 for mamba hybrid attention" in out
    assert "- c76251f70c" in out  # the labelled miss, shown by --show-unmatched
    assert "  as of 2026-03-01: unknown - HTTP 503: sgl-project/sglang:" in out
    assert "  as of 2026-04-30: present at " in out
    assert "skipped vllm-40361: a pull item has no history to replay" in out
    cost = r.stdout.splitlines()[-1]
    assert cost.endswith(" s") and " requests (0 answered 304" in cost
    spent = int(cost.split()[0])
    # Again, through the store's ETag cache: every read answered before is a 304 now; only the
    # unknown one is asked again (a 503 the record can never hold: asked once, not retried).
    r = CliRunner().invoke(cli, [*args, "--json"], env=env)
    doc = json.loads(r.stdout)
    unknown = sum(d["state"] == "unknown" for i in doc["items"] for d in i["dates"])
    assert unknown == 1 and doc["requests"] == spent
    assert doc["not_modified"] == spent - unknown
    gdn = doc["items"][0]["dates"]
    assert gdn[0]["match_count"] < gdn[1]["match_count"]  # more by April than by March
