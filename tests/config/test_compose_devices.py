"""The GPUs a compose service reserves, in the device forms the maintainers write: each case a
slip that passed the compose tests (issue 32's mutation set)."""

from __future__ import annotations

import pytest

from watcher.config.composefile import read_service


def _service(tmp_path, devices: str):
    f = tmp_path / "c.yml"
    f.write_text(
        "services:\n  engine:\n    image: vllm/vllm-openai:v0.24.0\n    ports: ['8000:8000']\n"
        "    deploy:\n      resources:\n        reservations:\n          devices:\n" + devices,
        encoding="utf-8",
    )
    return read_service(f, "engine", environ={})


@pytest.mark.parametrize(
    ("devices", "count", "every"),
    [
        # count: -1 is Compose's other spelling of "all"
        ("            - driver: nvidia\n              count: -1\n              capabilities: [gpu]\n",
         None, True),
        # a device that is not a GPU (another driver, other capabilities) reserves no GPU
        ("            - driver: nvidia\n              count: 2\n              capabilities: [gpu]\n"
         "            - driver: xilinx\n              count: 1\n              capabilities: [fpga]\n",
         2, False),
    ],
)  # fmt: skip
def test_the_devices_that_are_gpus_and_how_many(tmp_path, devices, count, every):
    svc = _service(tmp_path, devices)
    assert (svc.gpu_count, svc.gpus_all) == (count, every)
