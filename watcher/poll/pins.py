"""Each recipe's pin, read: the commit it resolves to (and how), whether its build still exists,
and how each tracked fix's commit compares with it.

How a pin resolves, never guessed: a tag through the engine repository's git tags (the image
tag itself, then its version part: `server-cuda-b10236` -> `b10236`); a `nightly-<sha>` or
`sha-<sha>` tag through its sha; a digest through its image config's
`org.opencontainers.image.revision` label (or `…version` through the tags), read from the
registry; a package version through the tag `v<version>` or `<version>`.
Liveness runs on its own schedule (daily by default): one HEAD per image with If-None-Match, or
one read of the package's index page. A registry that fails leaves the last answer, marked with
its error: one pin stale, never the cycle. Fix compares are kept per (fix, pin) commit pair: a
commit's ancestry never changes, so each is asked once. A pin found gone is given a successor:
the newest release whose image exists and descends from the pinned commit (poll.successor).
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

from watcher.config.model import Config, Recipe
from watcher.config.pins import Pin, is_sha, recipe_pin
from watcher.core.clock import iso, parse_iso
from watcher.core.errors import GitHubError
from watcher.poll.registry import Registry, RegistryError
from watcher.poll.successor import successor
from watcher.store.db import Store

log = logging.getLogger("watcher.poll.pins")

CHECK_EVERY = timedelta(hours=24)
LABEL_REVISION = "org.opencontainers.image.revision"
LABEL_SOURCE = "org.opencontainers.image.source"
LABEL_VERSION = "org.opencontainers.image.version"
_VERSIONISH = re.compile(r"(v?\d+(?:\.\d+)+(?:rc\d+|\.post\d+)?|b\d+)$")


def tag_commit(client, repo: str, tag: str) -> str | None:
    """The commit the git tag `tag` of `repo` points at, or None when there is no such tag."""
    try:
        data = client.get_json(f"/repos/{repo}/git/ref/tags/{quote(tag, safe='')}")
    except GitHubError as e:
        if e.status == 404:
            return None
        raise
    obj = data.get("object") or {}
    if obj.get("type") == "tag":  # an annotated tag: the commit it tags
        commit = client.get_json(f"/repos/{repo}/commits/{quote(tag, safe='')}")
        return commit.get("sha")
    return obj.get("sha")


def tag_candidates(tag: str) -> list[str]:
    """The image tag, then its version part (`server-cuda-b10236` -> `b10236`, `v0.5.12-cu129`
    -> `v0.5.12`), with and without a leading v."""
    out = [tag]
    for part in [tag, *tag.split("-")]:
        m = _VERSIONISH.search(part)
        if m and m.group(1) not in out:
            out.append(m.group(1))
    for t in list(out):
        alt = t[1:] if t.startswith("v") else f"v{t}" if t[:1].isdigit() else None
        if alt and alt not in out:
            out.append(alt)
    return out


def resolve(pin: Pin, client, registry: Registry) -> dict[str, Any]:
    """{sha, how} or {why}: the pinned commit and how it was found, or why it cannot be."""
    if pin.kind == "none":
        return {"why": pin.why}
    if not pin.repo:
        return {"why": "no engine repository is known for it (give [recipe.source] repo)"}
    if pin.kind == "nightly":
        return {"sha": pin.sha, "how": f"the tag {pin.ref} names commit {pin.sha}"}
    if pin.kind in ("tag", "version"):
        wanted = tag_candidates(pin.ref if pin.kind == "tag" else pin.version)
        for t in wanted:
            sha = tag_commit(client, pin.repo, t)
            if sha:
                return {"sha": sha, "how": f"tag {t} of {pin.repo} on GitHub", "tag": t}
        return {"why": f"no tag {' or '.join(wanted)} in {pin.repo} on GitHub"}
    # a digest: what the image says it was built from
    labels = registry.labels(pin.registry, pin.name, pin.ref)  # RegistryError: stale, kept
    labels = {k: v for k, v in labels.items() if k.startswith("org.opencontainers.image.")}
    source = labels.get(LABEL_SOURCE, "")
    if source and not same_repo(source, pin.repo):
        return {
            "why": f"its image says it was built from {source}, not {pin.repo}",
            "labels": labels,
        }
    revision = labels.get(LABEL_REVISION, "").strip().lower()
    if is_sha(revision):
        return {
            "sha": revision,
            "how": f"label {LABEL_REVISION} of the image config",
            "labels": labels,
        }
    version = labels.get(LABEL_VERSION, "").strip()
    if version:
        for t in tag_candidates(version):
            sha = tag_commit(client, pin.repo, t)
            if sha:
                how = f"label {LABEL_VERSION} = {version}, tag {t} of {pin.repo} on GitHub"
                return {"sha": sha, "how": how, "labels": labels}
    return {
        "why": f"its image config has no {LABEL_REVISION} label (nor a {LABEL_VERSION} that is a"
        f" tag of {pin.repo}): the commit it was built from is not recorded",
        "labels": labels,
    }


def same_repo(source: str, repo: str) -> bool:
    """Does an image's `org.opencontainers.image.source` name this GitHub repository?"""
    parts = urlsplit(source.strip())
    path = re.sub(r"\.git$", "", parts.path.strip("/"))
    return parts.hostname == "github.com" and path.lower() == repo.lower()


def _fix(item_id: str, row: dict[str, Any], repo: str) -> dict[str, Any] | None:
    """A merged item's fix, when it landed in `repo` (the pinned engine's repository)."""
    details = row.get("details") or {}
    sha = details.get("merge_commit_sha")
    fix_repo = details.get("superseded_repo") or row.get("repo") or ""
    if not sha or not repo or fix_repo.lower() != repo.lower():
        return None
    ref = details.get("superseded_ref") or f"{fix_repo}#{row.get('number')}"
    return {
        "item": item_id,
        "ref": ref.split("/", 1)[-1],
        "fix_sha": sha,
        "merged_at": details.get("superseded_merged_at") or details.get("merged_at"),
        "first_release": row.get("in_release"),
    }


def tracked_fixes(cfg: Config, recipe: Recipe, items: dict[str, dict], repo: str) -> list[dict]:
    """The merged fixes of the recipe's blockers that landed in the pinned engine's repository."""
    out = []
    for blocker_id in recipe.blockers:
        try:
            blocker = cfg.blocker(blocker_id)
        except KeyError:
            continue
        for item_id in blocker.items:
            fix = _fix(item_id, items.get(item_id) or {}, repo)
            if fix is not None:
                out.append({"blocker": blocker_id, **fix})
    return out


def other_fixes(cfg: Config, items: dict[str, dict], repo: str, skip: set[str]) -> list[dict]:
    """The watch list's other merged items in the pinned repository (the tracker's rows that are
    no blocker's item of this recipe): compared with the pin only so the audit can place them."""
    out = []
    for item in cfg.items:
        fix = None if item.id in skip else _fix(item.id, items.get(item.id) or {}, repo)
        if fix is not None:
            out.append(fix)
    return out


def compare_fixes(client, repo: str, pin_sha: str, fixes: list[dict], known: list[dict]) -> None:
    """Each fix's compare/{fix}...{pin} status, in place; answers for the same pair are reused."""
    seen = {(f.get("fix_sha"), f.get("pin_sha")): f for f in known if f.get("compare")}
    for f in fixes:
        f["pin_sha"] = pin_sha
        old = seen.get((f["fix_sha"], pin_sha))
        if old:
            f["compare"] = old["compare"]
            continue
        try:
            data = client.get_json(
                f"/repos/{repo}/compare/{f['fix_sha']}...{pin_sha}", {"per_page": 1}
            )
            f["compare"] = data.get("status")
        except GitHubError as e:
            f["compare"] = None
            f["why"] = "the commits do not share history" if e.status == 404 else str(e)


def check_liveness(pin: Pin, registry: Registry, last: dict[str, Any], at: str) -> dict[str, Any]:
    """The pin's build asked for now: exists, digest, last seen, gone since; an error keeps the
    last answer and says why it is stale."""
    live = dict(last)
    live.pop("error", None)
    live["checked_at"] = at
    try:
        if pin.kind == "version":
            exists, digest, requests, not_modified = (
                registry.package(pin.index, pin.package, pin.version), "", 1, False,
            )  # fmt: skip
        else:
            h = registry.head(pin.registry, pin.name, pin.ref, last.get("etag") or "")
            exists, digest, requests, not_modified = h.exists, h.digest, h.requests, h.not_modified
            if h.etag:
                live["etag"] = h.etag
    except RegistryError as e:
        live["error"] = str(e)
        return live
    live["requests"] = requests
    live["exists"] = exists
    if exists:
        live["last_seen"] = at
        live["gone_since"] = None
        if digest or not not_modified:
            live["last_digest"] = digest or live.get("last_digest")
    else:
        live["gone_since"] = live.get("gone_since") or at
        live.pop("etag", None)
    return live


def liveness_due(live: dict[str, Any], now: datetime, every: timedelta = CHECK_EVERY) -> bool:
    checked = parse_iso(live.get("checked_at")) if live.get("checked_at") else None
    return checked is None or now - checked >= every


def refresh_pins(
    cfg: Config,
    store: Store,
    client,
    now: datetime,
    *,
    check: bool = False,
    registry: Registry | None = None,
    every: timedelta = CHECK_EVERY,
) -> dict[str, dict[str, Any]]:
    """Read every recipe's pin and store it: resolution when the pin changed or liveness is
    due, fix compares once per commit pair, liveness when due (or `check`). -> recipe -> doc."""
    at = iso(now)
    items = store.items()
    stored = store.pins()
    for gone_recipe in set(stored) - {r.id for r in cfg.recipes}:
        store.drop_pin(gone_recipe)
    own = registry is None
    registry = registry or Registry()
    out: dict[str, dict[str, Any]] = {}
    shared: list[
        dict[str, Any]
    ] = []  # compares answered this cycle: recipes sharing a pin ask once
    try:
        for recipe in cfg.recipes:
            out[recipe.id] = _one(
                cfg,
                recipe,
                stored.get(recipe.id) or {},
                items,
                client,
                registry,
                now,
                at,
                check,
                every,
                shared,
            )
            store.put_pin(recipe.id, out[recipe.id], at)
    finally:
        if own:
            registry.close()
    return out


def _one(
    cfg, recipe, old, items, client, registry, now, at, check, every, shared: list[dict]
) -> dict[str, Any]:
    pin = recipe_pin(recipe)
    doc: dict[str, Any] = pin.as_dict()
    same = old.get("reference") == pin.reference and old.get("kind") == pin.kind
    live = dict(old.get("liveness") or {}) if same else {}
    due = pin.kind != "none" and (check or liveness_due(live, now, every))
    known = old.get("resolved") or {}
    # a digest or a sha names one build forever: what it resolved to is never asked again
    settled = pin.kind in ("digest", "nightly") and not known.get("error")
    settled = settled and not str(known.get("why", "")).endswith("could not be read")
    if same and known and (not due or settled):
        doc["resolved"] = known
    else:
        try:
            doc["resolved"] = resolve(pin, client, registry)
        except (GitHubError, RegistryError) as e:  # keep what was known; say why it is stale
            where = "GitHub" if isinstance(e, GitHubError) else "the registry"
            kept = (old.get("resolved") or {}) if same else {}
            doc["resolved"] = (
                {**kept, "error": f"{where}: {e}"}
                if kept.get("sha")
                else {"why": f"{where} could not be read: {e}"}
            )
    if due:
        live = check_liveness(pin, registry, live, at)
    doc["liveness"] = live
    sha = doc["resolved"].get("sha")
    fixes = tracked_fixes(cfg, recipe, items, pin.repo)
    if sha and fixes:
        compare_fixes(client, pin.repo, sha, fixes, old.get("fixes") or [])
    doc["fixes"] = fixes
    if cfg.tracker is not None:  # the audit places every merged row against the pins, not
        others = other_fixes(cfg, items, pin.repo, {f["item"] for f in fixes})  # only blockers'
        if sha and others:
            compare_fixes(client, pin.repo, sha, others, [*old.get("tracked", ()), *shared])
            shared.extend(f for f in others if f.get("compare"))
        doc["tracked"] = others
    if same and old.get("bump"):  # the gate's last verdict on this pin (watcher.bisect.bump)
        doc["bump"] = old["bump"]
    if live.get("exists") is False and not sha:
        doc["successor"] = {
            "why": "its pin resolves to no commit, so which builds carry its fixes is not known"
        }
    elif live.get("exists") is False:
        known_next = (old.get("successor") or {}) if same else {}
        doc["successor"] = (
            known_next
            if known_next.get("release") or not due
            else successor(pin, sha, client, registry)
        )
    return doc
