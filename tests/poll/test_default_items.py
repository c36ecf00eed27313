"""The default list's code items against files written the way SGLang writes them (issue 20):
the AutoRound item also sees a Qwen3.5 model that sets the mapping on its quant config, the
EAGLE-3 check counts only qwen3_5.py's own setter, and the OffloaderV1 item reads
srt/utils/offloader.py. Over real HTTP against the fake GitHub."""

from __future__ import annotations

from pathlib import Path

from watcher.fakes.github import FakeGitHub
from watcher.github.client import GitHubClient
from watcher.poll.poller import read_code_item

REPO = Path(__file__).resolve().parents[2]
SGL = "sgl-project/sglang"
AUTO_ROUND = "python/sglang/srt/layers/quantization/auto_round.py"
QWEN35 = "python/sglang/srt/models/qwen3_5.py"
QWEN35_MTP = "python/sglang/srt/models/qwen3_5_mtp.py"
QWEN35_TEXT = "python/sglang/srt/models/qwen3_5_text.py"
QWEN3_NEXT = "python/sglang/srt/models/qwen3_next.py"
OFFLOADER = "python/sglang/srt/utils/offloader.py"

# As at the cut: the config never reads the mapping; the model has only a class attribute.
LOADER = "class AutoRoundConfig:\n    def get_layer(self):\n        for k in self.packed_modules_mapping.items():\n            pass\n"
MODEL = "class Qwen3_5ForCausalLM(nn.Module):\n    packed_modules_mapping = {\n        'qkv_proj': ['q_proj'],\n    }\n"
MODEL_SETS_IT = MODEL + (
    "    def __init__(self, config, quant_config=None):\n"
    "        if quant_config is not None and hasattr(quant_config, 'packed_modules_mapping'):\n"
    "            quant_config.packed_modules_mapping = self.packed_modules_mapping\n"
)


def state(cfg, item_id: str, files: dict[str, str]) -> tuple[str, dict]:
    with FakeGitHub() as gh:
        gh.add_commit(SGL, message="seed", date="2026-04-01T00:00:00Z", contents=files)
        with GitHubClient(gh.url, token="test-token") as client:
            return read_code_item(client, cfg.item(item_id), "main")


def test_autoround_reads_the_qwen35_model_files(cfg):
    item = cfg.item("sglang-autoround-mapping")
    assert {AUTO_ROUND, QWEN35, QWEN35_MTP} <= set(item.paths)
    base = {AUTO_ROUND: LOADER, QWEN35_MTP: "class X:\n    pass\n"}
    assert state(cfg, "sglang-autoround-mapping", {**base, QWEN35: MODEL})[0] == "absent"
    st, evidence = state(cfg, "sglang-autoround-mapping", {**base, QWEN35: MODEL_SETS_IT})
    assert st == "present"
    assert evidence["lines"][0]["path"] == QWEN35
    assert evidence["lines"][0]["text"].startswith("quant_config.packed_modules_mapping =")


def test_autoround_reads_the_text_only_model(cfg):
    """fc8b328f5c (2026-07-28, first in v0.5.17) serves text-only Qwen3.5/3.6 checkpoints from
    models/qwen3_5_text.py, which sets the mapping on the quant config (issue 33, truth 6)."""
    text_only = MODEL_SETS_IT.replace("Qwen3_5ForCausalLM", "Qwen3_5TextForCausalLM")
    files = {AUTO_ROUND: LOADER, QWEN35: MODEL, QWEN35_MTP: "class X:\n    pass\n"}
    st, evidence = state(cfg, "sglang-autoround-mapping", {**files, QWEN35_TEXT: text_only})
    assert st == "present"
    assert evidence["lines"][0]["path"] == QWEN35_TEXT


def test_autoround_loader_fix_still_counts(cfg):
    fixed = (
        LOADER
        + "    @classmethod\n    def from_config(cls, config):\n        m = config.get('packed_modules_mapping')\n"
    )
    assert (
        state(cfg, "sglang-autoround-mapping", {AUTO_ROUND: fixed, QWEN35: MODEL})[0] == "present"
    )


def test_eagle3_counts_only_qwen35s_own_setter(cfg):
    item = cfg.item("sglang-qwen35-eagle3")
    assert item.paths == (QWEN35,)
    inherited = {
        QWEN3_NEXT: "class Qwen3NextForCausalLM:\n    def set_eagle3_layers_to_capture(self, ids):\n        pass\n",
        QWEN35: "class Qwen3_5ForCausalLM(Qwen3NextForCausalLM):\n    pass\n",
    }
    assert state(cfg, "sglang-qwen35-eagle3", inherited)[0] == "absent"
    own = dict(
        inherited,
        **{
            QWEN35: inherited[QWEN35]
            + "    def set_eagle3_layers_to_capture(self, ids):\n        pass\n"
        },
    )
    assert state(cfg, "sglang-qwen35-eagle3", own)[0] == "present"


def test_offloader_is_a_blocker_of_the_tp1_recipes_with_a_code_item(cfg):
    for recipe in cfg.recipes:
        if (
            "--tp-size" in recipe.command
            and recipe.command[recipe.command.index("--tp-size") + 1] == "1"
        ):
            assert "offloader-tied-weights" in recipe.blockers, recipe.id
    assert cfg.blocker("offloader-tied-weights").items == ("sglang-offloader-tied-weights",)
    broken = "def forward(module, params, x):\n    return functional_call(module, params, (x,))\n"
    fixed = "def forward(module, params, x):\n    return functional_call(module, params, (x,), tie_weights=False)\n"
    assert state(cfg, "sglang-offloader-tied-weights", {OFFLOADER: broken})[0] == "absent"
    assert state(cfg, "sglang-offloader-tied-weights", {OFFLOADER: fixed})[0] == "present"
