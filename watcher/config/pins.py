"""A recipe's pin: the engine build it runs (an image tag, an image digest, a nightly tag that
names a commit, or a package version), read from its compose file, its docker command or its
[recipe.source]. Pure: nothing here asks a registry or GitHub; what cannot be read says why.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from watcher.config.model import Recipe

# The engine's own repository, where its tags and fixes live (a [recipe.source] repo wins).
ENGINE_REPOS = {
    "sglang": "sgl-project/sglang",
    "vllm": "vllm-project/vllm",
    "llama.cpp": "ggml-org/llama.cpp",
    "ik_llama.cpp": "ikawrakow/ik_llama.cpp",
}
PIN_KINDS = ("tag", "digest", "nightly", "version", "none")

_HEX = re.compile(r"^[0-9a-f]{7,40}$")
_SHA_TAG = re.compile(r"^(?:nightly|sha)-([0-9a-f]{7,40})$|^([0-9a-f]{40})$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9_.-]*)\s*==\s*([A-Za-z0-9_.!+-]+)\s*$")
# docker run options that take a value (the image is the first argument that is not one)
_VALUE_OPTS = {
    "-e", "--env", "-v", "--volume", "-p", "--publish", "--name", "-w", "--workdir", "--gpus",
    "--network", "--net", "--ipc", "--shm-size", "-u", "--user", "--entrypoint", "--env-file",
    "--runtime", "--mount", "-l", "--label", "--platform", "--device", "--ulimit", "-m",
    "--memory", "--cpus", "--pull", "--restart", "-h", "--hostname", "--add-host",
}  # fmt: skip


@dataclass(frozen=True)
class Pin:
    """What a recipe runs, as written, split into the parts a registry or an index is asked for."""

    recipe: str
    kind: str  # one of PIN_KINDS; "none": `why` says what could not be read
    reference: str = ""  # as written: vllm/vllm-openai:v0.27.1, name==1.2.3
    repo: str = ""  # the engine's GitHub repository
    registry: str = ""  # docker.io, ghcr.io, ...
    name: str = ""  # the repository on the registry: vllm/vllm-openai, library/ubuntu
    ref: str = ""  # the tag or the digest asked for
    sha: str = ""  # the commit a nightly-<sha> / sha-<sha> tag names
    package: str = ""
    version: str = ""
    index: str = ""  # a package's PEP 503 simple index
    why: str = ""
    origin: str = ""  # where it was read: compose, command, source

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_image(reference: str) -> tuple[str, str, str, str] | str:
    """`[host[:port]/]path[:tag][@digest]` -> (registry, name, tag, digest), docker's rules
    (docker.io by default, `library/` for one-part names); a string says why it is not one."""
    ref = reference.strip()
    digest = ""
    if "@" in ref:
        ref, digest = ref.split("@", 1)
        if not _DIGEST.match(digest):
            return f"{digest!r} is not a sha256 digest"
    tag = ""
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        ref, tag = ref.rsplit(":", 1)
        if not _TAG.match(tag):
            return f"{tag!r} is not an image tag"
    parts = ref.split("/")
    registry = "docker.io"
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        registry, parts = parts[0], parts[1:]
    if registry in ("index.docker.io", "registry-1.docker.io"):
        registry = "docker.io"
    if not parts or not all(_COMPONENT.match(p) for p in parts):
        return f"{reference!r} is not an image name"
    if registry == "docker.io" and len(parts) == 1:
        parts = ["library", *parts]
    return registry, "/".join(parts), tag, digest


def image_pin(recipe: Recipe, written: str, origin: str, repo: str) -> Pin:
    """The pin an image reference makes: a digest beats a tag (it is what is pulled)."""
    var = _VAR.search(written)
    if var:
        return Pin(
            recipe.id,
            "none",
            written,
            repo,
            why=f"the image {written} takes ${{{var.group(1)}}} from the environment at launch,"
            " with no default here: which build it runs is not knowable from the files",
            origin=origin,
        )
    parsed = parse_image(written)
    if isinstance(parsed, str):
        return Pin(recipe.id, "none", written, repo, why=parsed, origin=origin)
    registry, name, tag, digest = parsed
    base = dict(reference=written, repo=repo, registry=registry, name=name, origin=origin)
    if digest:
        return Pin(recipe.id, "digest", ref=digest, **base)
    if not tag or tag == "latest":
        return Pin(
            recipe.id,
            "none",
            why=f"the image {written} names no build (no tag or digest, or `latest`, which floats)",
            **base,
        )
    m = _SHA_TAG.match(tag)
    if m:
        return Pin(recipe.id, "nightly", ref=tag, sha=m.group(1) or m.group(2), **base)
    return Pin(recipe.id, "tag", ref=tag, **base)


def command_image(argv: tuple[str, ...]) -> str | None:
    """The image of a `docker run` / `podman run` argv, or None."""
    if not argv or Path(argv[0]).name not in ("docker", "podman") or "run" not in argv:
        return None
    args = argv[argv.index("run") + 1 :]
    i = 0
    while i < len(args):
        a = args[i]
        if a in _VALUE_OPTS:
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return a
    return None


def recipe_pin(recipe: Recipe) -> Pin:
    """The recipe's pin, or a Pin of kind "none" that says why there is none to read."""
    repo = (recipe.source.repo if recipe.source else "") or ENGINE_REPOS.get(recipe.engine, "")
    if recipe.image_written:
        return image_pin(recipe, recipe.image_written, "compose", repo)
    image = command_image(recipe.command)
    if image:
        return image_pin(recipe, image, "command", repo)
    src = recipe.source
    if src and src.image and src.tag and "{" not in src.tag:
        return image_pin(recipe, f"{src.image}:{src.tag}", "source", repo)
    if src and src.requirement and "{" not in src.requirement:
        m = _REQ.match(src.requirement)
        if not m:
            return Pin(
                recipe.id,
                "none",
                src.requirement,
                repo,
                why="the requirement is not `name==version`",
                origin="source",
            )
        return Pin(
            recipe.id,
            "version",
            src.requirement,
            repo,
            package=m.group(1),
            version=m.group(2),
            index=src.index or "",
            origin="source",
        )
    return Pin(
        recipe.id,
        "none",
        why="no image in its compose file or docker command, and no fixed [recipe.source]"
        " image tag or `name==version` requirement",
    )


def is_sha(text: str) -> bool:
    return bool(_HEX.match(text or ""))
