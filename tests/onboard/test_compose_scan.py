"""`watcher init --scan-composes models/`: a recipe proposed for every compose file, the engine
guessed from the image, and a note of what could not be told; the proposal loads as config."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from watcher.cli import cli
from watcher.config.load import load_config

VLLM = """
services:
  vllm:
    image: vllm/vllm-openai:v0.24.0
    ports: ["${PORT:-8020}:8000"]
    deploy:
      resources:
        reservations:
          devices: [{driver: nvidia, count: 2, capabilities: [gpu]}]
  open-webui:
    image: ghcr.io/open-webui/open-webui:main
    ports: ["3000:8080"]
"""
SGLANG = """
services:
  sglang:
    image: lmsysorg/sglang:latest
    ports: ["30000:30000"]
    deploy:
      resources:
        reservations:
          devices: [{driver: nvidia, count: all, capabilities: [gpu]}]
"""
LLAMA = """
services:
  server:
    image: local/my-build:latest
    ports: ["8080"]
    environment:
      NVIDIA_VISIBLE_DEVICES: "0"
"""


def guide(tmp_path: Path) -> Path:
    files = {
        "models/qwen3.6-27b/vllm/compose/dual/autoround-int4/mtp.yml": VLLM,
        "models/qwen3.6-27b/sglang/compose/dual/autoround-int4/eagle3-experimental.yml": SGLANG,
        "models/qwen3.6-27b/llama_cpp/compose/single/q4_k_m/baseline.yml": LLAMA,
        "models/qwen3.6-27b/README.yml": "not: [a compose file\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_scan_proposes_recipes_that_load(tmp_path):
    root = guide(tmp_path)
    r = CliRunner().invoke(cli, ["init", str(root), "--scan-composes", str(root / "models")])
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "3 recipe(s) proposed" in r.stderr  # the web UI beside vLLM is no recipe
    assert 'id = "vllm-qwen3.6-27b-dual-autoround-int4-mtp"' in out
    assert 'compose = "models/qwen3.6-27b/vllm/compose/dual/autoround-int4/mtp.yml"' in out
    assert "open-webui" not in out
    # what it could not tell, said
    assert "# note: reserves all GPUs (`count: all`)" in out
    assert "# note: GPU count 2 guessed from the folder 'dual'" in out
    assert "# note: engine llama.cpp guessed from the folder name, not the image" in out
    assert "# note: port 8080 is published on an ephemeral host port" in out
    (root / "watch.toml").write_text('[watcher]\ndata_dir = "data"\n' + out)
    cfg = load_config(root / "watch.toml")
    recipes = {x.id: x for x in cfg.recipes}
    v = recipes["vllm-qwen3.6-27b-dual-autoround-int4-mtp"]
    assert (v.engine, v.hardware.gpu_count, v.host_port, v.port) == ("vllm", 2, 8020, 8000)
    assert (v.quant, v.spec_method, v.spec_decode) == ("autoround-int4", "mtp", True)
    s = recipes["sglang-qwen3.6-27b-dual-autoround-int4-eagle3-experimental"]
    assert (s.engine, s.spec_method, s.hardware.gpu_count) == ("sglang", "eagle3", 2)
    ll = recipes["llama.cpp-qwen3.6-27b-single-q4_k_m-baseline"]
    assert (ll.engine, ll.hardware.gpu_count, ll.spec_method) == ("llama.cpp", 1, "")


def test_scan_writes_nothing_and_refuses_github(tmp_path):
    root = guide(tmp_path)
    before = sorted(p for p in root.rglob("*"))
    r = CliRunner().invoke(cli, ["init", str(root), "--scan-composes", str(root / "models")])
    assert r.exit_code == 0 and sorted(root.rglob("*")) == before
    r = CliRunner().invoke(
        cli, ["init", str(root), "--github", "--scan-composes", str(root / "models")]
    )
    assert r.exit_code == 2 and "--scan-composes only prints" in r.output
