"""When check-now runs (or dispatches) a smoke test, and how many it may run per day.

A recipe is due when, in this cycle: a page it is on became `ready-to-test` (on a page [engines]
made, only a recipe with blockers: its fixes landed); an item of one of its
blockers (items or watch; hints only with hints_trigger_smoke; snoozed items excepted) changed
its state or evidence (item events are recorded only then: a title, a body or a new
cross-reference is never a trigger, see `watcher.judge.states.evidence_key`);
the engine's release stream changed; or its last validation on target hardware is older than
smoke.validation_max_age. Parked pages trigger nothing; a recipe whose pinned build is gone
(watcher.poll.pins) is not started: it would fail at pull, a setup problem, never a blocker; nor
one whose blockers' fixes are upstream but not in its pin (the run would test a build without
them); nor one never tested on target hardware whose first run is the maintainer's to start
(`first_run`, `manual` by default for a recipe that names no blocker: a proposal from
`init --scan-composes` is not a reason to spend a GPU). Never more than smoke.max_runs_per_day launches started in the last 24 hours, a
baseline's included (dispatched runs not yet collected count too); recipes that share a baseline
run in one session (`smoke.session`), the baseline launched once a round for all of them.

A trigger is never wasted: it is stored (one per recipe) until a result answers it. A host
without the target GPU, or a spent budget, leaves it waiting for a later cycle; on the
github-actions backend it is dispatched once, recorded with its Actions run id, and collected by
a later cycle, so the watch job never waits hours for a GPU.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from watcher.config.model import Config, Recipe
from watcher.core.clock import iso, parse_iso
from watcher.github.client import open_client
from watcher.judge.evaluate import Evaluation, latest_target_runs
from watcher.judge.pins import gone as pin_gone
from watcher.judge.pins import readiness as pin_readiness
from watcher.smoke.session import admit, launch_cost
from watcher.store.db import Store

log = logging.getLogger("watcher.smoke.trigger")

# Which repository publishes each engine's releases (a `releases` item on it is the engine's).
ENGINE_REPOS = {"sglang": "sgl-project/sglang", "vllm": "vllm-project/vllm"}

Runner = Callable[[Config, Recipe, str], dict[str, Any]]


@dataclass
class Due:
    recipe: str
    reasons: list[str] = field(default_factory=list)


def _snoozed(cfg: Config, item_id: str, now: datetime) -> bool:
    try:
        item = cfg.item(item_id)  # the config's index, not a scan: this runs once per item event
    except KeyError:
        return False
    return bool(item.snooze and item.snooze.until >= now.date())


def _eligible(cfg: Config, recipe: Recipe, ev: Evaluation) -> bool:
    """On at least one page that is not parked by a maintainer (or on no page at all): a page
    parked below the speed floor keeps being tested, so a faster run lifts it."""
    pages = [p for p in cfg.pages if recipe.id in p.recipes]
    return not pages or any(
        ev.pages[p.id].status != "parked" or (ev.pages[p.id].parked or {}).get("by") == "floor"
        for p in pages
    )


def _held_by_pin(recipe: Recipe, pin: dict[str, Any] | None, ev: Evaluation) -> str | None:
    """Why a run on its pin would prove nothing: its fix-merged blockers are fixed upstream but
    not in the build it runs (watcher.judge.pins), or None."""
    statuses = {b: ev.blockers[b].status for b in recipe.blockers if b in ev.blockers}
    held = pin_readiness(pin, statuses)
    if not held["held_by_pin"]:
        return None
    newer = ", ".join(held["newer_builds"]) or "a newer build"
    return (
        f"not ready to test on its pin {(pin or {}).get('reference')}: the fix for"
        f" {', '.join(held['held_by_pin'])} is upstream but not in it; {newer} would carry it"
    )


def first_run_waits(recipe: Recipe, latest: dict[str, dict[str, Any]]) -> str | None:
    """Why no trigger starts this recipe: it never ran on target hardware and its first run is
    the maintainer's to start (`first_run`), or None."""
    if recipe.id in latest or not recipe.first_run_manual:
        return None
    return (
        f'never tested; its first run waits for `watcher smoke {recipe.id}` (or first_run = "auto")'
    )


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
        if not _eligible(cfg, recipe, ev) or first_run_waits(recipe, latest):
            continue
        reasons = []
        for page in cfg.pages:
            if (
                page.id in now_ready
                and recipe.id in page.recipes
                and (page.engine is None or recipe.blockers)  # an [engines] page: a fix landed
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
# Every stored bisect is read for a pending step (a store holds tens, not thousands).
ALL_BISECTS = 100_000


def runs_in_last_day(store: Store, now: datetime) -> int:
    return store.count_smoke_runs_since(iso(now - timedelta(days=1)), iso(now + FUTURE_SLACK))


def local_runner(cfg: Config, recipe: Recipe, run_id: str) -> dict[str, Any]:
    from watcher.smoke.run import run_recipe

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
    """Collect, then run or dispatch what is due, within the daily budget.

    -> (result docs recorded in this cycle, their smoke events).

    A due recipe becomes a stored trigger that lives until a result answers it: a host without
    the target GPU (a `skipped` run) leaves it waiting, a budget spent leaves it waiting, and on
    the github-actions backend it is dispatched once and collected in a later cycle. One failing
    run never stops the others: a runner exception becomes an `error` document.
    """
    from watcher.smoke.run import error_doc, new_run_id, record_run, run_message

    docs: list[dict[str, Any]] = []
    smoke_events: list[dict[str, Any]] = []

    def record(doc: dict[str, Any], reasons: list[str]) -> None:
        """Store the result and drop its trigger in one transaction: neither is lost alone."""
        doc["trigger"] = reasons
        log.info("smoke: %s: %s — %s", doc["run_id"], doc["outcome"], doc.get("reason"))
        with store.transaction():
            store.drop_trigger(doc["recipe"])
            eid = record_run(store, doc, cycle_id, at)
        docs.append(doc)
        smoke_events.append(
            {
                "id": eid,
                "kind": "smoke",
                "subject": doc["recipe"],
                "old": None,
                "new": doc["outcome"],
                "message": run_message(doc),
            }
        )

    actions = runner is None and cfg.smoke.backend == "github-actions"
    known = {r.id for r in cfg.recipes}
    for recipe_id in set(store.triggers()) - known:
        store.drop_trigger(recipe_id)  # its recipe left the config
    if actions:
        _collect(cfg, store, now, at, client, record)

    for d in due_recipes(cfg, store, ev, events, now):
        old = store.triggers().get(d.recipe)
        if old is None:
            store.put_trigger(d.recipe, state="waiting", reasons=d.reasons, since=at, updated_at=at)
        else:
            merged = old["reasons"] + [r for r in d.reasons if r not in old["reasons"]]
            store.put_trigger(d.recipe, reasons=merged, updated_at=at)
    triggers = store.triggers()
    pins = store.pins()
    latest = latest_target_runs(store.smoke_runs(limit=500))
    waiting = []
    for r in cfg.recipes:
        t = triggers.get(r.id)
        if not t or t["state"] != "waiting" or not _eligible(cfg, r, ev):
            continue
        gone = (
            pin_gone(pins.get(r.id))
            or _held_by_pin(r, pins.get(r.id), ev)
            or first_run_waits(r, latest)
        )
        if gone:  # it would fail at pull, or test a build without the fix: kept waiting
            log.warning("smoke: %s not started: %s", r.id, gone)
            if t.get("note") != gone:
                store.put_trigger(r.id, note=gone, updated_at=at)
            continue
        waiting.append(t)
    if not waiting:
        return docs, smoke_events
    left = launches_left_today(cfg, store, now)
    wanted = [cfg.recipe(t["recipe"]) for t in waiting]
    chosen = {r.id for r in admit(cfg, wanted, left, shared=not actions)}
    if len(chosen) < len(waiting):
        log.warning(
            "smoke: the budget of %d launches per day (baselines included) leaves %d; %s wait"
            " for later%s",
            cfg.smoke.max_runs_per_day,
            max(left, 0),
            ", ".join(t["recipe"] for t in waiting if t["recipe"] not in chosen),
            "".join(
                f"; {r.id} needs {launch_cost(r)} launches, more than a whole day's budget"
                for r in wanted
                if launch_cost(r) > cfg.smoke.max_runs_per_day
            ),
        )
    if not chosen:
        return docs, smoke_events
    waiting = [t for t in waiting if t["recipe"] in chosen]
    run_ids = {t["recipe"]: new_run_id(t["recipe"]) for t in waiting}
    results = {} if actions or runner else _run_sessions(cfg, waiting, run_ids)
    run = runner or local_runner
    for t in waiting:
        recipe = cfg.recipe(t["recipe"])
        run_id = run_ids[recipe.id]
        log.info("smoke: %s (%s) because %s", recipe.id, run_id, "; ".join(t["reasons"]))
        if actions:
            _dispatch(cfg, store, recipe, run_id, t, at, client, record)
            continue
        try:
            doc = results.get(recipe.id) or run(cfg, recipe, run_id)
        except Exception as e:  # a backend failure is recorded, never fatal to the cycle
            log.exception("smoke: %s failed to run", recipe.id)
            doc = error_doc(recipe, run_id, f"{type(e).__name__}: {e}")
        if doc.get("outcome") == "skipped":
            # This host cannot run it (no target GPU): the trigger keeps waiting for one.
            log.warning("smoke: %s kept waiting: %s", recipe.id, doc.get("reason"))
            store.put_trigger(
                recipe.id, note=doc.get("reason"), attempts=t["attempts"] + 1, updated_at=at
            )
            continue
        record(doc, t["reasons"])
    return docs, smoke_events


def launches_in_flight(cfg: Config, store: Store) -> int:
    """Launches dispatched to GitHub Actions and not yet collected, stored as runs only when they
    are: a dispatched trigger brings its baseline (`launch_cost`), a dispatched bisect step is one
    launch (its recipe runs without a baseline). Uncounted, triggers and bisect steps dispatched in
    the same day could each spend the whole budget."""
    known = {r.id: r for r in cfg.recipes}
    triggers = sum(
        launch_cost(known[t["recipe"]]) if t["recipe"] in known else 1
        for t in store.triggers().values()
        if t["state"] == "dispatched"
    )
    steps = sum(1 for b in store.bisects(limit=ALL_BISECTS) if b.get("pending"))
    return triggers + steps


def launches_left_today(cfg: Config, store: Store, now: datetime) -> int:
    """What smoke.max_runs_per_day still allows: the runs of the last day and those in flight
    taken off (triggers, bisects and the bump gate all ask this one count)."""
    return (
        cfg.smoke.max_runs_per_day - runs_in_last_day(store, now) - launches_in_flight(cfg, store)
    )


def _run_sessions(
    cfg: Config, waiting: list[dict[str, Any]], run_ids: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """The waiting recipes run here, those that share a baseline in one session; a failure of
    the runner itself is an `error` document for each (never a retry: it may have launched)."""
    from watcher.smoke.run import error_doc, run_results

    recipes = [cfg.recipe(t["recipe"]) for t in waiting]
    try:
        got = run_results(cfg, recipes, run_ids=run_ids)
    except Exception as e:  # a backend failure is recorded, never fatal to the cycle
        log.exception("smoke: a session of %s failed to run", ", ".join(run_ids))
        return {r.id: error_doc(r, run_ids[r.id], f"{type(e).__name__}: {e}") for r in recipes}
    return {rid: res.to_record() for rid, res in got.items()}


def _dispatch(cfg, store, recipe, run_id, trigger, at, client, record) -> None:
    """Dispatch once; a run that may exist is recorded as `dispatched`, never sent twice."""
    from watcher.smoke.dispatch import dispatch
    from watcher.smoke.run import error_doc

    with open_client(cfg, client) as c:
        sent = dispatch(cfg, recipe, run_id, c)
    if not sent.sent:
        record(
            error_doc(recipe, run_id, sent.error or "", backend="github-actions"),
            trigger["reasons"],
        )
        return
    store.put_trigger(
        recipe.id,
        state="dispatched",
        run_id=run_id,
        actions_run_id=sent.actions_run_id,
        dispatched_at=at,
        updated_at=at,
        note=sent.error,
        attempts=trigger["attempts"] + 1,
    )
    log.info("smoke: %s dispatched as %s (Actions run %s)", recipe.id, run_id, sent.actions_run_id)


def _collect(cfg, store, now, at, client, record) -> None:
    """Results of dispatched runs that have completed; a vanished or overdue run is an error."""
    from watcher.core.errors import GitHubError
    from watcher.smoke.dispatch import collect, find_run
    from watcher.smoke.run import error_doc

    pending = [t for t in store.triggers().values() if t["state"] == "dispatched"]
    if not pending:
        return
    with open_client(cfg, client) as c:
        for t in pending:
            recipe = cfg.recipe(t["recipe"])
            since = parse_iso(t["dispatched_at"]) or now
            overdue = (now - since).total_seconds() > cfg.smoke.dispatch_timeout
            doc = None
            try:
                gh_id = t["actions_run_id"] or find_run(cfg, t["run_id"], c)
                if gh_id is None:
                    if overdue:
                        doc = error_doc(
                            recipe,
                            t["run_id"],
                            f"dispatched on {t['dispatched_at']}, but no Actions run titled with"
                            f" {t['run_id']} ever appeared",
                            backend="github-actions",
                        )
                        doc["vanished"] = True
                else:
                    if not t["actions_run_id"]:
                        store.put_trigger(t["recipe"], actions_run_id=gh_id, updated_at=at)
                    doc = collect(cfg, recipe, t["run_id"], gh_id, c)
                    if doc is None and overdue:
                        doc = error_doc(
                            recipe,
                            t["run_id"],
                            f"Actions run {gh_id} gave no result within"
                            f" {cfg.smoke.dispatch_timeout:.0f} s",
                            backend="github-actions",
                        )
            except GitHubError as e:
                if not overdue:
                    store.put_trigger(t["recipe"], note=f"collecting: {e}", updated_at=at)
                    continue
                doc = error_doc(
                    recipe,
                    t["run_id"],
                    f"dispatched on {t['dispatched_at']}; still unreadable after the dispatch"
                    f" timeout of {cfg.smoke.dispatch_timeout:.0f} s: {e}",
                    backend="github-actions",
                )
            if doc is None:
                continue
            if doc.get("outcome") == "skipped":  # the runner found no target GPU: wait for one
                log.warning("smoke: %s kept waiting: %s", t["recipe"], doc.get("reason"))
                store.put_trigger(
                    t["recipe"],
                    state="waiting",
                    run_id=None,
                    actions_run_id=None,
                    dispatched_at=None,
                    note=doc.get("reason"),
                    updated_at=at,
                )
                continue
            record(doc, t["reasons"])
