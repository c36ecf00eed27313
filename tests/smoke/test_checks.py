"""The optional checks (tool call, streamed tool call, long-output degeneracy, accept floor)
against the fake engine on loopback, through the smoke runner: named in the verdict, one plain
failure line each."""

from __future__ import annotations

import pytest
from kits.smokekit import engine_command, write_config

from watcher.config.load import load_config
from watcher.core.errors import ConfigError
from watcher.publish.matrix import build_matrix, cell_summary
from watcher.smoke.checks import find_loop
from watcher.smoke.hardware import Gpu, GpuReading
from watcher.smoke.run import run_recipe

ON_TARGET = GpuReading((Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),), "nvml")
ALL = "tool_call = true\nstream_tool_call = true\nlong_output_tokens = 400"


def run(tmp_path, *engine_args, checks=ALL, **kw):
    cfg = load_config(write_config(tmp_path, engine_command(*engine_args), checks=checks, **kw))
    return run_recipe(cfg, cfg.recipes[0], reading=ON_TARGET)


def by_name(doc):
    return {c["name"]: c for c in doc["checks"]}


def test_all_checks_pass_and_are_named_in_the_verdict(tmp_path):
    doc = run(tmp_path, "--ready-delay", "0.2", "--tools", "call")
    assert doc["outcome"] == "passed", doc["reason"]
    checks = by_name(doc)
    assert [c["name"] for c in doc["checks"]] == ["tool-call", "stream-tool-call", "long-output"]
    assert all(c["ok"] for c in doc["checks"])
    assert checks["tool-call"]["detail"] == 'get_weather({"city": "Paris"})'
    assert checks["long-output"]["detail"] == "400 tokens, no repeated loop"
    assert "checks passed: tool-call, stream-tool-call, long-output" in doc["reason"]


def test_an_engine_without_tool_calls_fails_both_tool_checks(tmp_path):
    doc = run(tmp_path, "--ready-delay", "0.2")  # --tools ignore: answers in text
    assert doc["outcome"] == "failed"
    assert "tool-call check: no tool_calls[] in the answer (finish_reason 'stop'" in doc["reason"]
    assert "stream-tool-call check: no tool_calls in the streamed deltas" in doc["reason"]
    assert by_name(doc)["long-output"]["ok"] is True
    # the matrix cell says it in one plain line, and names the failed checks
    cfg = load_config(tmp_path / "watch.toml")
    (entry,) = build_matrix(cfg, [doc])["rows"][0]["cells"]["1× RTX 3090"]["entries"]
    assert entry["text"].startswith("tool-call check: no tool_calls[] in the answer")
    assert cell_summary(entry).endswith("failed checks: tool-call, stream-tool-call")


def test_a_looping_answer_fails_the_degeneracy_check(tmp_path):
    doc = run(tmp_path, "--ready-delay", "0.2", "--tools", "call", "--degenerate")
    assert doc["outcome"] == "failed"
    line = by_name(doc)["long-output"]["detail"]
    assert line.startswith("the 400-token answer degenerates: its last 380 words repeat a 7-word")
    assert f"long-output check: {line}" in doc["reason"]


def test_no_checks_asked_none_run(tmp_path):
    doc = run(tmp_path, "--ready-delay", "0.2", checks="")
    assert doc["outcome"] == "passed", doc["reason"]
    assert doc["checks"] == []
    assert "checks passed" not in doc["reason"]


def test_accept_floor_is_a_named_check(tmp_path):
    doc = run(
        tmp_path,
        "--ready-delay", "0.2", "--accept-length", "1.8",
        checks="min_accept_length = 2.0",
        spec_decode=True,
    )  # fmt: skip
    assert doc["outcome"] == "failed"
    assert by_name(doc)["accept-floor"] == {
        "name": "accept-floor",
        "ok": False,
        "detail": "accept length 1.80 against a floor of 2.0",
    }
    assert doc["reason"].count("below the required 2.0") == 1  # one line, not two


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (" ".join(f"w{i}" for i in range(500)), None),
        ("intro words here " + "the cat sat on the mat " * 30, (6, 180)),
        ("a " * 100, (1, 100)),
        ("short loop " * 5, None),  # ten words: below the minimum
    ],
)
def test_find_loop(text, want):
    got = find_loop(text)
    assert (got[:2] if got else None) == want


def test_long_output_tokens_is_bounded(tmp_path):
    with pytest.raises(ConfigError, match="long_output_tokens.*between 50 and 32768"):
        load_config(write_config(tmp_path, ["x"], checks="long_output_tokens = 10"))
