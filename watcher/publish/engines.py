"""What an engine's page and the At-a-glance table say about one engine: its status, its pin, the
tracker rows that concern it, and its per-stream speed, tool calls and spec decode from stored
smoke runs, all read from the same evaluation and store rows as every other output.

Status words come from the page context (watcher.publish.context), pins from the stored pins
(watcher.judge.pins), so the engine page, the table, status.json and the site cannot differ.
"""

from __future__ import annotations

import re
from typing import Any

from watcher.config import engines as names
from watcher.config.model import Config, Page
from watcher.config.tracker import plain
from watcher.core.errors import WatcherError
from watcher.judge.audit import audit_tracker, github_emoji
from watcher.judge.evaluate import Evaluation
from watcher.judge.pins import pin_name, recipe_view, tracker_check


def pin_names(cfg: Config, page: Page, ev: Evaluation, pins: dict[str, Any] | None) -> list[str]:
    """The builds the page's recipes pin, each once, in the recipes' order ('v0.27.1')."""
    out: list[str] = []
    for r_id in page.recipes:
        statuses = {b: ev.blockers[b].status for b in cfg.recipe(r_id).blockers}
        view = recipe_view((pins or {}).get(r_id), statuses)
        if view.get("kind") not in (None, "none"):
            name = pin_name(view)
            if name not in out:
                out.append(name)
    return out


def audited_rows(cfg: Config, sources: dict[str, Any]) -> list:
    """The tracker read and audited once per render pass: kept in `sources` (page_sources' dict,
    shared by every page of the pass), so eight engine pages read a 160-row tracker once."""
    if "tracker_audit" not in sources:
        rows = []
        if cfg.tracker is not None:
            from watcher.config.tracker import parse_tracker

            try:
                tracker = parse_tracker(cfg.resolve(cfg.tracker.source))
            except WatcherError:
                tracker = None  # the tracker's own output says why; a page does not repeat it
            if tracker is not None:
                check = tracker_check(sources.get("pins") or {})
                rows = audit_tracker(cfg, tracker, sources["items"], check).rows
        sources["tracker_audit"] = rows
    return sources["tracker_audit"]


def tracker_rows(cfg: Config, engine: str, sources: dict[str, Any]) -> list[dict[str, Any]]:
    """The tracker's rows about `engine`: under a heading naming it, or linking to its repository.
    Each with the maintainers' claim as written and what GitHub says now (watcher.judge.audit)."""
    named = re.compile(rf"(?<![\w.-]){re.escape(names.title(engine))}(?![\w-])", re.IGNORECASE)
    repo = (names.REPOS.get(engine) or "").lower()
    out = []
    for ra in audited_rows(cfg, sources):  # "llama.cpp" is not named by "ik_llama.cpp"
        if not (
            named.search(ra.row.table) or any(link.repo.lower() == repo for link in ra.row.links)
        ):
            continue
        first = ra.links[0] if ra.links else None
        out.append(
            {
                "items": [ls.item_id for ls in ra.links if ls.item_id],
                "name": plain(ra.row.cells[0].text) if ra.row.cells else "",
                "claim": ra.row.status or "",
                "github": github_emoji(ra) if first else "",
                "words": first.words if first else "no link to follow",
                "url": first.url if first else None,
                "disagrees": ra.disagrees,
            }
        )
    return out


def engine_context(
    cfg: Config, page: Page, ev: Evaluation, sources: dict[str, Any]
) -> dict[str, Any]:
    """The extra keys an engine page (templates/engine.md.j2) shows beside the page context."""
    assert page.engine is not None
    shown = {i for b in page.blockers for i in cfg.blocker(b).items}  # each fact once
    rows = tracker_rows(cfg, page.engine, sources)
    return {
        "engine": page.engine,
        "engine_title": names.title(page.engine),
        "pins": pin_names(cfg, page, ev, sources.get("pins")),
        "tracker_rows": [r for r in rows if not shown.intersection(r["items"])],
        "speeds": recipe_speeds(cfg, page, sources["runs"]),
    }


def _passed(runs: list[dict[str, Any]], recipes: tuple[str, ...]) -> list[dict[str, Any]]:
    """Passing runs of these recipes on their target hardware, newest first."""
    return [
        r
        for r in runs
        if r.get("recipe") in recipes
        and r.get("outcome") == "passed"
        and (r.get("hardware") or {}).get("matches_target")
    ]


def _tps(run: dict[str, Any]) -> float | None:
    tps = (run.get("metrics") or {}).get("decode_tokens_per_s")
    return float(tps) if isinstance(tps, int | float) and not isinstance(tps, bool) else None


def recipe_speeds(cfg: Config, page: Page, runs: list[dict[str, Any]]) -> dict[str, str]:
    """recipe -> its per-stream speed in words, from its newest passing target run that measured
    it ('85.1 tokens/s per stream on two RTX 3090s, 2026-11-30'): the run the table's cell is
    the newest of."""
    from watcher.publish.prose import gpu_phrase

    out: dict[str, str] = {}
    for run in _passed(runs, page.recipes):
        if run["recipe"] not in out and _tps(run) is not None:
            gpu = gpu_phrase(cfg.recipe(run["recipe"]).hardware)
            day = str(run.get("finished_at"))[:10]
            out[run["recipe"]] = f"{_tps(run):.1f} tokens/s per stream on {gpu}, {day}"
    return out


def evidence_cells(cfg: Config, page: Page, runs: list[dict[str, Any]]) -> dict[str, str]:
    """The At-a-glance cells watcher has evidence for: per-stream tokens/s and spec decode from
    the newest passing target run that measured them, tool calls from the newest target run
    whose tool-call check ran (a failed check says ❌); absent: no evidence."""
    from watcher.publish.matrix import target_rig

    cells: dict[str, str] = {}
    passed = _passed(runs, page.recipes)
    newest = next((r for r in passed if _tps(r) is not None), None)  # the newest measured
    if newest is not None:
        rig = target_rig(cfg.recipe(newest["recipe"]).hardware)
        when = str(newest.get("finished_at"))[:10]
        cells["tps"] = f"{_tps(newest):.1f} tok/s ({rig}, {when})"
    tested = [  # the tool-call check's newest word, failed or passed, on target hardware
        r
        for r in runs
        if r.get("recipe") in page.recipes and (r.get("hardware") or {}).get("matches_target")
    ]
    for run in tested:
        checks = {c.get("name"): c for c in run.get("checks") or [] if isinstance(c, dict)}
        if "tool-call" in checks and "tools" not in cells:
            ok = checks["tool-call"].get("ok")
            cells["tools"] = ("✅" if ok else "❌") + f" tested {str(run.get('finished_at'))[:10]}"
    for run in passed:
        recipe = cfg.recipe(run["recipe"])
        if recipe.spec_decode and "spec" not in cells:
            al = (run.get("metrics") or {}).get("accept_length")
            method = recipe.spec_method or "spec decode"
            cells["spec"] = f"✅ {method}" + (f", AL {al:.2f}" if isinstance(al, float) else "")
    return cells
