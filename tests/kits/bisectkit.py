"""Helpers for the bisect tests: an engine repo on the fake GitHub with tagged releases, their
images on the fake registry (`published`), and a config whose recipe runs the fake engine in the
fake docker, its behaviour set by the image tag."""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from kits.smokekit import REPO, RTX3090, fake_docker, fake_nvidia_smi, free_port, with_path
from watcher.fakes.registry import FakeRegistry

ENGINE_REPO = "sgl-project/sglang"
IMAGE = "lmsysorg/sglang"
_REGISTRY: list = []  # the fake registry the seeded builds are published to (see `published`)


@contextmanager
def published(monkeypatch=None):
    """A fake registry on 127.0.0.1 standing in for Docker Hub (WATCHER_REGISTRY_MAP, set through
    `monkeypatch`, else in os.environ until the end): every release `seed_releases` makes is
    published to it, as a tag and as each commit's nightly."""
    with FakeRegistry() as reg:
        before = os.environ.get("WATCHER_REGISTRY_MAP")
        if monkeypatch is not None:
            monkeypatch.setenv("WATCHER_REGISTRY_MAP", f"docker.io={reg.url}")
        else:
            os.environ["WATCHER_REGISTRY_MAP"] = f"docker.io={reg.url}"
        _REGISTRY.append(reg)
        try:
            yield reg
        finally:
            _REGISTRY.remove(reg)
            if monkeypatch is None:
                os.environ.pop("WATCHER_REGISTRY_MAP", None)
                if before is not None:
                    os.environ["WATCHER_REGISTRY_MAP"] = before


def seed_releases(gh, n: int, commits_per_release: int = 2, repo: str = ENGINE_REPO) -> list[dict]:
    """`n` releases v0.1.0 ... v0.1.{n-1}, `commits_per_release` commits each; -> [{tag, sha}]."""
    out = []
    k = 0
    for i in range(n):
        for j in range(commits_per_release):
            day, hour = 1 + k // 24, k % 24
            date = f"2026-{9 + day // 29:02d}-{1 + day % 28:02d}T{hour:02d}:00:00Z"
            c = gh.add_commit(
                repo,
                message=f"Change {k} of release {i}" + ("" if j else " (release commit)"),
                date=date,
            )
            k += 1
            for reg in _REGISTRY:  # the nightly built from each commit
                reg.add_image(IMAGE, f"nightly-dev-{date[:10].replace('-', '')}-{c['sha'][:8]}")
        gh.add_tag(repo, f"v0.1.{i}", c["sha"])
        for reg in _REGISTRY:
            reg.add_image(IMAGE, f"v0.1.{i}", {"org.opencontainers.image.version": f"0.1.{i}"})
        out.append({"tag": f"v0.1.{i}", "sha": c["sha"]})
    return out


def setup(monkeypatch, tmp_path: Path) -> Path:
    """Fake docker and nvidia-smi (an RTX 3090) first on PATH."""
    bin_dir = tmp_path / "bin"
    fake_docker(bin_dir)
    fake_nvidia_smi(bin_dir, [RTX3090])
    with_path(monkeypatch, bin_dir)
    monkeypatch.setenv("FAKE_DOCKER_STATE", str(tmp_path / "docker-state"))
    monkeypatch.setenv("FAKE_DOCKER_GONE", str(tmp_path / "gone.txt"))
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    return tmp_path / "gone.txt"


def write_config(
    tmp_path: Path,
    gh,
    tags: list[str],
    engine_args: list[str],
    *,
    max_runs: int = 100,
    checks: str = "",
    extra: str = "",
    source: str = "",
    blockers: str = '["marlin-pad"]',
    docker: bool = True,
    image_tag: str | None = None,
) -> Path:
    """Without `docker` the engine runs directly and is told its build (`--build {build}`)."""
    launcher = ["docker", "run", "--rm", f"{IMAGE}:{image_tag or tags[-1]}"] if docker else []
    command = [
        *launcher,
        "python" if docker else sys.executable,
        "-m",
        "watcher.fakes.engine",
        "--port",
        "{port}",
        *([] if docker else ["--build", "{build}"]),
        "--ready-delay",
        "0.05",
        "--builds",
        ",".join(tags),
        *engine_args,
    ]
    source = source or f'repo = "{ENGINE_REPO}"\nimage = "{IMAGE}"\ntag = "{{tag}}"'
    text = f"""
[watcher]
github_api_url = "{gh.url}"
data_dir = "data"
site_dir = "site"

[smoke]
max_runs_per_day = {max_runs}

{extra}

[[blocker]]
id = "marlin-pad"
title = "Marlin pad"
signatures = ["marlin-tile-n"]

[[recipe]]
id = "fake"
engine = "sglang"
model = "/models/fake"
port = {free_port()}
startup_timeout = 15
stop_timeout = 2
blockers = {blockers}
pass_env = ["FAKE_DOCKER_STATE"]
command = {json.dumps(command)}

[recipe.source]
{source}

[recipe.hardware]
gpu_name = "RTX 3090"

[recipe.checks]
max_tokens = 16
{checks}

[recipe.env]
PYTHONPATH = "{REPO}"
"""
    path = tmp_path / "watch.toml"
    path.write_text(text, encoding="utf-8")
    return path
