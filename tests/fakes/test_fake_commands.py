"""The fakes a person starts by hand (bisect's worked example): bad input says what is wrong."""

from __future__ import annotations

import subprocess

from watcher.fakes import nvidia_smi, registry
from watcher.smoke.hardware import parse_nvidia_smi


def test_the_registry_command_names_a_publish_that_is_not_name_tag(capsys):
    assert registry.main(["--publish", "lmsysorg/sglang"]) == 2
    assert "--publish 'lmsysorg/sglang' is not NAME:TAG" in capsys.readouterr().err


def test_the_fake_nvidia_smi_reports_one_rtx_3090(tmp_path):
    path = nvidia_smi.install(tmp_path / "bin")
    out = subprocess.run([str(path)], capture_output=True, text=True, check=True).stdout
    (gpu,) = parse_nvidia_smi(out)
    assert gpu.name == "NVIDIA GeForce RTX 3090" and gpu.memory_mib == 24576
