"""Bisects that start themselves ([bisect] auto = true, off by default): a page that goes
`regressed` bisects its recipes between the last passing and the failing build; a blocker that
goes `fix-merged` or `verified` bisects for the fix (find-fix) between the build that last
reproduced it and the build that passed (or, for fix-merged, the engine's latest release). Each
cycle takes one step of each such bisect, within
smoke.max_runs_per_day, so a cycle never runs a whole bisect at once.

The builds are named by the versions the engines reported in those runs, matched to the engine
repository's tags (`0.5.3` -> `v0.5.3`); a run that named no version cannot start one, and
that is said in an event rather than guessed.
"""

from __future__ import annotations

import logging
from typing import Any

from watcher.bisect.search import UNFINISHED, advance, plan, reported_version, unfinished
from watcher.config.model import Config, Recipe
from watcher.core.clock import iso, utcnow
from watcher.core.errors import WatcherError
from watcher.github.client import open_client
from watcher.store.db import Store

log = logging.getLogger("watcher.bisect")


def _target_runs(store: Store, recipe: Recipe) -> list[dict[str, Any]]:
    """The recipe's own runs on target hardware with a verdict, newest first (no bisect steps)."""
    return [
        r
        for r in store.smoke_runs(recipe=recipe.id, limit=200)
        if not r.get("bisect")
        and (r.get("hardware") or {}).get("matches_target")
        and r.get("outcome") in ("passed", "failed", "timeout")
    ]


def _tag_for(version: str | None, tags: list[str]) -> str | None:
    if not version:
        return None
    for t in tags:
        if t == version or t.removeprefix("v") == version.removeprefix("v"):
            return t
    return None


def _tags(cfg: Config, recipe: Recipe, client) -> list[str]:

    with open_client(cfg, client) as c:
        return [
            t["name"] for t in c.paginate(f"/repos/{recipe.source.repo}/tags", {"per_page": 100})
        ]


def _latest_release(cfg: Config, recipe: Recipe, client) -> str | None:

    with open_client(cfg, client) as c:
        data = c.get_json(f"/repos/{recipe.source.repo}/releases/latest")
    return data.get("tag_name") if isinstance(data, dict) else None


def _wanted(cfg: Config, store: Store, events: list[dict[str, Any]], client) -> list[tuple]:
    """(recipe, good, bad, find_fix, why) for each bisect the cycle's transitions ask for."""
    out = []
    for e in events:
        if (
            e.get("kind") == "page"
            and e.get("new") == "regressed"
            and e["subject"] in {p.id for p in cfg.pages}
        ):
            for rid in cfg.page(e["subject"]).recipes:
                recipe = cfg.recipe(rid)
                runs = _target_runs(store, recipe)
                # by position (newest first), not by timestamp: two runs can share a second
                at = next((k for k, r in enumerate(runs) if r["outcome"] != "passed"), None)
                bad = None if at is None else runs[at]
                good = None
                if at is not None:
                    good = next((r for r in runs[at + 1 :] if r["outcome"] == "passed"), None)
                if recipe.source and bad and good:
                    out.append((recipe, good, bad, False, f"page {e['subject']} regressed"))
        if e.get("kind") == "blocker" and e.get("new") in ("fix-merged", "verified"):
            for recipe in cfg.recipes:
                if e["subject"] not in recipe.blockers or not recipe.source:
                    continue
                runs = _target_runs(store, recipe)
                at = next(
                    (
                        k
                        for k, r in enumerate(runs)
                        if e["subject"] in (r.get("blockers_reproduced") or [])
                    ),
                    None,
                )
                if at is None:
                    continue
                bad = runs[at]
                # verified: the run that got past it (newer, so earlier in the list) names the
                # fixed build; else the latest release
                good = next((r for r in runs[:at] if r["outcome"] == "passed"), None)
                why = f"blocker {e['subject']} went {e['new']}"
                out.append((recipe, good, bad, True, why))
    return out


def auto_bisect(cfg: Config, store: Store, events: list[dict[str, Any]], client=None) -> list[dict]:
    """Start the bisects this cycle's transitions ask for, then take one step of each running
    automatic bisect. -> the states touched. Never raises for a bisect's own trouble."""
    at = iso(utcnow())
    for recipe, good_run, bad_run, find_fix, why in _wanted(cfg, store, events, client):
        try:
            tags = _tags(cfg, recipe, client)
            bad = _tag_for(reported_version(bad_run), tags)
            good = _tag_for(reported_version(good_run), tags) if good_run else None
            if find_fix and good_run is None:
                good = _latest_release(cfg, recipe, client)
            if not good or not bad:
                raise WatcherError(
                    f"the runs name no build watcher can find among {recipe.source.repo}'s tags"
                    f" (versions {reported_version(good_run) if good_run else good!r} and"
                    f" {reported_version(bad_run)!r})"
                )
            mode = "find-fix" if find_fix else "regression"
            if unfinished(store, recipe.id, good, bad, mode):
                continue
            state = plan(cfg, store, recipe, good, bad, find_fix=find_fix, client=client)
        except WatcherError as e:
            log.warning("bisect: not started for %s (%s): %s", recipe.id, why, e)
            store.add_event(
                at,
                None,
                "bisect",
                recipe.id,
                None,
                "not-started",
                f"bisect of {recipe.id} not started ({why}): {e}",
                {},
            )
            continue
        state.update(auto=True, status="paused", message=f"started automatically: {why}")
        store.put_bisect(state)
        store.add_event(
            at,
            None,
            "bisect",
            recipe.id,
            None,
            "started",
            f"bisect {state['id']} of {recipe.id} started automatically: {why} ({good} → {bad})",
            {"bisect": state["id"]},
        )
    return _advance_all(cfg, store, client)


def cycle_bisects(cfg: Config, store: Store, events: list[dict[str, Any]], client=None) -> list:
    """The cycle's hook: automatic starts ([bisect] auto), then one step of each automatic
    bisect and the collection of each step dispatched to GitHub Actions (any bisect)."""
    if cfg.bisect.auto:
        return auto_bisect(cfg, store, events, client)
    return _advance_all(cfg, store, client)


def _advance_all(cfg: Config, store: Store, client) -> list[dict]:
    touched = []
    for state in store.bisects(limit=20):
        if state["status"] not in UNFINISHED or not (state.get("auto") or state.get("pending")):
            continue
        try:
            touched.append(advance(cfg, store, state, max_steps=1, client=client))
        except WatcherError as e:
            log.warning("bisect %s: %s", state["id"], e)
    return touched
