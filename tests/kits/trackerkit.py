"""A tracker in the guide's shape (docs/UPSTREAM.md: a table per upstream repository, the
follow-ups table, pinned images), written for these tests, and the fake GitHub seeded to answer
every issue and pull request it links, with each row's expected audit."""

from __future__ import annotations

V = "https://github.com/vllm-project/vllm"
F = "https://github.com/fla-org/flash-linear-attention"
S = "https://github.com/sgl-project/sglang"
L = "https://github.com/ggml-org/llama.cpp"
G = "https://github.com/Sandermage/genesis-vllm-patches"

TRACKER = f"""# Upstream tracker

Threads upstream that our recipes lean on. Keep their status here and nowhere else: when you
file or find one, add a row; when it moves, edit the row.

## Status words

- 🟢 **Landed**: merged and in the images we pin
- 🔵 **Merged, not in our pin yet**
- 🟡 **Open / in review**
- 🟠 **Open, stalled**
- 🔴 **Open, no PR yet**
- ⚫ **Worked around locally**
- ✅ **Resolved**
- ❌ **Closed without a fix**

---

## Active follow-ups 🗓️

| Item | Why deferred | Trigger to revisit |
|---|---|---|
| **Move the vLLM pin past the Marlin fix** ([vllm#45295]({V}/pull/45295)) | Wants a stress pass on both rigs first. | A build with the fix passes `verify-stress`; then drop `patches/marlin/`. |
| Re-test SGLang speculative decoding on two cards (to file) | Parked at ~16 tok/s next to ~85 on the vLLM MTP path. | A release that captures layers in `models/qwen3_5.py`. |

## vLLM (`vllm-project/vllm`)

| Issue / PR | Status | Why it matters | Workaround |
|---|---|---|---|
| [#40361]({V}/pull/40361) — pad sub-tile N in Marlin | 🟡 Open, **waiting on review** | Every dual-card recipe mounts our patched kernel files. | Mount `patches/marlin/` over the image's copy. |
| [#45295]({V}/pull/45295) — Marlin sub-tile fix, second try | 🔵 Merged, our pin is older | Lets the dual-card recipes drop the mount. | Same mount until the pin moves. |
| [#40124]({V}/issues/40124) — KV rollback for DeltaNet layers | 🔴 Open, no PR yet | No EAGLE or DFlash on hybrid models without it. | Use MTP, which needs no rollback. |
| [#39931]({V}/pull/39931) and [#40124]({V}/issues/40124) — rollback, the pair | 🟠 Stalled since spring | Both halves are needed for spec decode on GDN layers. | As above. |
| `max_seq_len` kept through capture ([#40961]({V}/pull/40961)) | 🟡 Open PR | Explains why the workspace grows with `a \\| b` contexts; see `x | y` too. | Stay at the **48K** default. |
| ~~[#40798]({V}/pull/40798) — workspace manager rewrite~~ | ❌ Negative result | ~~Tried as a fix; it was not one.~~ Kept so nobody tries again. | n/a |
| [#36599]({V}/pull/36599) — warm the GDN autotuner | ✅ Merged 2026-03-12 | First-request OOM on boot is gone. | n/a — in our image. |
| [#40807]({V}/issues/40807) — `.tolist()` in a captured graph | ⚫ Local workaround | Single-card spec decode needs it. | `patch_tolist.py` runs at setup. |
| Long multi-turn OOM on one card (to file) | 🔴 Not filed yet | Accumulated context crosses 24 GiB near 25K tokens. | **Two cards** (TP=2), or llama.cpp on one. |

## Genesis patches (`Sandermage/genesis-vllm-patches`)

| Issue / PR | Status | Why it matters | Workaround |
|---|---|---|---|
| [#19]({G}/issues/19) — stream the GDN forward's intermediates | 🟡 Open, we filed it | The one-card multi-turn cliff. | See the vLLM row above. |

## flash-linear-attention (`fla-org/flash-linear-attention`)

| Issue / PR | Status | Why it matters | Workaround |
|---|---|---|---|
| [#512]({F}/pull/512) — chunked GDN kernel rework | 🟡 Open | Cuts the live tensors of the long-prefill path. | None. |
| [#498]({F}/issues/498) — autotune key misses `T` | ✅ Resolved | Kept for context. | n/a |

## SGLang (`sgl-project/sglang`)

| Issue / PR | Status | Why it matters | Workaround |
|---|---|---|---|
| [#19406]({S}/issues/19406) — AutoRound loader drops `packed_modules_mapping` | 🔴 Not filed, same kernel-line fix | The real cause of the "Marlin crash" on this model. | None: SGLang stays parked. |
| [#20370]({S}/pull/20370) — keep the mapping when loading AutoRound | 🟡 Open | Would let the SGLang recipe load at all. | None. |
| Layer capture for Qwen3.6 ([discussion #8123]({S}/discussions/8123)) | 🟡 Asked upstream | EAGLE-3 needs the hidden states of three layers. | None. |
| [#21001]({S}/pull/21001) — CUTE_DSL capture on Ampere | ❌ Closed without fix | Graph capture hangs on SM 8.6. | `--disable-cuda-graph`. |

## llama.cpp (`ggml-org/llama.cpp`)

| Issue / PR | Status | Why it matters | Workaround |
|---|---|---|---|
| [#14500]({L}/issues/14500) — slow prompt cache on hybrid models | ✅ Resolved | Kept for context. | n/a |
| Fix in [`a1b2c3d`]({L}/commit/a1b2c3d4e5f60718293a4b5c6d7e8f9012345678) — q4 tile sizes on SM 8.6 | 🟢 Landed | Faster prefill on the 3090. | n/a |

## Pinned images

| Engine | Image | Pin | Since |
|---|---|---|---|
| vLLM | `vllm/vllm-openai` | `v0.27.1` | 2026-08-01 |
| llama.cpp | `ghcr.io/ggml-org/llama.cpp` | `server-cuda-b6100` | 2026-07-20 |

### Retired pins

- `nightly-7a1eb8ac` (purged from the registry in July)
"""

# (repo, number) -> how the fake GitHub answers; merged pulls carry a merge date
SEED = {
    ("vllm-project/vllm", 40361): ("pull", {"state": "closed", "closed_at": "2026-06-12"}),
    ("vllm-project/vllm", 45295): (
        "pull",
        {"merged": True, "merged_at": "2026-06-12T16:00:00Z", "merge_commit_sha": "4529" * 10},
    ),
    ("vllm-project/vllm", 40124): ("issue", {}),
    ("vllm-project/vllm", 39931): (
        "pull",
        {"merged": True, "merged_at": "2026-07-02T10:00:00Z", "merge_commit_sha": "3993" * 10},
    ),
    ("vllm-project/vllm", 40961): ("pull", {}),
    ("vllm-project/vllm", 40798): ("pull", {"state": "closed", "closed_at": "2026-05-01"}),
    ("vllm-project/vllm", 36599): (
        "pull",
        {"merged": True, "merged_at": "2026-03-12T08:00:00Z", "merge_commit_sha": "3659" * 10},
    ),
    ("vllm-project/vllm", 40807): ("issue", {}),
    ("Sandermage/genesis-vllm-patches", 19): ("issue", {}),
    ("fla-org/flash-linear-attention", 512): (
        "pull",
        {"merged": True, "merged_at": "2026-08-03T12:00:00Z", "merge_commit_sha": "0512" * 10},
    ),
    ("fla-org/flash-linear-attention", 498): (
        "issue",
        {"state": "closed", "closed_at": "2026-04-01"},
    ),
    ("sgl-project/sglang", 19406): ("issue", {}),
    ("sgl-project/sglang", 20370): (
        "pull",
        {"merged": True, "merged_at": "2026-06-20T09:00:00Z", "merge_commit_sha": "2037" * 10},
    ),
    ("sgl-project/sglang", 21001): ("pull", {"state": "closed", "closed_at": "2026-05-30"}),
    ("ggml-org/llama.cpp", 14500): (
        "issue",
        {"state": "closed", "state_reason": "not_planned", "closed_at": "2026-02-01"},
    ),
}

COMMIT = ("ggml-org/llama.cpp", "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678")
DISCUSSION = ("sgl-project/sglang", 8123)

# rows (by the start of their first cell) whose status GitHub contradicts
DISAGREE = {
    "[#40361]": ("🟡", "❌"),  # closed without merge, nothing supersedes it on the fake
    "[#39931]": ("🟠", "🔵"),  # one of its two links merged
    "[#512]": ("🟡", "🔵"),
    "[#20370]": ("🟡", "🔵"),
}


def seed(gh) -> None:
    """Every issue and pull request the tracker links, as SEED says."""
    for (repo, number), (kind, fields) in SEED.items():
        title = f"{repo.split('/')[1]} thread {number}"
        if kind == "pull":
            gh.add_pull(repo, number, title=title, **fields)
        else:
            gh.add_issue(repo, number, title=title, **fields)
    gh.add_commit(COMMIT[0], COMMIT[1], message="q4 tiles for sm86", date="2026-07-09T08:00:00Z")
    gh.add_discussion(*DISCUSSION, title="layer capture for qwen3.6", answered=True)
