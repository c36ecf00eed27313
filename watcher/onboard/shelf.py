"""`watcher init --scan-composes FOLDER`: a `[[recipe]]` proposed for each compose file on the
guide's shelf, read as Compose reads it (interpolated, with the `.env` beside it), its header's
Status and `compose/_archive/` respected, and a note for everything it could not tell.

Live composes are proposed; deprecated and archived ones are listed with their reason (`--all`
proposes them too, marked). A PARKED compose is proposed, marked parked: re-testing parked
recipes is what watcher is for. The output is TOML to append to watch.toml; nothing is written.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from watcher.config.composecmd import NOT_LIVE
from watcher.config.composefile import (
    ARCHIVE,
    TOPOLOGY_GPUS,
    engine_of,
    guess_engine,
    load,
    path_labels,
    read_service,
    spec_method,
)
from watcher.config.load import load_config
from watcher.core.errors import ConfigError


@dataclass
class Proposal:
    """A recipe proposed for one compose service, and what could not be told from it."""

    id: str
    compose: str  # relative to the config's folder
    service: str
    engine: str
    labels: dict[str, str]
    gpu_count: int | None
    spec_method: str
    notes: list[str] = field(default_factory=list)
    model: str = ""
    pass_env: list[str] = field(default_factory=list)
    status: str = ""  # the compose's Status word ("" when it has none)
    status_text: str = ""  # its whole Status line
    mark: str = ""  # why it is marked: parked, deprecated, archived (goes into `notes`)
    launcher_vars: list[str] = field(default_factory=list)  # image variables with no default
    image: str = ""
    port: int | None = None
    blockers: list[str] = field(default_factory=list)  # its engine's pages' blockers (watch.toml)


@dataclass
class Shelf:
    """What a scan found: the proposals, and the composes it did not propose, with why."""

    proposals: list[Proposal] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (compose path, reason)
    notes: list[str] = field(default_factory=list)  # about the whole scan


def _slug(*parts: str) -> str:
    text = "-".join(p for p in parts if p).lower()
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9._-]", "-", text)).strip("-.") or "recipe"


def _why_not_live(status: str, archived: bool) -> str:
    reasons = []
    if archived:
        reasons.append(f"archived under compose/{ARCHIVE}/")
    if status in NOT_LIVE:
        reasons.append(f"its Status says {status}")
    return "; ".join(reasons)


def scan_composes(root: Path, base: Path, include_all: bool = False) -> Shelf:
    """One proposal per engine service of every compose file under `root` (`*.yml`, `*.yaml`);
    `base` is the config's folder, which the proposed `compose` paths are relative to."""
    shelf = Shelf()
    seen: set[str] = set()
    # live files first: an archived twin of a live compose gets the `-archived` id, not the live one
    files = sorted(
        {*root.rglob("*.yml"), *root.rglob("*.yaml")}, key=lambda p: (ARCHIVE in p.parts, p)
    )
    for path in files:
        try:
            services = load(path)["services"]
        except ConfigError:
            continue  # not a compose file (or a broken one): nothing to propose
        rel = Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()
        labels = path_labels(path.relative_to(root) if path.is_relative_to(root) else path)
        found: list[Proposal] = []
        for name in sorted(services):
            try:
                svc = read_service(path, name, shown_as=rel, environ={})
            except ConfigError as e:
                shelf.skipped.append((rel, str(e)))
                continue
            uses_gpu = svc.gpu_count is not None or svc.gpus_all
            if guess_engine(svc.image) is None and not uses_gpu and len(services) > 1:
                continue  # no engine image and no GPU beside other services: a sidecar (a UI)
            archived = labels.get("archived") == "yes"
            why = _why_not_live(svc.status, archived)
            if why and not include_all:
                shelf.skipped.append((rel, why))
                continue
            found.append(_propose(svc, rel, name, labels, why))
        for p in found:
            if len(found) > 1:  # two engines in one file: the service tells them apart
                p.id = _slug(p.id, p.service)
            if p.id in seen and p.labels.get("archived"):
                p.id += "-archived"
            while p.id in seen:
                p.id += "-2"
            seen.add(p.id)
        shelf.proposals.extend(found)
    _with_page_blockers(shelf, base)
    return shelf


def _with_page_blockers(shelf: Shelf, base: Path) -> None:
    """A proposal is not a verdict: a compose of an engine whose page (in `base`/watch.toml) has
    blockers is proposed with them, and a note says which page and to drop those it does not
    exercise, so appending it cannot flip that page to ready-to-test."""
    path = base / "watch.toml"
    if not path.is_file():
        return
    try:
        cfg = load_config(path)
    except ConfigError as e:
        shelf.notes.append(f"{path} not read, so no page's blockers are proposed: {e}")
        return
    engines = {r.id: r.engine for r in cfg.recipes}
    pages: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for page in cfg.pages:
        for engine in dict.fromkeys(engines[r] for r in page.recipes if r in engines):
            if page.blockers:
                pages.setdefault(engine, []).append((page.id, page.blockers))
    for p in shelf.proposals:
        found = pages.get(p.engine, [])
        blockers = list(dict.fromkeys(b for _, bs in found for b in bs))
        if not blockers:
            continue
        p.blockers = blockers
        where = ", ".join(f"{pid} ({', '.join(bs)})" for pid, bs in found)
        p.notes.append(
            f"the {p.engine} page(s) {where} name blockers: proposed with them; drop those this"
            " compose does not exercise"
        )


def _propose(svc, rel: str, name: str, labels: dict[str, str], why: str) -> Proposal:
    notes = list(svc.unknown)
    engine, told_by = engine_of(labels.get("engine_dir", ""), svc.image)
    if engine is None:
        engine = "other"
        notes.append(f"engine not told by the folder or the image {svc.image!r}: set `engine`")
    elif not told_by.startswith("the engine folder"):
        notes.append(f"engine {engine} told by {told_by}")
    gpus = svc.gpu_count
    if gpus is None and labels.get("topology") in TOPOLOGY_GPUS:
        gpus = TOPOLOGY_GPUS[labels["topology"]]
        notes = [n for n in notes if "all GPUs" not in n and "reserves no GPU" not in n]
        notes.append(f"GPU count {gpus} guessed from the folder {labels['topology']!r}")
    method = svc.spec_method
    named = spec_method(labels.get("variant", "")) or spec_method(name)
    if method:
        notes.append("set [recipe.checks] min_accept_length for the acceptance floor")
    elif named:
        notes.append(
            f"the name says {named!r} but the service's command turns no spec decode on:"
            " spec_method left unset"
        )
    pass_env = []
    for var, message in svc.required:
        pass_env.append(var)
        notes.append(
            f"the compose requires {var} (`${{{var}:?…}}`: {message!r}): set it in watcher's"
            " environment on the GPU host; pass_env hands it to docker compose"
        )
    if svc.image_vars:
        profile = f" (Engine-profile: {svc.engine_profile})" if svc.engine_profile else ""
        notes.append(
            f"the image {svc.image!r} leaves {', '.join(svc.image_vars)} to the guide's"
            f" launcher{profile}: name the build in [recipe.env]"
        )
    status = svc.status
    marks = [m for m in ("archived" if labels.get("archived") else "", status) if m]
    mark = ", ".join(dict.fromkeys(marks)) if why or status == "parked" else ""
    if mark:
        notes.append(f"marked {mark}: {why or 'its Status says parked'}")
    rid = _slug(
        engine, labels.get("model", ""), labels.get("topology", ""),
        labels.get("quant", ""), labels.get("variant", "") or Path(rel).stem,
    )  # fmt: skip
    return Proposal(
        id=rid,
        compose=rel,
        service=name,
        engine=engine,
        labels=labels,
        gpu_count=gpus,
        spec_method=method,
        notes=notes,
        model=svc.model or labels.get("model", ""),
        pass_env=pass_env,
        status=status,
        status_text=svc.status_text,
        mark=mark,
        launcher_vars=list(svc.image_vars),
        image=svc.image,
        port=svc.host_port,
    )


def _q(value) -> str:
    """A TOML basic string (JSON's escapes are TOML's; non-ASCII kept, so no surrogate pairs)."""
    return json.dumps(value, ensure_ascii=False)


def proposals_toml(shelf: Shelf) -> str:
    """The proposals as [[recipe]] tables to append to watch.toml (TOML strings via json), the
    composes left out listed in comments with their reason."""
    proposals = shelf.proposals
    lines = [
        f"# {len(proposals)} recipe(s) proposed by `watcher init --scan-composes`."
        " Read the notes; add the ids to a page's `recipes` (the engines page) to show them.",
    ]
    lines += [f"# note: {n}" for n in shelf.notes]
    lines.append(
        '# Each is proposed with first_run = "manual": no cycle starts a GPU run of it until'
        ' `watcher smoke ID` has tried it once (or you set first_run = "auto").'
    )
    if shelf.skipped:
        lines.append(
            f"# {len(shelf.skipped)} compose file(s) not proposed"
            " (--all proposes deprecated and archived ones, marked):"
        )
        lines += [f"#   {path}: {why}" for path, why in shelf.skipped]
    for p in proposals:
        lines += ["", "[[recipe]]", f"id = {_q(p.id)}"]
        lines += [f"# note: {n}" for n in p.notes]
        if p.image:
            lines.append(f"# image: {p.image}")
        if p.port is not None:
            lines.append(f"# publishes host port {p.port}")
        lines += [
            f"engine = {_q(p.engine)}",
            f"compose = {_q(p.compose)}",
            f"service = {_q(p.service)}",
        ]
        if p.model:
            lines.append(f"model = {_q(p.model)}")
        if p.labels.get("quant"):
            lines.append(f"quant = {_q(p.labels['quant'])}")
        if p.spec_method:
            lines += [f"spec_method = {_q(p.spec_method)}", "spec_decode = true"]
        if p.pass_env:
            lines.append(f"pass_env = {_q(p.pass_env)}")
        if p.blockers:
            lines.append(f"blockers = {_q(p.blockers)}")
        lines.append('first_run = "manual"')
        if p.mark:
            said = f": {p.status_text}" if p.status_text else ""
            lines.append(f"notes = {_q(f'compose {p.mark}{said}')}")
        if p.gpu_count is not None:
            lines += ["", "[recipe.hardware]", f"gpu_count = {p.gpu_count}"]
        if p.launcher_vars:
            lines += ["", "[recipe.env]"]
            lines += [
                f'# {v} = "..."  # the build the guide\'s launcher fills in'
                for v in p.launcher_vars
            ]
    if proposals:
        ids = ", ".join(_q(p.id) for p in proposals)
        lines += ["", f"# for the engines page: recipes = [{ids}]"]
    return "\n".join(lines) + "\n"
