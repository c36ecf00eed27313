"""Pins: each form read from a recipe, resolved to a commit (or said why not) against the fake
GitHub and the fake OCI registry, liveness through HEAD and the token flow, and fixes in-pin vs
awaiting-pin by the compare API."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from kits.watchtoml import load_watch

from watcher.config.pins import parse_image, recipe_pin
from watcher.core.errors import ConfigError
from watcher.fakes.registry import FakeRegistry
from watcher.github.client import GitHubClient
from watcher.judge.pins import AWAITING_PIN, IN_PIN, readiness, view
from watcher.poll.pins import refresh_pins, resolve, tag_candidates, tracked_fixes
from watcher.poll.registry import Registry, RegistryError, registry_map

VLLM = "vllm-project/vllm"
IK = "ikawrakow/ik_llama.cpp"
NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def test_image_references_split_like_docker():
    assert parse_image("vllm/vllm-openai:v0.27.1") == (
        "docker.io",
        "vllm/vllm-openai",
        "v0.27.1",
        "",
    )
    assert parse_image("ubuntu") == ("docker.io", "library/ubuntu", "", "")
    d = "sha256:" + "ab" * 32
    assert parse_image(f"ghcr.io/ggml-org/llama.cpp:server-cuda@{d}") == (
        "ghcr.io", "ggml-org/llama.cpp", "server-cuda", d,
    )  # fmt: skip
    assert parse_image("localhost:5000/x/y:1") == ("localhost:5000", "x/y", "1", "")
    assert isinstance(parse_image("Bad/Name:x"), str)
    assert isinstance(parse_image("a/b@sha256:short"), str)


def test_tag_candidates_take_the_version_part():
    assert tag_candidates("server-cuda-b10236") == ["server-cuda-b10236", "b10236"]
    assert tag_candidates("v0.5.12-cu129")[:2] == ["v0.5.12-cu129", "v0.5.12"]
    assert "v0.27.1" in tag_candidates("0.27.1")


def test_an_image_source_label_must_name_the_engine_repository_itself():
    from watcher.poll.pins import same_repo

    assert same_repo("https://github.com/ikawrakow/ik_llama.cpp.git", IK)
    assert same_repo("https://github.com/ikawrakow/ik_llama.cpp/", IK)
    assert not same_repo("https://github.com/evil/ikawrakow/ik_llama.cpp", IK)
    assert not same_repo("https://evil.github.com/ikawrakow/ik_llama.cpp", IK)
    assert not same_repo("https://github.com/ikawrakow/ik_llama.cpp-fork", IK)


def test_registry_map_refuses_plain_http_off_loopback():
    env = {
        "WATCHER_REGISTRY_MAP": "docker.io=http://127.0.0.1:5000, ghcr.io=https://mirror.example"
    }
    assert registry_map(env) == {
        "docker.io": "http://127.0.0.1:5000",
        "ghcr.io": "https://mirror.example",
    }
    with pytest.raises(ConfigError, match="WATCHER_REGISTRY_MAP.*loopback"):
        registry_map({"WATCHER_REGISTRY_MAP": "docker.io=http://10.0.0.5:5000"})
    with pytest.raises(ConfigError, match="not host=URL"):
        registry_map({"WATCHER_REGISTRY_MAP": "docker.io"})


@pytest.fixture
def reg():
    with FakeRegistry() as r:
        yield r


def _mapped(reg) -> Registry:
    return Registry({"docker.io": reg.url, "ghcr.io": reg.url}, timeout=2.0)


def test_head_follows_the_token_flow_and_sends_no_github_token(reg, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    digest = reg.add_image("vllm/vllm-openai", "v0.27.1")
    with _mapped(reg) as r:
        h = r.head("docker.io", "vllm/vllm-openai", "v0.27.1")
        assert (h.exists, h.digest) == (True, digest)
        assert h.requests == 3  # 401, token, HEAD with the token
        again = r.head("docker.io", "vllm/vllm-openai", "v0.27.1", etag=h.etag)
        assert again.not_modified and again.requests == 1  # the token is reused; 304
        reg.purge("vllm/vllm-openai", "v0.27.1")
        assert r.head("docker.io", "vllm/vllm-openai", "v0.27.1").exists is False
    sent = [q["authorization"] or "" for q in reg.requests]
    assert not any("ghp_secret" in a for a in sent)
    assert [q["path"] for q in reg.requests][:2] == [
        "/v2/vllm/vllm-openai/manifests/v0.27.1",
        "/token",
    ]


def test_a_registry_that_lies_hangs_or_floods_is_an_error_not_an_answer(reg):
    digest = reg.add_image("ik/ik", "t")
    reg.lie[digest] = "sha256:" + "1" * 64
    reg.hang.add("/hang/")
    reg.huge.add("/huge/")
    reg.hang_seconds = 5
    with _mapped(reg) as r:
        with pytest.raises(RegistryError, match="another digest"):
            r.head("docker.io", "ik/ik", digest)
        with pytest.raises(RegistryError, match="larger than"):
            r.manifest("docker.io", "huge/x", "t")
        with pytest.raises(RegistryError, match="ReadTimeout|no full answer"):
            r.head("docker.io", "hang/x", "t")
        with pytest.raises(RegistryError, match="not asked again in this check"):
            r.head("docker.io", "ik/ik", "t")  # a host that hung is not waited on twice


def _config(tmp_path, recipes: str, items: str = "", blockers: str = "", gh_url: str = ""):
    return load_watch(
        tmp_path,
        f"""
[watcher]
github_api_url = "{gh_url}"
data_dir = "data"
{items}
{blockers}
{recipes}
""",
    )


def _recipe(rid: str, engine: str, image: str, blockers: str = "[]") -> str:
    return f"""
[[recipe]]
id = "{rid}"
engine = "{engine}"
blockers = {blockers}
command = {json.dumps(["docker", "run", "--rm", "--gpus", "all", "-p", "8000:8000", image, "--model", "m"])}
"""


def test_each_pin_form_resolves_or_says_why(tmp_path, fake_github, reg):
    gh = fake_github
    c1 = gh.add_commit(VLLM, message="one", date="2026-06-01T00:00:00Z")
    gh.add_tag(VLLM, "v0.23.1", c1["sha"])
    c2 = gh.add_commit(IK, message="ik", date="2026-08-01T00:00:00Z")
    labelled = reg.add_image(
        "ikawrakow/ik_llama.cpp",
        None,
        {
            "org.opencontainers.image.revision": c2["sha"],
            "org.opencontainers.image.source": f"https://github.com/{IK}",
        },
    )
    bare = reg.add_image("ikawrakow/ik_llama.cpp", None, {})
    nightly = "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"
    (tmp_path / "c.yml").write_text(
        "services:\n  e:\n    image: vllm/vllm-openai:nightly-${VLLM_NIGHTLY_SHA}\n"
        "    ports: ['8000:8000']\n",
        encoding="utf-8",
    )
    cfg = _config(
        tmp_path,
        _recipe("tag", "vllm", "vllm/vllm-openai:v0.23.1")
        + _recipe("missing-tag", "vllm", "vllm/vllm-openai:v9.9.9")
        + _recipe("nightly", "vllm", f"vllm/vllm-openai:nightly-{nightly}")
        + _recipe("digest", "ik_llama.cpp", f"ikawrakow/ik_llama.cpp@{labelled}")
        + _recipe("digest-bare", "ik_llama.cpp", f"ikawrakow/ik_llama.cpp@{bare}")
        + _recipe("floating", "vllm", "vllm/vllm-openai")
        + '[[recipe]]\nid = "compose"\nengine = "vllm"\ncompose = "c.yml"\nservice = "e"\n',
        gh_url=gh.url,
    )
    got = {}
    with GitHubClient(gh.url, token="test-token") as client, _mapped(reg) as r:
        for recipe in cfg.recipes:
            got[recipe.id] = resolve(recipe_pin(recipe), client, r)
    assert (
        got["tag"]["sha"] == c1["sha"] and "tag v0.23.1 of vllm-project/vllm" in got["tag"]["how"]
    )
    assert got["missing-tag"] == {"why": "no tag v9.9.9 or 9.9.9 in vllm-project/vllm on GitHub"}
    assert got["nightly"]["sha"] == nightly and "names commit" in got["nightly"]["how"]
    assert got["digest"]["sha"] == c2["sha"]
    assert "label org.opencontainers.image.revision" in got["digest"]["how"]
    assert "has no org.opencontainers.image.revision label" in got["digest-bare"]["why"]
    assert "names no build" in got["floating"]["why"]
    assert recipe_pin(cfg.recipe("floating")).kind == "none"
    assert "${VLLM_NIGHTLY_SHA} from the environment" in got["compose"]["why"]


def test_a_package_version_resolves_through_its_release_tag(tmp_path, fake_github, reg):
    c = fake_github.add_commit(VLLM, message="r", date="2026-06-01T00:00:00Z")
    fake_github.add_tag(VLLM, "v0.27.1", c["sha"])
    reg.add_package("vllm", "vllm-0.27.1-cp38-abi3-manylinux1_x86_64.whl")
    cfg = _config(
        tmp_path,
        '[[recipe]]\nid = "wheel"\nengine = "vllm"\ncommand = ["vllm", "serve", "m"]\n'
        f'[recipe.source]\nrequirement = "vllm==0.27.1"\nindex = "{reg.url}/simple"\n',
    )
    pin = recipe_pin(cfg.recipes[0])
    assert (pin.kind, pin.package, pin.version) == ("version", "vllm", "0.27.1")
    with GitHubClient(fake_github.url, token="test-token") as client, _mapped(reg) as r:
        assert resolve(pin, client, r)["sha"] == c["sha"]
        assert r.package(pin.index, "vllm", "0.27.1") is True
        assert r.package(pin.index, "vllm", "0.27.10") is False


PULL_ITEM = """
[[item]]
id = "marlin-fix"
repo = "vllm-project/vllm"
kind = "pull"
number = 45295
label = "Marlin pad fix"

[[blocker]]
id = "marlin-pad"
title = "Marlin pad"
items = ["marlin-fix"]
"""


def test_fix_in_pin_or_awaiting_pin_and_a_purged_pin(tmp_path, fake_github, reg, store):
    gh = fake_github
    old = gh.add_commit(VLLM, message="base", date="2026-06-01T00:00:00Z")
    gh.add_tag(VLLM, "v0.23.1", old["sha"])
    fix = gh.add_commit(VLLM, message="Fix Marlin pad (#45295)", date="2026-06-30T00:00:00Z")
    new = gh.add_commit(VLLM, message="release", date="2026-07-02T00:00:00Z")
    gh.add_tag(VLLM, "v0.24.0", new["sha"])
    reg.add_image("vllm/vllm-openai", "v0.23.1")
    reg.add_image("vllm/vllm-openai", "v0.24.0")
    cfg = _config(
        tmp_path,
        _recipe("old-pin", "vllm", "vllm/vllm-openai:v0.23.1", '["marlin-pad"]')
        + _recipe("new-pin", "vllm", "vllm/vllm-openai:v0.24.0", '["marlin-pad"]'),
        PULL_ITEM,
        gh_url=gh.url,
    )
    store.upsert_item(
        {
            "id": "marlin-fix", "repo": VLLM, "kind": "pull", "number": 45295, "state": "merged",
            "in_release": "v0.24.0",
            "details": {"merge_commit_sha": fix["sha"], "merged_at": "2026-06-30T00:00:00Z"},
        }
    )  # fmt: skip
    with GitHubClient(gh.url, token="test-token") as client, _mapped(reg) as r:
        gh_before = len(gh.requests)
        docs = refresh_pins(cfg, store, client, NOW, registry=r)
        # a daily check's cost: 401 + token + HEAD for the first tag of a repository, one HEAD
        # for another tag of it (its token kept); one git ref per tag, one compare per fix
        assert len(reg.requests) == 4
        assert sorted(q.path.split("/")[4] for q in gh.requests[gh_before:]) == [
            "compare",
            "compare",
            "git",
            "git",
        ]
        old_view, new_view = view(docs["old-pin"]), view(docs["new-pin"])
        assert old_view["fixes"][0]["state"] == AWAITING_PIN
        assert old_view["fixes"][0]["text"] == (
            "fixed upstream in vllm#45295 (2026-06-30); not in our pin v0.23.1; first in v0.24.0"
        )
        assert new_view["fixes"][0]["state"] == IN_PIN
        held = readiness(docs["old-pin"], {"marlin-pad": "fix-merged"})
        assert held == {
            "ready_on_pin": False,
            "held_by_pin": ["marlin-pad"],
            "newer_builds": ["v0.24.0"],
            "gone": None,
        }
        assert readiness(docs["new-pin"], {"marlin-pad": "fix-merged"})["ready_on_pin"] is True
        assert docs["old-pin"]["liveness"]["exists"] is True

        # the next cycle asks nothing of the registry (daily) and repeats no compare
        before_reg, before_gh = len(reg.requests), len(gh.requests)
        refresh_pins(cfg, store, client, NOW + timedelta(minutes=1), registry=r)
        assert len(reg.requests) == before_reg
        assert [q for q in gh.requests[before_gh:] if "/compare/" in q.path] == []

        reg.purge("vllm/vllm-openai", "v0.23.1")
        docs = refresh_pins(cfg, store, client, NOW + timedelta(hours=25), registry=r)
    live = docs["old-pin"]["liveness"]
    assert live["exists"] is False and live["gone_since"] == "2026-09-02T13:00:00Z"
    assert live["last_seen"] == "2026-09-01T12:00:00Z" and live["last_digest"].startswith("sha256:")
    assert "no longer exists" in readiness(docs["old-pin"], {})["gone"]
    assert store.pins()["old-pin"]["liveness"]["exists"] is False


def test_a_registry_that_hangs_makes_one_pin_stale(tmp_path, fake_github, reg, store):
    reg.add_image("vllm/vllm-openai", "v0.23.1")
    reg.add_image("lmsysorg/sglang", "v0.5.12")
    reg.add_image("ghcr/other", "b1")
    reg.hang.add("/v2/lmsysorg/")
    reg.hang_seconds = 4
    cfg = _config(
        tmp_path,
        _recipe("ok", "vllm", "vllm/vllm-openai:v0.23.1")
        + _recipe("slow", "sglang", "lmsysorg/sglang:v0.5.12"),
        gh_url=fake_github.url,
    )
    with (
        GitHubClient(fake_github.url, token="test-token") as client,
        Registry({"docker.io": reg.url}, timeout=1.0) as r,
    ):
        docs = refresh_pins(cfg, store, client, NOW, registry=r)
    assert docs["ok"]["liveness"]["exists"] is True
    assert (
        "exists" not in docs["slow"]["liveness"]
        and "ReadTimeout" in docs["slow"]["liveness"]["error"]
    )


def test_watcher_pins_check_lists_pin_commit_liveness_and_fixes(
    tmp_path, fake_github, reg, monkeypatch
):
    from click.testing import CliRunner

    from watcher.cli import cli
    from watcher.store.db import Store

    gh = fake_github
    old = gh.add_commit(VLLM, message="base", date="2026-06-01T00:00:00Z")
    gh.add_tag(VLLM, "v0.23.1", old["sha"])
    fix = gh.add_commit(VLLM, message="Fix (#45295)", date="2026-06-30T00:00:00Z")
    gh.add_pull(
        VLLM,
        45295,
        title="Marlin pad fix",
        merged=True,
        merge_commit_sha=fix["sha"],
        merged_at="2026-06-30T00:00:00Z",
    )
    reg.add_image("vllm/vllm-openai", "v0.23.1")
    monkeypatch.setenv("WATCHER_REGISTRY_MAP", f"docker.io={reg.url}")
    monkeypatch.setenv("GITHUB_API_URL", gh.url)
    cfg = _config(
        tmp_path,
        _recipe("old-pin", "vllm", "vllm/vllm-openai:v0.23.1", '["marlin-pad"]'),
        PULL_ITEM,
        gh_url=gh.url,
    )
    store = Store(cfg.db_path)
    store.upsert_item(
        {"id": "marlin-fix", "repo": VLLM, "kind": "pull", "number": 45295, "state": "merged",
         "details": {"merge_commit_sha": fix["sha"], "merged_at": "2026-06-30T00:00:00Z"}}
    )  # fmt: skip
    store.close()
    config = str(tmp_path / "watch.toml")
    before = CliRunner().invoke(cli, ["pins", "--config", config])
    assert before.exit_code == 0, before.output
    assert "not read yet" in before.output and not reg.requests
    r = CliRunner().invoke(cli, ["pins", "--config", config, "--check", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)["old-pin"]
    assert doc["resolved"]["sha"] == old["sha"] and doc["liveness"]["exists"] is True
    assert doc["fixes"][0]["state"] == AWAITING_PIN and doc["gone"] is None
    text = CliRunner().invoke(cli, ["pins", "--config", config]).output
    assert "old-pin  vllm/vllm-openai:v0.23.1  (tag, from command)" in text
    assert f"commit   {old['sha'][:12]} (tag v0.23.1 of vllm-project/vllm on GitHub)" in text
    assert "exists   yes, sha256:" in text
    assert (
        "fix      marlin-pad: fixed upstream in vllm#45295 (2026-06-30); not in our pin v0.23.1"
        in text
    )
    assert "ready    not on its pin: marlin-pad fixed upstream, not in v0.23.1" in text
    explained = CliRunner().invoke(cli, ["explain", "marlin-pad", "--config", config])
    assert explained.exit_code == 0, explained.output
    assert (
        "in old-pin's pin: fixed upstream in vllm#45295 (2026-06-30); not in our pin v0.23.1"
        in explained.output
    )
    as_json = json.loads(
        CliRunner().invoke(cli, ["explain", "marlin-pad", "--json", "--config", config]).output
    )
    assert as_json["in_pins"]["old-pin"][0].startswith("fixed upstream in vllm#45295")


def test_a_hostile_registry_gets_no_token_and_its_tampered_blob_no_belief(reg):
    c = "0123456789abcdef0123456789abcdef01234567"
    digest = reg.add_image("ik/ik", "t", {"org.opencontainers.image.revision": c}, index=False)
    with _mapped(reg) as r:
        assert r.labels("docker.io", "ik/ik", digest)["org.opencontainers.image.revision"] == c
    manifest = json.loads(reg.repos["ik/ik"].manifests[digest][1])
    reg.repos["ik/ik"].blobs[manifest["config"]["digest"]] = b'{"config": {"Labels": {}}}'
    with _mapped(reg) as r, pytest.raises(RegistryError, match="does not hash"):
        r.labels("docker.io", "ik/ik", digest)
    reg.realm = "http://203.0.113.9/token"  # plain http off loopback: never asked
    with _mapped(reg) as r, pytest.raises(RegistryError, match="token realm .* refused"):
        r.head("docker.io", "ik/ik", "t")
    assert not any("203.0.113.9" in q["path"] for q in reg.requests)


def test_a_digest_pin_keeps_its_commit_when_the_registry_fails_later(
    tmp_path, fake_github, reg, store
):
    c = "89abcdef0123456789abcdef0123456789abcdef"
    digest = reg.add_image("ikawrakow/ik_llama.cpp", None, {"org.opencontainers.image.revision": c})
    cfg = _config(
        tmp_path,
        _recipe("ik", "ik_llama.cpp", f"ikawrakow/ik_llama.cpp@{digest}"),
        gh_url=fake_github.url,
    )
    with GitHubClient(fake_github.url, token="test-token") as client, _mapped(reg) as r:
        first = refresh_pins(cfg, store, client, NOW, registry=r, check=True)["ik"]
    assert first["resolved"]["sha"] == c and first["liveness"]["exists"] is True
    # a digest resolves once (401, token, index, manifest, config blob) and then costs one HEAD;
    # the next day's check (a new client) costs the 401, a token and a conditional HEAD (304)
    assert len(reg.requests) == 6
    with GitHubClient(fake_github.url, token="test-token") as client, _mapped(reg) as r:
        refresh_pins(cfg, store, client, NOW + timedelta(days=1), registry=r)
    assert [q["status"] for q in reg.requests[6:]] == [401, 200, 304]
    reg.hang.add("/v2/ikawrakow/")
    reg.hang_seconds = 3
    with (
        GitHubClient(fake_github.url, token="test-token") as client,
        Registry({"docker.io": reg.url}, timeout=1.0) as r,
    ):
        later = refresh_pins(cfg, store, client, NOW + timedelta(hours=1), registry=r, check=True)[
            "ik"
        ]
    assert later["resolved"]["sha"] == c  # settled: not asked again
    assert later["liveness"]["exists"] is True and "ReadTimeout" in later["liveness"]["error"]
    assert later["liveness"]["last_seen"] == "2026-09-02T12:00:00Z"  # the day-1 check, kept


def test_an_image_built_from_another_repository_names_no_commit_of_ours(tmp_path, fake_github, reg):
    # Issue 32's mutation set: an image's source label naming someone else's repository (a
    # fork's build) was trusted for its revision; and github.com's repository names are
    # matched whatever their case, as GitHub does.
    gh = fake_github
    fork = reg.add_image(
        "ikawrakow/ik_llama.cpp",
        None,
        {
            "org.opencontainers.image.revision": "c" * 40,
            "org.opencontainers.image.source": "https://github.com/stranger/ik_llama.cpp",
        },
    )
    cased = reg.add_image(
        "ikawrakow/ik_llama.cpp",
        None,
        {
            "org.opencontainers.image.revision": "d" * 40,
            "org.opencontainers.image.source": "https://github.com/IKawrakow/IK_llama.cpp.git",
        },
    )
    cfg = _config(
        tmp_path,
        _recipe("fork", "ik_llama.cpp", f"ikawrakow/ik_llama.cpp@{fork}")
        + _recipe("cased", "ik_llama.cpp", f"ikawrakow/ik_llama.cpp@{cased}"),
        gh_url=gh.url,
    )
    with GitHubClient(gh.url, token="test-token") as client, _mapped(reg) as r:
        got = {rc.id: resolve(recipe_pin(rc), client, r) for rc in cfg.recipes}
    assert "sha" not in got["fork"]
    assert got["fork"]["why"] == (
        f"its image says it was built from https://github.com/stranger/ik_llama.cpp, not {IK}"
    )
    assert got["cased"]["sha"] == "d" * 40


def test_only_fixes_merged_in_the_pinned_engines_repository_are_compared(tmp_path):
    # Issue 32's mutation set: a blocker's fix merged in another repository (a kernel library)
    # was compared against the engine's pin, where its commit can never be.
    items = f"""
[[item]]
id = "engine-fix"
repo = "{VLLM}"
kind = "pull"
number = 1

[[item]]
id = "kernel-fix"
repo = "flashinfer-ai/flashinfer"
kind = "pull"
number = 2
"""
    blockers = '[[blocker]]\nid = "b"\ntitle = "B"\nitems = ["engine-fix", "kernel-fix"]\n'
    cfg = _config(
        tmp_path, _recipe("r", "vllm", "vllm/vllm-openai:v0.23.1", '["b"]'), items, blockers
    )
    rows = {
        "engine-fix": {"repo": VLLM, "number": 1, "details": {"merge_commit_sha": "a" * 40}},
        "kernel-fix": {
            "repo": "flashinfer-ai/flashinfer",
            "number": 2,
            "details": {"merge_commit_sha": "b" * 40},
        },
    }
    fixes = tracked_fixes(cfg, cfg.recipe("r"), rows, VLLM)
    assert [(f["item"], f["fix_sha"]) for f in fixes] == [("engine-fix", "a" * 40)]


def test_an_annotated_tag_resolves_to_the_commit_it_tags(tmp_path, fake_github, reg):
    # Issue 32's mutation set: every tag in the tests was lightweight, so taking an annotated
    # tag's own object sha for the commit passed; vLLM's release tags are annotated.
    gh = fake_github
    c = gh.add_commit(VLLM, message="release", date="2026-06-01T00:00:00Z")
    gh.add_tag(VLLM, "v0.24.0", c["sha"], annotated=True)
    cfg = _config(tmp_path, _recipe("tag", "vllm", "vllm/vllm-openai:v0.24.0"), gh_url=gh.url)
    with GitHubClient(gh.url, token="test-token") as client, _mapped(reg) as r:
        got = resolve(recipe_pin(cfg.recipe("tag")), client, r)
        ref = client.get_json(f"/repos/{VLLM}/git/ref/tags/v0.24.0")
    assert ref["object"]["type"] == "tag" and ref["object"]["sha"] != c["sha"]
    assert got["sha"] == c["sha"] and got["tag"] == "v0.24.0"
