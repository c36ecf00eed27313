"""When check-now runs (or dispatches) a smoke test, and how many it may run per day.

A recipe is due when, in this cycle: a page it is on became `ready-to-test`; an item of one of its
blockers (items or watch; hints only with hints_trigger_smoke; snoozed items excepted) changed;
the engine's release stream changed; or its last validation on target hardware is older than
smoke.validation_max_age. Parked pages trigger nothing. Never more than smoke.max_runs_per_day
runs started in the last 24 hours.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from watcher.config import Config, Recipe
from watcher.evaluate import Evaluation, latest_target_runs
from watcher.store import Store, iso, parse_iso

log = logging.getLogger("watcher.trigger")

# Which repository publishes each engine's releases (a `releases` item on it is the engine's).
ENGINE_REPOS = {"sglang": "sgl-project/sglang", "vllm": "vllm-project/vllm"}

Runner = Callable[[Config, Recipe, str], dict[str, Any]]


@dataclass
class Due:
    recipe: str
    reasons: list[str] = field(default_factory=list)


def _snoozed(cfg: Config, item_id: str, now: datetime) -> bool:
    item = next((i for i in cfg.items if i.id == item_id), None)
    return bool(item and item.snooze and item.snooze.until >= now.date())


def _eligible(cfg: Config, recipe: Recipe, ev: Evaluation) -> bool:
    """On at least one page that is not parked (or on no page at all)."""
    pages = [p for p in cfg.pages if recipe.id in p.recipes]
    return not pages or any(ev.pages[p.id].status != "parked" for p in pages)


def _release_items(cfg: Config, recipe: Recipe) -> set[str]:
    repo = ENGINE_REPOS.get(recipe.engine)
    return {
        i.id
        for i in cfg.items
        if i.kind == "releases" and (i.repo == repo or i.repo.split("/")[-1] == recipe.engine)
    }


def due_recipes(
    cfg: Config,
    store: Store,
    ev: Evaluation,
    events: list[dict[str, Any]],
    now: datetime,
) -> list[Due]:
    """Recipes that should run now, each with why, in config order."""
    item_changes = {
        e["subject"]
        for e in events
        if e.get("kind") == "item"
        and e.get("old") is not None  # a first sighting is no change
        and not _snoozed(cfg, e["subject"], now)
    }
    now_ready = {
        e["subject"]
        for e in events
        if e.get("kind") == "page" and e.get("new") == "ready-to-test" and not e.get("snoozed")
    }
    latest = latest_target_runs(store.smoke_runs(limit=500))
    max_age = timedelta(seconds=cfg.smoke.validation_max_age)
    out = []
    for recipe in cfg.recipes:
        if not _eligible(cfg, recipe, ev):
            continue
        reasons = []
        for page in cfg.pages:
            if (
                page.id in now_ready
                and recipe.id in page.recipes
                and ev.pages[page.id].status == "ready-to-test"
                and all(
                    ev.blockers[b].status in ("fix-merged", "verified") for b in recipe.blockers
                )
            ):
                reasons.append(f"page {page.id} became ready-to-test")
        for b in recipe.blockers:
            blocker = cfg.blocker(b)
            hints = blocker.hints if blocker.hints_trigger_smoke else ()
            changed = sorted(item_changes & set((*blocker.items, *blocker.watch, *hints)))
            if changed:
                reasons.append(f"item {', '.join(changed)} of blocker {b} changed")
        released = sorted(item_changes & _release_items(cfg, recipe))
        if released:
            reasons.append(f"{recipe.engine} release changed ({', '.join(released)})")
        run = latest.get(recipe.id)
        if run and run.get("outcome") == "passed":
            at = parse_iso(run.get("started_at"))
            if at and now - at > max_age:
                reasons.append(f"validation from {run['started_at'][:10]} expired")
        if reasons:
            out.append(Due(recipe.id, reasons))
    return out


# A run stamped later than this after "now" was stamped by a clock that has since stepped back: it
# cannot be placed in time, so it is not counted (else one step back would starve the budget).
FUTURE_SLACK = timedelta(minutes=5)


def runs_in_last_day(store: Store, now: datetime) -> int:
    return store.count_smoke_runs_since(iso(now - timedelta(days=1)), iso(now + FUTURE_SLACK))


def local_runner(cfg: Config, recipe: Recipe, run_id: str) -> dict[str, Any]:
    from watcher.smoke import run_recipe

    return run_recipe(cfg, recipe, run_id=run_id)


def run_triggers(
    cfg: Config,
    store: Store,
    ev: Evaluation,
    events: list[dict[str, Any]],
    now: datetime,
    *,
    cycle_id: int | None,
    at: str,
    client=None,
    runner: Runner | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run or dispatch what is due, within the daily budget. -> (result docs, smoke events).

    One failing run never stops the others: a runner exception becomes an `error` document.
    """
    from watcher.smoke import error_doc, new_run_id, record_run, run_message

    due = due_recipes(cfg, store, ev, events, now)
    if not due:
        return [], []
    left = cfg.smoke.max_runs_per_day - runs_in_last_day(store, now)
    if left <= 0:
        log.warning(
            "smoke: %s due but the budget of %d runs per day is spent",
            ", ".join(d.recipe for d in due),
            cfg.smoke.max_runs_per_day,
        )
        return [], []
    if len(due) > left:
        log.warning(
            "smoke: budget allows %d of %d due runs; skipping %s",
            left,
            len(due),
            ", ".join(d.recipe for d in due[left:]),
        )
    runner = runner or _backend_runner(cfg, client)
    docs, smoke_events = [], []
    for d in due[:left]:
        recipe = cfg.recipe(d.recipe)
        run_id = new_run_id(recipe.id)
        log.info("smoke: %s (%s) because %s", recipe.id, run_id, "; ".join(d.reasons))
        try:
            doc = runner(cfg, recipe, run_id)
        except Exception as e:  # a backend failure is recorded, never fatal to the cycle
            log.exception("smoke: %s failed to run", recipe.id)
            doc = error_doc(recipe, run_id, f"{type(e).__name__}: {e}")
        doc["trigger"] = d.reasons
        log.info("smoke: %s: %s — %s", doc["run_id"], doc["outcome"], doc.get("reason"))
        eid = record_run(store, doc, cycle_id, at)
        docs.append(doc)
        smoke_events.append(
            {
                "id": eid,
                "kind": "smoke",
                "subject": recipe.id,
                "old": None,
                "new": doc["outcome"],
                "message": run_message(doc),
            }
        )
    return docs, smoke_events


def _backend_runner(cfg: Config, client) -> Runner:
    if cfg.smoke.backend == "github-actions":
        from watcher.dispatch import dispatch_runner

        return dispatch_runner(client)
    return local_runner
