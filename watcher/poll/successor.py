"""The build a recipe could move to: an engine release named as an image tag in the pin's own
shape (`v0.27.1` -> `v0.28.0`, `server-cuda-b10236` -> `server-cuda-b10300`), and, for a pin
whose build is gone, the newest release whose image still exists and carries the same fixes.

"Carries the same fixes" is asked once, of ancestry: a release whose commit is `ahead` of the
pinned commit (compare/{pin}...{release}) holds every fix the pin held. Releases are read from
the engine's tags (one page, newest first) and tried newest first, each costing one compare and
one registry HEAD, at most MAX_TRIED of them: a registry or GitHub that fails leaves it unnamed.
"""

from __future__ import annotations

import re
from typing import Any

from watcher.config.pins import Pin
from watcher.core.errors import GitHubError
from watcher.poll.registry import Registry, RegistryError

MAX_TRIED = 5
_VERSION = re.compile(r"v?\d+(?:\.\d+)+(?:rc\d+|\.post\d+)?|b\d+")


def image_tag(pin_ref: str, release: str) -> str:
    """The image tag that names `release` in the shape of the pinned tag: its version part
    swapped (with the pin's `v` or not), or the release itself when the tag has none."""
    found = list(_VERSION.finditer(pin_ref))
    if not found:
        return release
    m = found[-1]
    new = release
    if m.group(0).startswith("v") != release.startswith("v") and release[:1] in "v0123456789":
        new = f"v{release}" if m.group(0).startswith("v") else release.removeprefix("v")
    return pin_ref[: m.start()] + new + pin_ref[m.end() :]


def image_for(pin: Pin, release: str) -> str:
    """The full image reference of `release` for this pin's image repository."""
    host = "" if pin.registry == "docker.io" else f"{pin.registry}/"
    name = pin.name.removeprefix("library/") if not host else pin.name
    return f"{host}{name}:{image_tag(pin.ref if pin.kind == 'tag' else '', release)}"


def _same_shape(pin_ref: str, tag: str) -> bool:
    """Is `tag` a release of the same family as the pinned tag (`b…` for `b10236`, `v…` for
    `v0.27.1`)? A nightly or an rc is never proposed in place of a release."""
    found = list(_VERSION.finditer(pin_ref))
    m = _VERSION.fullmatch(tag)
    if not m or "rc" in tag:
        return False
    if not found:
        return True
    return found[-1].group(0).startswith("b") == tag.startswith("b")


def successor(pin: Pin, pin_sha: str, client, registry: Registry) -> dict[str, Any]:
    """{release, image, sha, how, requests} for the newest live release descending from the
    pinned commit, or {why}. Only a tag pin's family can be named (a digest or a nightly names
    no family of tags)."""
    if pin.kind != "tag" or not pin.repo or not pin_sha:
        return {"why": f"a {pin.kind} pin names no family of releases to choose from; give --to"}
    spent = 0
    try:
        tags = client.get_json(f"/repos/{pin.repo}/tags", {"per_page": 30})
        spent += 1
    except GitHubError as e:
        return {"why": f"the tags of {pin.repo} could not be read: {e}"}
    tried = 0
    for t in tags if isinstance(tags, list) else []:
        name, sha = t.get("name") or "", (t.get("commit") or {}).get("sha") or ""
        if not sha or sha == pin_sha or not _same_shape(pin.ref, name):
            continue
        if tried >= MAX_TRIED:
            break
        tried += 1
        try:
            status = client.get_json(
                f"/repos/{pin.repo}/compare/{pin_sha}...{sha}", {"per_page": 1}
            ).get("status")
            spent += 1
        except GitHubError:
            spent += 1
            continue
        if status != "ahead":  # older than the pin, or off its line: it lacks the pin's fixes
            continue
        tag = image_tag(pin.ref, name)
        try:
            head = registry.head(pin.registry, pin.name, tag)
        except RegistryError:
            continue
        spent += head.requests
        if head.exists:
            return {
                "release": name,
                "image": image_for(pin, name),
                "sha": sha,
                "digest": head.digest,
                "how": f"newest release of {pin.repo} whose image exists and descends from the pin",
                "requests": spent,
            }
    return {
        "why": f"no release of {pin.repo} newer than the pin has a live image",
        "requests": spent,
    }
