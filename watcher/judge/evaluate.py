"""Blocker and page statuses: a pure function of stored data, so the same data renders the same page.

Upstream signals are hints; the smoke run is the verdict. A blocker is `reproduces` when its
signature shows in the latest target-hardware run, `verified` when such a run got past the stage
where it used to fail, `fix-merged` when its items satisfy its rule, else `blocked`. Off-target
runs are shown but never count. A blocker's `hints` (a fix in another project) are shown with
their evidence and never count either: a fix in vLLM is not a fix in SGLang.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from watcher.config.model import Blocker, Config, Page, Recipe
from watcher.judge.compare import BELOW, CLEARS, rejudge, speed_phrase
from watcher.judge.pins import held_phrase
from watcher.judge.states import item_satisfied, item_unreadable
from watcher.judge.views import item_phrase, project_name
from watcher.store.smokerun import SmokeResult

CLEARED = ("fix-merged", "verified")
# `untested`: a recipe nothing blocks and no run on target hardware has tried (a proposal, not a
# verdict); readers see "not tested yet"
PAGE_STATUSES = ("blocked", "ready-to-test", "validated", "regressed", "parked", "untested")
STAGE_ORDER = {"launch": 0, "ready": 1, "passed": 2}


@dataclass(frozen=True)
class BlockerStatus:
    id: str
    status: str
    reason: str
    evidence: tuple[dict[str, Any], ...] = ()
    override: dict[str, Any] | None = None
    hints: tuple[dict[str, Any], ...] = ()  # {item, satisfied, text}; never part of the status
    stale: str | None = None  # why its items cannot be read now: the status is the last known


@dataclass(frozen=True)
class PageStatus:
    id: str
    status: str
    reason: str
    blockers: tuple[str, ...] = ()
    validated_run: dict[str, Any] | None = None
    latest_runs: tuple[dict[str, Any], ...] = ()
    parked: dict[str, Any] | None = None
    # the relative verdict behind `validated` or a `parked` below the floor: both figures
    comparison: dict[str, Any] | None = None
    held_by_pin: tuple[str, ...] = ()  # cleared recipes whose fixes are not in their pins
    # [page.override]: {by, status, reason, since, until, evidence}; `evidence` ({status, reason})
    # is what watcher's own evidence says when that differs, else None
    override: dict[str, Any] | None = None


@dataclass(frozen=True)
class Evaluation:
    blockers: dict[str, BlockerStatus] = field(default_factory=dict)
    pages: dict[str, PageStatus] = field(default_factory=dict)

    def statuses(self) -> dict[str, tuple[str, str]]:
        """key -> (status, reason), the shape stored to detect transitions."""
        out = {f"blocker:{b.id}": (b.status, b.reason) for b in self.blockers.values()}
        out.update({f"page:{p.id}": (p.status, p.reason) for p in self.pages.values()})
        return out


NO_VERDICT = ("skipped", "started", "interrupted")


def latest_target_runs(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """recipe id -> its newest run on target hardware that reached a verdict.

    Skipped runs never ran; `started` (still running) and `interrupted` (watcher died) runs have no
    outcome to judge by; a setup refusal ("not launched (setup): …") never launched the engine:
    none of these can validate or regress a page.
    """
    out: dict[str, dict[str, Any]] = {}
    for run in sorted(runs, key=lambda r: (r.get("started_at") or "", r.get("run_id") or "")):
        res = SmokeResult.from_record(run)
        if res.outcome in NO_VERDICT or not res.matches_target or res.setup_problem:
            continue
        if res.extra.get("bisect"):  # a bisect step ran an older build: never the recipe's verdict
            continue
        out[run["recipe"]] = run
    return out


def page_subjects(cfg: Config, page: Page) -> set[str]:
    """Event subjects that belong on a page: its own, its blockers', their items', its recipes'."""
    subjects = {page.id, *page.blockers, *page.recipes}
    in_blockers = set()
    for b in cfg.blockers:
        in_blockers.update(b.items, b.watch)
        if b.id in page.blockers:
            subjects.update(b.items, b.watch)
    subjects.update(i.id for i in cfg.items if i.id not in in_blockers)
    return subjects


def _active(until: date | None, today: date) -> bool:
    return until is None or today <= until


def _run_ref(run: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "smoke",
        "run_id": run.get("run_id"),
        "recipe": run.get("recipe"),
        "outcome": run.get("outcome"),
        "signature": run.get("signature"),
        "started_at": run.get("started_at"),
        "reason": run.get("reason"),
    }


def hint_views(
    b: Blocker, cfg: Config, items: dict[str, dict], detected: bool
) -> tuple[dict[str, Any], ...]:
    """Each hint with its evidence in one sentence; says when the blocker's own items show
    nothing yet ("; not detected in SGLang")."""
    own = []
    for i in b.items:
        name = project_name(cfg.item(i).repo)
        if name not in own:
            own.append(name)
    out = []
    for hint_id in b.hints:
        item, row = cfg.item(hint_id), items.get(hint_id)
        text = item_phrase(item, row)
        if own and not detected:
            text += f"; not detected in {' or '.join(own)}"
        out.append(
            {
                "item": hint_id,
                "satisfied": item_satisfied(item, row),
                "state": (row or {}).get("state"),
                "text": text,
            }
        )
    return tuple(out)


def evaluate_blocker(
    b: Blocker,
    cfg: Config,
    items: dict[str, dict],
    latest: dict[str, dict],
    today: date,
    previous: dict[str, Any] | None = None,
) -> BlockerStatus:
    """The blocker's status from its own items and smoke runs, with its hints alongside.
    `previous`: its last stored status ({status, reason}), kept while its items are unreadable."""
    st = _blocker_status(b, cfg, items, latest, today)
    if st.status in ("blocked", "fix-merged") and not st.override:
        st = _unreadable(b, cfg, items, st, previous)
    detected = any(item_satisfied(cfg.item(i), items.get(i)) for i in b.items)
    return BlockerStatus(
        st.id,
        st.status,
        st.reason,
        st.evidence,
        st.override,
        hint_views(b, cfg, items, detected),
        st.stale,
    )


NO_LAST_KNOWN = "last known: none"  # the reason's end when no status was ever known


def _unreadable(
    b: Blocker,
    cfg: Config,
    items: dict[str, dict],
    st: BlockerStatus,
    previous: dict[str, Any] | None,
) -> BlockerStatus:
    """Unreadable is not "not fixed": when an unreadable item could still clear the blocker (no
    readable item already satisfies `any`, or already fails `all`), the blocker keeps its
    last known status, marked stale. With no last status it stays `blocked`, marked stale too, so
    the page says "can't check right now", never "waiting for an upstream fix"."""
    unreadable = [i for i in b.items if item_unreadable(cfg.item(i), items.get(i))]
    if not unreadable or st.status != "blocked":
        return st
    others = [i for i in b.items if i not in unreadable]
    known_fail = b.rule == "all" and any(
        not item_satisfied(cfg.item(i), items.get(i)) for i in others
    )
    if known_fail:  # a readable item already says "not fixed" for the whole `all` rule
        return st
    why = "; ".join(f"{i}: {_unreadable_reason(items.get(i))}" for i in unreadable)
    last = (previous or {}).get("status")
    if str((previous or {}).get("reason") or "").endswith(NO_LAST_KNOWN):
        last = None  # the previous cycle's own stand-in, not a status anyone saw
    status = last if last in ("blocked", "fix-merged") else "blocked"
    return BlockerStatus(
        st.id,
        status,
        f"can't check right now ({why}); {f'last known: {last}' if last else NO_LAST_KNOWN}",
        st.evidence,
        st.override,
        st.hints,
        why,
    )


def _blocker_status(
    b: Blocker, cfg: Config, items: dict[str, dict], latest: dict[str, dict], today: date
) -> BlockerStatus:
    evidence: list[dict[str, Any]] = []
    satisfied = []
    for item_id in b.items:
        item, row = cfg.item(item_id), items.get(item_id)
        ok = item_satisfied(item, row)
        satisfied.append(ok)
        evidence.append(
            {
                "type": "item",
                "item": item_id,
                "state": (row or {}).get("state"),
                "satisfied": ok,
                "stale": bool((row or {}).get("stale")),
            }
        )
    rule_met = bool(satisfied) and (all(satisfied) if b.rule == "all" else any(satisfied))
    runs = [latest[r.id] for r in cfg.recipes if b.id in r.blockers and r.id in latest]
    evidence.extend(_run_ref(r) for r in runs)

    if b.override and _active(b.override.until, today):
        o = b.override
        until = f" until {o.until.isoformat()}" if o.until else ""
        return BlockerStatus(
            b.id,
            o.status,
            f"override{until}: {o.reason}",
            tuple(evidence),
            {
                "status": o.status,
                "reason": o.reason,
                "until": o.until.isoformat() if o.until else None,
            },
        )

    reproducing = [
        r
        for r in runs
        if r.get("signature") in b.signatures or b.id in (r.get("blockers_reproduced") or [])
    ]
    if reproducing:
        r = reproducing[-1]
        return BlockerStatus(
            b.id,
            "reproduces",
            f"signature {r.get('signature') or b.id} in run {r.get('run_id')} of {r.get('recipe')}"
            f" on {(r.get('started_at') or '')[:10]}",
            tuple(evidence),
        )
    need = (
        1 if b.fails_at == "startup" else 2
    )  # ready counts for a startup crash; probes need a pass
    past = [r for r in runs if STAGE_ORDER.get(_stage(r), 0) >= need]
    if past:
        r = past[-1]
        return BlockerStatus(
            b.id,
            "verified",
            f"run {r.get('run_id')} of {r.get('recipe')} got past {b.fails_at}"
            f" on {(r.get('started_at') or '')[:10]} with no signature of it",
            tuple(evidence),
        )
    if rule_met:
        names = [i for i, ok in zip(b.items, satisfied, strict=True) if ok]
        return BlockerStatus(
            b.id,
            "fix-merged",
            f"{b.rule} of its items satisfied ({', '.join(names)}); awaiting a smoke run on target hardware",
            tuple(evidence),
        )
    waiting = [i for i, ok in zip(b.items, satisfied, strict=True) if not ok]
    what = "all of" if b.rule == "all" else "one of"
    return BlockerStatus(
        b.id,
        "blocked",
        f"waiting for {what}: {', '.join(waiting) or 'no items configured'}",
        tuple(evidence),
    )


def _unreadable_reason(row: dict[str, Any] | None) -> str:
    code = ((row or {}).get("details") or {}).get("code") or {}
    return code.get("unreadable") or (row or {}).get("error") or "its files cannot be read"


def _overridden(p, cfg, blockers, latest, previous, today, pins) -> PageStatus:
    """The maintainers' status, with watcher's own verdict beside it where the two differ: the
    evidence is still judged (and runs still triggered), never hidden. `untested` is no
    evidence, so it never disagrees. The maintainers' `validated` counts as a validation: a
    failing run on target hardware is then watcher's `regressed`, on the first cycle as on later
    ones (the stored status is the override's)."""
    o = p.override
    before = "validated" if o.status == "validated" else previous
    own = evaluate_page(
        dataclasses.replace(p, override=None), cfg, blockers, latest, before, today, pins
    )
    differs = own.status not in (o.status, "untested")
    since = f" since {o.since.isoformat()}" if o.since else ""
    until = f" until {o.until.isoformat()}" if o.until else ""
    reason = f"the maintainers say {o.status}{since}{until}: {o.reason}"
    if differs:
        reason += f"; watcher's evidence says {own.status}: {own.reason}"
    return dataclasses.replace(
        own,
        status=o.status,
        reason=reason,
        parked=None,  # a floor verdict is the evidence line's, not a second status
        override={
            "by": "maintainer",
            "status": o.status,
            "reason": o.reason,
            "since": o.since.isoformat() if o.since else None,
            "until": o.until.isoformat() if o.until else None,
            "evidence": {"status": own.status, "reason": own.reason} if differs else None,
        },
    )


def _stage(run: dict[str, Any]) -> str:
    """How far a run got: `passed`, `ready` (answered but failed a check) or `launch`."""
    res = SmokeResult.from_record(run)
    return "passed" if res.passed else res.stage_reached or "launch"


def evaluate_page(
    p: Page,
    cfg: Config,
    blockers: dict[str, BlockerStatus],
    latest: dict[str, dict],
    previous: str | None,
    today: date,
    pins: dict[str, dict[str, Any]] | None = None,
) -> PageStatus:
    """The page's status. `pins` (recipe -> stored pin): a recipe whose cleared blockers are
    fixed upstream but not in its pin is not ready to test on it; the page stays `blocked`."""
    if p.park and _active(p.park.until, today):
        until = f" until {p.park.until.isoformat()}" if p.park.until else ""
        return PageStatus(
            p.id,
            "parked",
            f"parked{until}: {p.park.reason}",
            p.blockers,
            parked={
                "by": "maintainer",
                "reason": p.park.reason,
                "until": p.park.until.isoformat() if p.park.until else None,
                "since": p.park.since.isoformat() if p.park.since else None,
            },
        )
    if p.override and _active(p.override.until, today):
        return _overridden(p, cfg, blockers, latest, previous, today, pins)
    recipes = [cfg.recipe(r) for r in p.recipes]
    runs = tuple(latest[r.id] for r in recipes if r.id in latest)

    passing = [
        r
        for r in recipes
        if r.id in latest
        and latest[r.id].get("outcome") == "passed"
        and not any(blockers[b].status == "reproduces" for b in r.blockers)
    ]
    fast = [r for r in passing if _floor_verdict(r, latest[r.id]) == CLEARS]
    if fast:
        run = latest[fast[0].id]
        c = _shown_comparison(fast[0], run)
        return PageStatus(
            p.id,
            "validated",
            f"{fast[0].id} passed on {_gpus(run)} on {(run.get('started_at') or '')[:10]}"
            + (f"; {speed_phrase(c, _base_title(cfg, fast[0], c))}" if c else ""),
            p.blockers,
            validated_run=run,
            latest_runs=runs,
            comparison=c,
        )
    slow = [r for r in passing if _floor_verdict(r, latest[r.id]) == BELOW]
    if slow:  # works on target hardware, but not worth switching to: parked until it is
        run = latest[slow[0].id]
        c = _shown_comparison(slow[0], run)
        phrase = speed_phrase(c, _base_title(cfg, slow[0], c))
        reason = f"{slow[0].id} runs on {_gpus(run)}, but {phrase[:-1]}, {c.get('date') or (run.get('started_at') or '')[:10]})"
        return PageStatus(
            p.id,
            "parked",
            reason,
            p.blockers,
            latest_runs=runs,
            parked={"by": "floor", "reason": reason, "until": None},
            comparison=c,
        )
    if passing:  # passed, but the comparison could not call it
        r = passing[0]
        c = latest[r.id].get("comparison") or {}
        why = c.get("why") or f"no comparison with {r.baseline} in its latest run"
        return PageStatus(
            p.id,
            "ready-to-test",
            f"{r.id} passed, but its speed against {r.baseline} is insufficient data ({why})",
            p.blockers,
            latest_runs=runs,
        )
    if previous in ("validated", "regressed") and any(r.get("outcome") != "passed" for r in runs):
        failing = [r for r in runs if r.get("outcome") != "passed"][-1]
        return PageStatus(
            p.id,
            "regressed",
            f"was validated; {failing.get('recipe')} now {failing.get('outcome')}"
            + (f" ({failing.get('signature')})" if failing.get("signature") else ""),
            p.blockers,
            latest_runs=runs,
        )
    # nothing blocks a recipe that names no blocker, but that is no reason to call it ready: until
    # a run on target hardware tried it, it is only proposed ("not tested yet")
    untested = [r for r in recipes if not r.blockers and r.id not in latest]
    ready = [
        r
        for r in recipes
        if r not in untested and all(blockers[b].status in CLEARED for b in r.blockers)
    ]
    if not recipes:
        open_ = [b for b in p.blockers if blockers[b].status not in CLEARED]
        if not open_:
            return PageStatus(
                p.id, "ready-to-test", "every blocker is cleared", p.blockers, latest_runs=runs
            )
        return PageStatus(
            p.id, "blocked", f"blocked by {', '.join(open_)}", p.blockers, latest_runs=runs
        )
    held = {r.id: _held(r, blockers, pins) for r in ready}
    on_pin = [r for r in ready if not held[r.id]]
    if on_pin:
        return PageStatus(
            p.id,
            "ready-to-test",
            f"every blocker of {on_pin[0].id} is cleared; a smoke run on target hardware decides",
            p.blockers,
            latest_runs=runs,
        )
    if untested:
        return PageStatus(
            p.id,
            "untested",
            f"not tested yet: nothing blocks {_some(r.id for r in untested)}, and no smoke"
            f" run on target hardware has tried {'it' if len(untested) == 1 else 'them'}"
            + "".join(
                f"; `watcher smoke {r.id}` runs it" for r in untested[:1] if r.first_run_manual
            ),
            p.blockers,
            latest_runs=runs,
        )
    reasons = []
    for r in recipes:
        if held.get(r.id):
            reasons.append(f"{r.id} is not ready to test on its pin ({held[r.id]})")
            continue
        open_ = [b for b in r.blockers if blockers[b].status not in CLEARED]
        reasons.append(f"{r.id} by {', '.join(f'{b} ({blockers[b].status})' for b in open_)}")
    return PageStatus(
        p.id,
        "blocked",
        "blocked: " + "; ".join(reasons),
        p.blockers,
        latest_runs=runs,
        held_by_pin=tuple(r for r, why in held.items() if why),
    )


def _some(names, shown: int = 3) -> str:
    """'a, b, c and 4 more': a long list of proposals stays one readable reason."""
    names = list(names)
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _held(
    r: Recipe, blockers: dict[str, BlockerStatus], pins: dict[str, dict[str, Any]] | None
) -> str | None:
    """Why its pin holds a cleared recipe (its fixes are upstream, not in the build), or None."""
    if not pins or r.id not in pins:
        return None
    return held_phrase(pins[r.id], {b: blockers[b].status for b in r.blockers})


def _floor_verdict(recipe: Recipe, run: dict[str, Any]) -> str:
    """`clears` for a recipe with no floor; else its latest run's comparison verdict."""
    if not recipe.baseline or (
        recipe.min_speed_vs_baseline is None and recipe.max_ttft_vs_baseline is None
    ):
        return CLEARS
    c = SmokeResult.from_record(run).comparison or {}
    if c.get("baseline") not in (recipe.baseline, *recipe.rig_baselines) or not c.get(
        "matches_target"
    ):
        return "insufficient data"
    return rejudge(c, recipe.min_speed_vs_baseline, recipe.max_ttft_vs_baseline)


def _shown_comparison(recipe: Recipe, run: dict[str, Any]) -> dict[str, Any] | None:
    """The run's comparison as judged under the config's floor now."""
    c = run.get("comparison") if recipe.baseline else None
    if not c:
        return None
    return {
        **c,
        "floor": recipe.min_speed_vs_baseline,
        "ttft_ceiling": recipe.max_ttft_vs_baseline,
        "verdict": _floor_verdict(recipe, run),
    }


def _gpus(run: dict[str, Any]) -> str:
    names = [g.get("name", "?") for g in (run.get("hardware") or {}).get("gpus", [])]
    if names and all(n == names[0] for n in names) and len(names) > 1:
        return f"{len(names)}x {names[0]}"
    return ", ".join(names) or "no GPU"


def _base_title(cfg: Config, recipe: Recipe, c: dict[str, Any] | None = None) -> str:
    """The title of the baseline the comparison `c` ran against (a rig's own, where it did)."""
    name = (c or {}).get("baseline") or recipe.baseline
    try:
        base = cfg.recipe(name or "")
    except KeyError:
        return str(name)
    return f"the {base.title} path" if base.title else str(base.id)


def evaluate(
    cfg: Config,
    items: dict[str, dict],
    runs: list[dict[str, Any]],
    previous: dict[str, dict],
    now: datetime,
    pins: dict[str, dict[str, Any]] | None = None,
) -> Evaluation:
    """Pure: config + stored item rows + smoke runs + previous statuses (+ stored pins) -> statuses."""
    today = now.date()
    latest = latest_target_runs(runs)
    blockers = {
        b.id: evaluate_blocker(b, cfg, items, latest, today, previous.get(f"blocker:{b.id}"))
        for b in cfg.blockers
    }
    pages = {
        p.id: evaluate_page(
            p,
            cfg,
            blockers,
            latest,
            (previous.get(f"page:{p.id}") or {}).get("status"),
            today,
            pins,
        )
        for p in cfg.pages
    }
    return Evaluation(blockers, pages)


def transitions(
    previous: dict[str, dict], current: dict[str, tuple[str, str]]
) -> list[tuple[str, str | None, str]]:
    """(key, old, new) for every status that changed, first sightings included."""
    out = []
    for key, (status, _reason) in sorted(current.items()):
        old = (previous.get(key) or {}).get("status")
        if old != status:
            out.append((key, old, status))
    return out
