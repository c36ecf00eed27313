"""Hardware gate: read the GPUs (fake nvidia-smi on PATH) and match the target by name."""

import json

import pytest
from click.testing import CliRunner
from kits.smokekit import A10, RTX3090, engine_command, fake_nvidia_smi, with_path, write_config

from watcher.cli import cli
from watcher.config.load import load_config
from watcher.config.model import Hardware
from watcher.smoke.hardware import (
    Gpu,
    GpuReading,
    check_hardware,
    name_matches,
    parse_nvidia_smi,
    read_gpus,
)
from watcher.smoke.run import run_recipe


@pytest.fixture
def smi(tmp_path, monkeypatch):
    """Install a fake nvidia-smi printing the given lines, with NVML skipped."""
    monkeypatch.setenv("WATCHER_GPU_SOURCE", "nvidia-smi")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    with_path(monkeypatch, bin_dir)

    def install(lines, exit_code=0):
        fake_nvidia_smi(bin_dir, lines, exit_code)

    return install


@pytest.mark.parametrize(
    "actual, ok",
    [
        ("NVIDIA GeForce RTX 3090", True),
        ("GeForce RTX 3090", True),
        ("NVIDIA GeForce RTX 3090 Ti", False),
        ("NVIDIA RTX A5000", False),
        ("NVIDIA A10", False),
        ("NVIDIA GeForce RTX 4090", False),
        ("NVIDIA GeForce RTX 3080", False),
    ],
)
def test_rtx3090_is_matched_by_name_not_by_memory(actual, ok):
    assert name_matches("RTX 3090", actual) is ok


def test_form_factor_words_do_not_change_the_chip():
    assert name_matches("A100", "NVIDIA A100-SXM4-80GB")
    assert name_matches("H200", "NVIDIA H200")
    assert not name_matches("A100", "NVIDIA A10")
    assert not name_matches("A10", "NVIDIA A100-SXM4-80GB")


def test_parse_nvidia_smi_lines():
    gpus = parse_nvidia_smi("NVIDIA H200, 143771, 9.0\nNVIDIA GeForce RTX 3090, 24576, 8.6\n")
    assert gpus == (
        Gpu("NVIDIA H200", 143771, "9.0"),
        Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),
    )
    with pytest.raises(ValueError):
        parse_nvidia_smi("garbage")


def test_fake_nvidia_smi_rtx3090_matches(smi):
    smi([RTX3090])
    reading = read_gpus()
    assert reading.source == "nvidia-smi"
    assert reading.gpus == (Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),)
    gate = check_hardware(Hardware(), reading)
    assert gate.matches_target, gate.reason


def test_fake_nvidia_smi_a10_does_not_match(smi):
    smi([A10])
    gate = check_hardware(Hardware(), read_gpus())
    assert not gate.matches_target
    assert "NVIDIA A10" in gate.reason and "RTX 3090" in gate.reason


def test_no_driver_reads_as_no_gpu(smi):
    smi(None)
    reading = read_gpus()
    assert reading.gpus == () and "exited 9" in reading.error
    assert not check_hardware(Hardware(), reading).matches_target


def test_gpu_count_and_memory_are_checked():
    one = GpuReading((Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),), "nvml")
    assert not check_hardware(Hardware(gpu_count=2), one).matches_target
    two = GpuReading(one.gpus * 2, "nvml")
    assert check_hardware(Hardware(gpu_count=2), two).matches_target
    assert not check_hardware(Hardware(min_memory_mib=40000), one).matches_target


def test_smoke_without_gpu_is_skipped_exit_1(smi, tmp_path):
    smi(None)
    cfg = write_config(tmp_path, engine_command())
    result = CliRunner().invoke(cli, ["smoke", "fake-tp1", "--config", str(cfg), "--json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["outcome"] == "skipped"
    assert doc["hardware"] == {"gpus": [], "matches_target": False}
    assert "no GPU found" in doc["reason"] and "--any-hardware" in doc["reason"]
    assert doc["log_path"] is None  # nothing was launched


def test_smoke_on_a10_is_skipped_unless_any_hardware(smi, tmp_path):
    smi([A10])
    cfg = write_config(tmp_path, engine_command("--ready-delay", "0.3"))
    skipped = CliRunner().invoke(cli, ["smoke", "fake-tp1", "--config", str(cfg), "--json"])
    assert json.loads(skipped.stdout)["outcome"] == "skipped"
    ran = CliRunner().invoke(
        cli, ["smoke", "fake-tp1", "--config", str(cfg), "--json", "--any-hardware"]
    )
    doc = json.loads(ran.stdout)
    assert ran.exit_code == 0, ran.output
    assert doc["outcome"] == "passed"
    assert doc["hardware"]["matches_target"] is False
    assert doc["hardware"]["gpus"] == [
        {"name": "NVIDIA A10", "memory_mib": 23028, "compute_capability": "8.6"}
    ]
    assert "off-target" in doc["reason"]


@pytest.mark.parametrize(
    "name",
    ["NVIDIA A10", "NVIDIA RTX A5000", "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 4090"],
)
def test_gate_rejects_a_24_gib_card_that_only_differs_by_name(tmp_path, name):
    """Memory, count and compute capability all fit; only the name says it is not a 3090."""
    reading = GpuReading((Gpu(name, 24576, "8.6"),), "nvml")
    gate = check_hardware(Hardware(), reading)
    assert not gate.matches_target and "not the target hardware" in gate.reason
    cfg = load_config(write_config(tmp_path, engine_command()))
    doc = run_recipe(cfg, cfg.recipes[0], reading=reading)
    assert doc["outcome"] == "skipped"
    assert doc["log_path"] is None  # nothing was launched
    assert check_hardware(
        Hardware(), GpuReading((Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),), "nvml")
    ).matches_target
