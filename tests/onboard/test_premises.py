"""Recipe premises: a --quantization that the checkpoint's config.json contradicts is a warning in
`validate` and a failed check in `doctor --gpu` (SGLang refuses the pairing at start)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from watcher.cli import cli
from watcher.config.load import load_config
from watcher.onboard.doctor import quantization_checks, recipe_quantization

RECIPE = """
[[recipe]]
id = "sg"
engine = "sglang"
model = "/model"
command = ["docker", "run", "-v", "{host}:/model", "img", "python", "-m", "sglang.launch_server",
  "--model-path", "/model", {quant}"--speculative-config", '{{"method": "ngram"}}']
"""


def _config(tmp_path, quant: str, method: str | None = "auto-round"):
    folder = tmp_path / "qwen-int4"
    folder.mkdir(exist_ok=True)
    cfg = {"model_type": "qwen3_5"}
    if method:
        cfg["quantization_config"] = {"quant_method": method, "bits": 4}
    (folder / "config.json").write_text(json.dumps(cfg))
    path = tmp_path / "watch.toml"
    path.write_text(RECIPE.format(host=folder, quant=quant))
    return path


def test_recipe_quantization_reads_both_spellings():
    assert recipe_quantization(["x", "--quantization", "awq_marlin"]) == "awq_marlin"
    assert recipe_quantization(["x", "--quantization=gptq"]) == "gptq"
    assert recipe_quantization(["x", "--tp", "1"]) is None


@pytest.mark.parametrize(
    "quant, method, warned",
    [
        ('"--quantization", "awq_marlin", ', "auto-round", True),
        ('"--quantization", "auto_round", ', "auto-round", False),  # same method, other spelling
        ("", "auto-round", False),  # no flag: the engine reads the checkpoint's method
        ('"--quantization", "awq_marlin", ', None, False),  # nothing to disagree with
    ],
)
def test_quantization_that_disagrees_with_the_checkpoint_is_flagged(
    tmp_path, quant, method, warned
):
    path = _config(tmp_path, quant, method)
    checks = quantization_checks(load_config(path))
    assert bool(checks) is warned
    out = CliRunner().invoke(cli, ["validate", "--config", str(path)])
    assert out.exit_code == 0, out.output
    assert ("warning: quantization of sg" in out.stderr) is warned
    if warned:
        assert "awq_marlin" in out.stderr and "auto-round" in out.stderr
        assert "drop --quantization" in out.stderr


def test_default_recipes_pass_no_quantization():
    from pathlib import Path

    cfg = load_config(Path(__file__).resolve().parents[2] / "watch.toml")
    assert all(recipe_quantization(r.command) is None for r in cfg.recipes)
    base = {r.baseline for r in cfg.recipes if r.engine == "sglang"}
    assert base == {"vllm-mtp-tp2"}
    mtp = cfg.recipe("sglang-mtp-tp1").command
    assert mtp[mtp.index("--speculative-algorithm") + 1] == "NEXTN"


def test_a_json_argument_is_shown_and_run_verbatim(tmp_path):
    """`{` in an argument once crashed every render (str.format took the JSON for a field)."""
    from watcher.judge.evaluate import evaluate
    from watcher.publish.context import display_command, page_context
    from watcher.smoke.launch import build_argv

    path = _config(tmp_path, "")
    text = path.read_text() + (
        '\n[[page]]\nid = "p"\ntitle = "P"\noutput = "P.md"\nrecipes = ["sg"]\n'
    )
    path.write_text(text)
    cfg = load_config(path)
    recipe = cfg.recipe("sg")
    spec = '{"method": "ngram"}'
    assert spec in build_argv(recipe, "n")
    assert spec in display_command(recipe) or '\'{"method": "ngram"}\'' in display_command(recipe)
    from datetime import UTC, datetime

    ev = evaluate(cfg, {}, [], {}, datetime(2026, 12, 1, tzinfo=UTC))
    ctx = page_context(cfg, cfg.pages[0], {}, ev, [], [], None, None)
    assert spec in ctx["recipes"][0]["command"]
