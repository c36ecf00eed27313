"""`watcher init --scan-composes models/`: a recipe proposed for each live compose file of a guide
shaped like the real one (tests/onboard/guide), read as Compose interpolates it; deprecated and
archived composes listed, not proposed (`--all` proposes them, marked); the proposals load."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from watcher.cli import cli
from watcher.config.load import load_config
from watcher.onboard.shelf import scan_composes

GUIDE = Path(__file__).parent / "guide"
Q = "models/qwen3.6-27b"

# compose -> (host port, GPU count, engine, spec method, marked), what a maintainer would say
EXPECTED = {
    f"{Q}/vllm/compose/single/autoround-int4/long-text.yml": (8031, 1, "vllm", "", ""),
    f"{Q}/vllm/compose/dual/fp8/max.yml": (8013, 2, "vllm", "mtp", ""),
    f"{Q}/vllm/compose/dual/autoround-int4/preview.yml": (8016, 2, "vllm", "eagle3", ""),
    f"{Q}/sglang/compose/dual/autoround-int4/eagle3.yml": (8041, 2, "sglang", "eagle3", "parked"),
    f"{Q}/beellama/compose/single/q5ks/fast.yml": (8064, 1, "beellama", "mtp", ""),
    f"{Q}/llamacpp-club3090/compose/dual/iq4xs/moecache.yml": (
        8119, 2, "llamacpp-club3090", "draft", "",
    ),
    f"{Q}/ik-llama/compose/single/iq4ks/two-stage.yml": (8050, 1, "ik_llama.cpp", "", ""),
}  # fmt: skip
NOT_LIVE = {
    f"{Q}/vllm/compose/single/autoround-int4/tools.yml": (8031, 1, "vllm", "", "deprecated"),
    f"{Q}/vllm/compose/_archive/dual/autoround-int4/turbo.yml": (
        8011, 2, "vllm", "mtp", "archived, deprecated",
    ),
}  # fmt: skip


@pytest.fixture
def guide(tmp_path: Path) -> Path:
    shutil.copytree(GUIDE, tmp_path / "guide")
    return tmp_path / "guide"


def _loaded(root: Path, toml: str):
    (root / "watch.toml").write_text('[watcher]\ndata_dir = "data"\n' + toml)
    return {r.compose: r for r in load_config(root / "watch.toml").recipes}


def test_scan_proposes_live_composes_right(guide, monkeypatch):
    for name in ("PORT", "ESTATE_PORT", "MODEL_DIR", "ESTATE_GPUS", "VLLM_NIGHTLY_SHA"):
        monkeypatch.delenv(name, raising=False)  # the config reads as this shell would run it
    r = CliRunner().invoke(cli, ["init", str(guide), "--scan-composes", str(guide / "models")])
    assert r.exit_code == 0, r.output
    assert "7 recipe(s) proposed" in r.stderr and "2 not proposed" in r.stderr
    out = r.stdout
    for path in NOT_LIVE:
        assert f"#   {path}: " in out and f'compose = "{path}"' not in out
    assert "_archive/dual/autoround-int4/turbo.yml: archived under compose/_archive/" in out
    assert "open-webui" not in out  # the UI beside ik_llama.cpp is no recipe
    recipes = _loaded(guide, out)
    assert set(recipes) == set(EXPECTED)
    got = {
        path: (x.host_port, x.hardware.gpu_count, x.engine, x.spec_method, _mark(x.notes))
        for path, x in recipes.items()
    }
    assert got == EXPECTED
    # ids readable and unique; the SGLang recipe needs MODEL_DIR from the host, and says so
    assert "sglang-qwen3.6-27b-dual-autoround-int4-eagle3" in {x.id for x in recipes.values()}
    sg = recipes[f"{Q}/sglang/compose/dual/autoround-int4/eagle3.yml"]
    assert sg.pass_env == ("MODEL_DIR",) and sg.port == 30000 and sg.spec_decode
    assert (
        "# note: the compose requires MODEL_DIR (`${MODEL_DIR:?…}`: 'MODEL_DIR is required')" in out
    )
    assert sg.notes.startswith("compose parked: ⚠ PARKED 2026-05-21")
    # the model from --model, the fork's image, and the variable the guide's launcher fills
    assert recipes[f"{Q}/vllm/compose/dual/fp8/max.yml"].model == "qwen3.6-27b-fp8"
    assert "# image: ghcr.io/example/beellama-cpp:v0.3.0" in out
    assert "leaves VLLM_NIGHTLY_SHA to the guide's launcher (Engine-profile: vllm-nightly)" in out
    assert '# VLLM_NIGHTLY_SHA = "..."' in out


def _mark(notes: str) -> str:
    return notes.removeprefix("compose ").split(":")[0] if notes else ""


def test_scan_all_proposes_deprecated_and_archived_marked(guide):
    shelf = scan_composes(guide / "models", guide, include_all=True)
    assert not shelf.skipped
    by_path = {p.compose: p for p in shelf.proposals}
    assert set(by_path) == set(EXPECTED) | set(NOT_LIVE)
    turbo = by_path[f"{Q}/vllm/compose/_archive/dual/autoround-int4/turbo.yml"]
    assert turbo.id == "vllm-qwen3.6-27b-dual-autoround-int4-turbo"  # no _archive in the id
    assert (turbo.gpu_count, turbo.mark) == (2, "archived, deprecated")
    assert turbo.image == "vllm/vllm-openai:nightly-e47c98ef"
    recipes = _loaded(guide, CliRunner().invoke(
        cli, ["init", str(guide), "--scan-composes", str(guide / "models"), "--all"]
    ).stdout)  # fmt: skip
    got = {
        path: (x.host_port, x.hardware.gpu_count, x.engine, x.spec_method, _mark(x.notes))
        for path, x in recipes.items()
    }
    assert got == {**EXPECTED, **NOT_LIVE}


def test_an_archived_twin_gets_its_own_id(guide):
    live = guide / Q / "vllm/compose/dual/autoround-int4/turbo.yml"
    shutil.copy(guide / Q / "vllm/compose/_archive/dual/autoround-int4/turbo.yml", live)
    live.write_text(live.read_text().replace("Deprecated", "Production"))
    ids = sorted(p.id for p in scan_composes(guide / "models", guide, True).proposals)
    assert "vllm-qwen3.6-27b-dual-autoround-int4-turbo" in ids
    assert "vllm-qwen3.6-27b-dual-autoround-int4-turbo-archived" in ids


def test_scan_writes_nothing_and_refuses_github(guide):
    before = sorted(guide.rglob("*"))
    r = CliRunner().invoke(cli, ["init", str(guide), "--scan-composes", str(guide / "models")])
    assert r.exit_code == 0 and sorted(guide.rglob("*")) == before
    r = CliRunner().invoke(
        cli, ["init", str(guide), "--github", "--scan-composes", str(guide / "models")]
    )
    assert r.exit_code == 2 and "--scan-composes only prints" in r.output
    r = CliRunner().invoke(cli, ["init", str(guide), "--all"])
    assert r.exit_code == 2 and "--all goes with --scan-composes" in r.output


def test_a_malformed_variable_is_listed_not_proposed(guide):
    bad = guide / Q / "vllm/compose/single/autoround-int4/bad.yml"
    bad.write_text("services:\n  s:\n    image: vllm/vllm-openai:${TAG/x/y}\n")
    shelf = scan_composes(guide / "models", guide)
    [(path, why)] = [s for s in shelf.skipped if s[0].endswith("bad.yml")]
    assert "invalid interpolation format" in why and str(bad) in why


def test_three_scanned_recipes_pass_a_smoke_run_as_proposed(guide, tmp_path, monkeypatch):
    """A single-GPU vLLM, a dual vLLM MTP and the dual SGLang EAGLE-3 compose, proposed by the
    scan and appended as they are, pass a smoke run through a fake `docker` that interpolates
    the files as Compose does; the only thing a maintainer sets is the host's MODEL_DIR. Before
    that, the SGLang run is refused before `up` as a setup error naming MODEL_DIR."""
    from kits.composekit import calls, fake_compose_docker
    from kits.smokekit import free_port, with_path

    from watcher.smoke.hardware import Gpu, GpuReading
    from watcher.smoke.run import run_recipe

    # the defaults the files publish, moved to free ports (this host runs other tests too)
    for f in [*guide.rglob("*.yml"), *guide.rglob(".env")]:
        f.write_text(re.sub(r"(PORT:-|PORT=)(\d+)", lambda m: m.group(1) + str(free_port()),
                            f.read_text()))  # fmt: skip
    state = tmp_path / "docker-state"
    fake_compose_docker(tmp_path / "bin", state=state, images=True)
    with_path(monkeypatch, tmp_path / "bin")
    for name in ("PORT", "ESTATE_PORT", "MODEL_DIR", "FAKE_DOCKER_STATE", "FAKE_COMPOSE_IMAGES"):
        monkeypatch.delenv(name, raising=False)
    r = CliRunner().invoke(cli, ["init", str(guide), "--scan-composes", str(guide / "models")])
    assert r.exit_code == 0, r.output
    (guide / "watch.toml").write_text('[watcher]\ndata_dir = "data"\n' + r.stdout)
    cfg = load_config(guide / "watch.toml")
    by_id = {x.id: x for x in cfg.recipes}
    two = GpuReading((Gpu("NVIDIA GeForce RTX 3090", 24576, "8.6"),) * 2, "nvml")
    sglang = by_id["sglang-qwen3.6-27b-dual-autoround-int4-eagle3"]
    doc = run_recipe(cfg, sglang, reading=two)
    assert doc["outcome"] == "error" and "requires MODEL_DIR" in doc["reason"]
    assert not any("up" in c for c in calls(state))
    monkeypatch.setenv("MODEL_DIR", str(tmp_path / "models"))  # the one thing set by hand
    for rid in (
        "vllm-qwen3.6-27b-single-autoround-int4-long-text",
        "vllm-qwen3.6-27b-dual-fp8-max",
        "sglang-qwen3.6-27b-dual-autoround-int4-eagle3",
    ):
        recipe = by_id[rid]
        doc = run_recipe(cfg, recipe, reading=two)
        assert doc["outcome"] == "passed", (rid, doc["reason"])
        assert doc["launch"]["port"] == recipe.host_port
        assert doc["teardown"]["leftovers"] == []
