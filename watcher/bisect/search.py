"""`watcher bisect`: find the engine build that broke a recipe (or, with find-fix, fixed it).

The grid (watcher.bisect.grid) is an engine's published builds between two refs, each checked to exist
before any run. The search confirms both endpoints first (the good build passes; the bad one
fails, and how it fails — its signature or failed check — is the failure looked for), then
bisects as mozregression does: a build that cannot be judged (it fails to start for another
reason, fails differently, or its engine reports another version than its label) is skipped and
the search goes on around it; a build no longer published (purged) is never run, and when it is
the middle one its nearest surviving neighbour is tried instead. When watcher knows a candidate
commit in the range (a tracked pull request's merge commit, a commit a watch rule matched), the
builds just after and just before it are tried first. Judged steps are capped at ceil(log2 N) + 2 for N builds; every run
counts against smoke.max_runs_per_day. The state is stored after every step: a bisect stopped
by the daily budget, a host without the GPU or Ctrl-C resumes with `watcher bisect --resume ID`.
On the github-actions backend each step is one dispatched run (`watcher smoke --build`), and
the cycle (`check-now`, `serve`) collects it and dispatches the next, like any other smoke run.

A performance failure (a decode tokens/s check) is judged from --repeat runs per build against
(1 - [bisect] threshold) x the good build's median: all samples below is slow, all above is
fast, a mix — or fewer than MIN_REPEAT samples — is "insufficient data", never a guess.
"""

from __future__ import annotations

import logging
import math
import re
import secrets
import statistics
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from watcher.bisect.grid import Grid, Point, build_grid, check_points
from watcher.config.model import Config, Recipe
from watcher.core.clock import iso, utcnow
from watcher.core.errors import WatcherError
from watcher.github.client import open_client
from watcher.store.db import Store
from watcher.store.smokerun import Metrics

log = logging.getLogger("watcher.bisect")

MIN_REPEAT = 3  # runs per build below which a performance step has no verdict
MAX_SKIPS = 3  # untestable steps allowed beyond the budget before the bisect gives up
DECODE_CHECK = "check:decode"
UNFINISHED = ("running", "paused")

Runner = Callable[[Config, Recipe, str], dict[str, Any]]


def budget_for(n: int) -> int:
    """The most judged steps a bisect of `n` builds may take: ceil(log2 n) + 2."""
    return math.ceil(math.log2(n)) + 2 if n > 1 else 2


def new_bisect_id(recipe_id: str) -> str:
    return f"{recipe_id}-bisect-{utcnow().strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(2)}"


def resume_command(cfg: Config, state: dict[str, Any]) -> str:
    return f"watcher bisect --resume {state['id']} --config {cfg.path}"


# ------------------------------------------------------------------ judging one run


def failure_key(doc: dict[str, Any]) -> str | None:
    """How a run failed, as the search compares failures: its signature, else the failed check,
    else its outcome; None when it passed."""
    if doc.get("outcome") == "passed":
        return None
    if doc.get("signature"):
        return doc["signature"]
    reason = doc.get("reason") or ""
    if "tok/s is below the required" in reason:
        return DECODE_CHECK
    if "accept length" in reason:
        return "check:accept-length"
    if "known-answer check" in reason:
        return "check:answer"
    return f"{doc.get('outcome')}:no-signature"


_LOG_VERSION = re.compile(
    r"(?:vLLM API server version|sglang version|engine version|\bversion)[\s:=]+v?([0-9][\w.+-]*)",
    re.IGNORECASE,
)


def reported_version(doc: dict[str, Any]) -> str | None:
    """The version the engine reported: over HTTP when it got that far, else from its log's
    start-up banner (a build that crashes still says what it is)."""
    if doc.get("engine_version"):
        return str(doc["engine_version"])
    path = doc.get("log_path")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(65536)
    except OSError:
        return None
    for line in head.splitlines():
        if line.startswith(("$ ", "# watcher")):  # watcher's own header: the command line
            continue
        m = _LOG_VERSION.search(line)
        if m:
            return m.group(1)
    return None


_HEX = re.compile(r"(?<![0-9a-f])[0-9a-f]{7,40}(?![0-9a-f])")


def installed_check(point: dict[str, Any], doc: dict[str, Any]) -> tuple[bool, str]:
    """Did the build named by the grid really run? The engine's reported version must name it
    (an image's label can differ from what is inside): a release build its version, any build
    its commit when the version names one (`0.5.3.dev12+gabcdef1`)."""
    reported = reported_version(doc)
    if not reported:
        return True, "unverified: the engine reported no version"
    sha = (point.get("sha") or "").lower()
    commits = _HEX.findall(reported.lower().split("+g")[-1]) + _HEX.findall(reported.lower())
    if commits and any(sha.startswith(c) for c in commits):
        return True, f"verified: the engine reports {reported}"
    version = point.get("version") or ""
    if point.get("tag") and (
        reported == version or reported.startswith((version + "+", version + ".dev"))
    ):
        return True, f"verified: the engine reports {reported}"
    if not point.get("tag") and not commits:
        return True, f"unverified: the engine reports {reported}, which names no commit"
    return False, (
        f"the build is labelled {version} but its engine reports {reported}"
        " (a mislabelled build: not judged)"
    )


# ------------------------------------------------------------------ starting


def recipe_for(recipe: Recipe, build: str) -> Recipe:
    """The recipe with its engine build swapped: `{build}` in the command and env, and for an
    image source the command's image argument."""
    src = recipe.source
    command = []
    for arg in recipe.command:
        if src and src.image and (arg == src.image or arg.startswith(src.image + ":")):
            arg = build
        command.append(arg.replace("{build}", build))
    env = tuple((k, v.replace("{build}", build)) for k, v in recipe.env)
    # a step compares builds of this recipe with each other, not with its baseline recipe
    # (issue 19's relative verdict would launch the baseline at every step)
    return replace(
        recipe,
        command=tuple(command),
        env=(*env, ("WATCHER_BUILD", build)),
        baseline=None,
        min_speed_vs_baseline=None,
        max_ttft_vs_baseline=None,
    )


def _candidates(cfg: Config, store: Store, recipe: Recipe) -> list[dict[str, str]]:
    """Commits watcher already suspects: merge commits of tracked pull requests (the recipe's
    blockers' first), then commits the watch rules matched."""
    items = store.items()
    mine = [i for b in recipe.blockers for i in (*cfg.blocker(b).items, *cfg.blocker(b).watch)]
    order = list(dict.fromkeys([*mine, *(i.id for i in cfg.items)]))
    out = []
    for item_id in order:
        details = (items.get(item_id) or {}).get("details") or {}
        sha = details.get("merge_commit_sha")
        if sha:
            out.append({"sha": sha, "why": f"merge commit of {item_id}", "item": item_id})
    for item_id in order:
        details = (items.get(item_id) or {}).get("details") or {}
        for c in details.get("commits") or []:
            if isinstance(c, dict) and c.get("sha"):
                out.append({"sha": c["sha"], "why": f"matched by rule {item_id}", "item": item_id})
    return out


def _flagged(cfg: Config, recipe: Recipe, commits: list[dict[str, Any]]) -> dict[str, list[str]]:
    """sha -> the watch rules (commits items on the engine's repo) its message matches."""
    from watcher.poll.poller import commit_matches

    out: dict[str, list[str]] = {}
    repo = (recipe.source.repo if recipe.source else "").lower()
    for item in cfg.items:
        if item.kind != "commits" or item.repo.lower() != repo:
            continue
        for c in commits:
            if commit_matches(item, c):
                out.setdefault(c["sha"], []).append(item.id)
    return out


def plan(
    cfg: Config,
    store: Store,
    recipe: Recipe,
    good: str,
    bad: str,
    *,
    find_fix: bool = False,
    repeat: int | None = None,
    client=None,
) -> dict[str, Any]:
    """A new bisect's state: its grid (each build checked to exist) and what it will try first.

    Raises WatcherError before any run when it cannot finish (an end gone, a build whose
    existence could not be checked, a range too long); a gone build inside the range is kept,
    marked, and never run: the search steps around it.
    """
    if recipe.source is None:
        raise WatcherError(
            f"recipe {recipe.id} has no [recipe.source]: say where its engine builds come from"
            " (image and tag, or requirement)"
        )
    old, new = (bad, good) if find_fix else (good, bad)
    grid = _grid(cfg, recipe, old, new, client)
    points = [p.as_dict() for p in grid.points]
    if len(points) < 2:
        raise WatcherError(f"{good} and {bad} are the same build: nothing to bisect")
    unchecked = grid.unchecked
    if unchecked:
        listed = "; ".join(f"{p.build} ({p.unchecked})" for p in unchecked)
        raise WatcherError(
            f"not started: whether {len(unchecked)} of {len(points)} builds between {old} and"
            f" {new} exist could not be checked: {listed}"
        )
    ends = [p for p in (grid.points[0], grid.points[-1]) if p.gone]
    if ends:
        listed = "; ".join(f"{p.build} ({p.gone})" for p in ends)
        raise WatcherError(
            f"not started: an end of the range is gone, and a bisect needs both: {listed};"
            " give a --good or --bad whose build still exists"
        )
    line = [(grid.points[0].sha)] + [c["sha"] for c in grid.commits]
    position = {sha: i for i, sha in enumerate(line)}
    candidate = None
    for c in _candidates(cfg, store, recipe):
        hits = [s for s in position if s.startswith(c["sha"]) or c["sha"].startswith(s)]
        if not hits:
            continue
        at = position[hits[0]]
        k = next(i for i, p in enumerate(grid.points) if position[p.sha] >= at)
        if 0 < k:
            candidate = dict(c, sha=hits[0], index=k)
            break
    now = iso(utcnow())
    state = {
        "id": new_bisect_id(recipe.id),
        "recipe": recipe.id,
        "mode": "find-fix" if find_fix else "regression",
        "good": good,
        "bad": bad,
        "repo": recipe.source.repo,
        "status": "running",
        "message": "",
        "points": points,
        "compare_url": grid.compare_url,
        "commits": [
            {
                "sha": c["sha"],
                "date": ((c.get("commit") or {}).get("committer") or {}).get("date"),
                "subject": ((c.get("commit") or {}).get("message") or "").split("\n")[0],
                "url": c.get("html_url"),
            }
            for c in grid.commits
        ],
        "flagged": _flagged(cfg, recipe, grid.commits),
        "candidate": candidate,
        "candidate_done": candidate is None,
        "repeat": repeat or cfg.bisect.repeat,
        "threshold": cfg.bisect.threshold,
        "budget": budget_for(len(points)),
        "lo": 0,
        "hi": len(points) - 1,
        "fail_key": None,
        "reference_median": None,
        "steps": [],
        "created_at": now,
        "updated_at": now,
    }
    return state


def _grid(cfg: Config, recipe: Recipe, old: str, new: str, client) -> Grid:

    with open_client(cfg, client) as c:
        grid = build_grid(recipe.source, old, new, c)
    check_points(recipe.source, grid.points)
    return grid


# ------------------------------------------------------------------ the search


def _old_class(state: dict[str, Any]) -> str:
    """What the oldest build should do: pass (regression) or fail (find-fix)."""
    return "fail" if state["mode"] == "find-fix" else "pass"


def _tested(state: dict[str, Any]) -> dict[int, str]:
    return {s["index"]: s["verdict"] for s in state["steps"]}


def next_index(state: dict[str, Any]) -> int | None:
    """The build to try next, or None when the range cannot shrink further."""
    tested = _tested(state)
    last = len(state["points"]) - 1
    for i in (0, last):
        if i not in tested:
            return i
    lo, hi = state["lo"], state["hi"]
    if hi - lo <= 1:
        return None
    cand = state.get("candidate")
    if cand and not state["candidate_done"]:
        for i in (cand["index"], cand["index"] - 1):
            if lo < i < hi and i not in tested and not _gone(state, i):
                return i
        state["candidate_done"] = True
    open_ = [i for i in range(lo + 1, hi) if i not in tested and not _gone(state, i)]
    if not open_:
        return None
    mid = (lo + hi) // 2  # when the middle build is gone, its nearest surviving neighbour
    return min(open_, key=lambda i: (abs(i - mid), i))


def _gone(state: dict[str, Any], i: int) -> bool:
    return bool(state["points"][i].get("gone"))


def judged_steps(state: dict[str, Any]) -> int:
    return sum(1 for s in state["steps"] if s["verdict"] in ("pass", "fail"))


def skipped_steps(state: dict[str, Any]) -> int:
    return sum(1 for s in state["steps"] if s["verdict"] not in ("pass", "fail"))


def judge(state: dict[str, Any], point: dict[str, Any], docs: list[dict[str, Any]]) -> dict:
    """One step's verdict from its runs: pass, fail, skip (untestable) or insufficient."""
    index = point["index"]
    step: dict[str, Any] = {
        "index": index,
        "build": point["build"],
        "runs": [d["run_id"] for d in docs],
        "logs": [d.get("log_path") for d in docs],
        "outcomes": [d.get("outcome") for d in docs],
        "hardware": docs[0].get("hardware") if docs else None,
        "engine_version": next(
            (d.get("engine_version") for d in docs if d.get("engine_version")), None
        ),
        "samples": [
            m.decode_tokens_per_s
            for m in (Metrics.from_record(d.get("metrics")) for d in docs)
            if m.decode_tokens_per_s is not None
        ],
    }
    for d in docs:
        ok, why = installed_check(point, d)
        step["installed"] = why
        if not ok:
            return dict(step, verdict="skip", why=why)
    keys = [failure_key(d) for d in docs]
    perf = state["fail_key"] == DECODE_CHECK or (
        index == len(state["points"]) - 1 and DECODE_CHECK in keys and state["mode"] != "find-fix"
    )
    other = [k for k in keys if k not in (None, DECODE_CHECK)]
    if perf and not other:
        return dict(step, **_perf_verdict(state, step["samples"], index))
    if len(set(keys)) > 1:
        return dict(step, verdict="skip", why=f"runs disagree: {', '.join(map(str, keys))}")
    key = keys[0]
    step["failure"] = key
    if key is None:
        return dict(step, verdict="pass", why=docs[-1].get("reason") or "passed")
    if any(d.get("outcome") == "error" for d in docs):
        return dict(step, verdict="skip", why=f"the run could not happen: {docs[-1].get('reason')}")
    wanted = state["fail_key"]
    if wanted is None or key == wanted:
        return dict(step, verdict="fail", why=docs[-1].get("reason") or key)
    return dict(
        step,
        verdict="skip",
        why=f"fails differently ({key}; the failure bisected is {wanted})",
    )


def _perf_verdict(state: dict[str, Any], samples: list[float], index: int) -> dict[str, Any]:
    if len(samples) < MIN_REPEAT:
        return {
            "verdict": "insufficient",
            "why": (
                f"insufficient data: {len(samples)} decode sample(s); a performance verdict needs"
                f" at least {MIN_REPEAT} runs per build (--repeat {MIN_REPEAT})"
            ),
        }
    ref = state["reference_median"]
    if ref is None:
        return {"verdict": "insufficient", "why": "insufficient data: no good build to compare"}
    line = ref * (1 - state["threshold"])
    shown = f"{min(samples):.1f}–{max(samples):.1f} tok/s against {line:.1f}"
    if max(samples) < line:
        return {"verdict": "fail", "why": f"slow: {shown}", "failure": DECODE_CHECK}
    if min(samples) >= line:
        return {"verdict": "pass", "why": f"fast: {shown}"}
    return {
        "verdict": "insufficient",
        "why": f"insufficient data: samples {shown} straddle the line",
    }


def _apply(state: dict[str, Any], step: dict[str, Any]) -> str | None:
    """Record a step; None to go on, else the status the bisect ends in."""
    state["steps"].append(step)
    last = len(state["points"]) - 1
    old = _old_class(state)
    new = "pass" if old == "fail" else "fail"
    i, verdict = step["index"], step["verdict"]
    if i == 0:
        if verdict == "insufficient":
            return "insufficient-data"
        if verdict != old:
            word = "the good build does not pass" if old == "pass" else "the bad build passes"
            state["message"] = f"{word}: {step['why']}"
            return "failed"
        if old == "fail":
            state["fail_key"] = step.get("failure")
        elif step["samples"] and len(step["samples"]) >= MIN_REPEAT:
            state["reference_median"] = statistics.median(step["samples"])
        return None
    if i == last:
        if verdict == "insufficient":
            state["message"] = step["why"]
            return "insufficient-data"
        if verdict != new:
            word = "the bad build passes" if new == "fail" else "the fixed build does not pass"
            state["message"] = f"{word}: {step['why']}"
            return "failed"
        if new == "fail":
            state["fail_key"] = step.get("failure") or DECODE_CHECK
        return None
    if verdict == old:
        state["lo"] = max(state["lo"], i)
    elif verdict == new:
        state["hi"] = min(state["hi"], i)
    if (
        verdict == "insufficient"
        and state["fail_key"] == DECODE_CHECK
        and len(step["samples"]) < MIN_REPEAT
    ):
        state["message"] = step["why"]
        return "insufficient-data"
    return None


# ------------------------------------------------------------------ running


def runs_left_today(cfg: Config, store: Store, now: datetime) -> int:
    """Launches the daily budget still allows, counted as the trigger counts them
    (`smoke.trigger.launches_left_today`: dispatched triggers and bisect steps in flight)."""
    from watcher.smoke.trigger import launches_left_today

    return launches_left_today(cfg, store, now)


def _local(cfg: Config, recipe: Recipe, run_id: str) -> dict[str, Any]:
    from watcher.smoke.run import run_recipe

    return run_recipe(cfg, recipe, run_id=run_id)


def advance(
    cfg: Config,
    store: Store,
    state: dict[str, Any],
    *,
    runner: Runner | None = None,
    progress: Callable[[str], None] = lambda _m: None,
    max_steps: int | None = None,
    client=None,
) -> dict[str, Any]:
    """Run steps until the bisect is done, fails, or must pause; the state is stored after each.
    With `max_steps` (an automatic bisect: one step per cycle) it pauses after that many. On the
    github-actions backend a step is one dispatched run: this collects the pending one if it has
    completed, dispatches the next, and pauses (a later cycle goes on)."""
    from watcher.smoke.run import new_run_id, record_run

    actions = runner is None and cfg.smoke.backend == "github-actions"
    if actions and state["repeat"] != 1:
        raise WatcherError(
            "on the github-actions backend each step is one dispatched run: --repeat 1 (a"
            " performance bisect with repeats runs on the GPU host itself)"
        )
    run = runner or _local
    recipe = cfg.recipe(state["recipe"])
    state.setdefault("threshold", cfg.bisect.threshold)
    state["status"], state["message"] = "running", ""
    taken = 0
    try:
        while True:
            if state.get("pending"):  # a step dispatched to GitHub Actions
                docs = _collect_pending(cfg, store, state, client)
                if docs is None:
                    p = state["pending"]
                    state["message"] = (
                        f"waiting for Actions run {p.get('actions_run_id') or '(not found yet)'}"
                        f" of step {len(state['steps']) + 1} ({p['build']}); a later cycle"
                        " collects it"
                    )
                    return _pause(store, state)
                if docs[0].get("outcome") == "skipped":  # the runner had no target GPU
                    state.pop("pending")
                    state["message"] = f"paused: {docs[0].get('reason')}"
                    return _pause(store, state)
                index = state.pop("pending")["index"]
                step = judge(state, state["points"][index], docs)
                progress(f"  -> {step['verdict']}: {step['why']}")
                ended = _apply(state, step)
                if ended:
                    return _finish(cfg, store, state, ended)
                _save(store, state)
                continue
            index = next_index(state)
            if index is None:
                return _finish(cfg, store, state, "done")
            if (
                index not in (0, len(state["points"]) - 1)
                and judged_steps(state) >= state["budget"]
            ):
                state["message"] = f"the budget of {state['budget']} judged steps is spent"
                return _finish(cfg, store, state, "done")
            if skipped_steps(state) > MAX_SKIPS:
                state["message"] = f"more than {MAX_SKIPS} builds could not be judged"
                return _finish(cfg, store, state, "done")
            left = runs_left_today(cfg, store, utcnow())
            if left < state["repeat"]:
                state["message"] = (
                    f"paused: smoke.max_runs_per_day ({cfg.smoke.max_runs_per_day}) leaves {left}"
                    f" run(s) today and a step needs {state['repeat']}"
                )
                return _pause(store, state)
            if max_steps is not None and taken >= max_steps:
                state["message"] = f"paused after {taken} step(s) this cycle; the next goes on"
                return _pause(store, state)
            taken += 1
            point = state["points"][index]
            progress(
                f"step {len(state['steps']) + 1}: build {index + 1}/{len(state['points'])} {point['build']}"
            )
            if actions:
                return _dispatch_step(cfg, store, state, recipe, point, client)
            docs = []
            for _ in range(state["repeat"]):
                run_id = new_run_id(recipe.id)
                doc = run(cfg, recipe_for(recipe, point["build"]), run_id)
                doc["bisect"] = {"id": state["id"], "build": point["build"], "index": index}
                if doc.get("outcome") == "skipped":  # no target GPU here: nothing was judged
                    state["message"] = f"paused: {doc.get('reason')}"
                    return _pause(store, state)
                record_run(store, doc)
                docs.append(doc)
            step = judge(state, point, docs)
            progress(f"  -> {step['verdict']}: {step['why']}")
            ended = _apply(state, step)
            if ended:
                return _finish(cfg, store, state, ended)
            _save(store, state)
    except (KeyboardInterrupt, SystemExit):
        state["message"] = "paused: interrupted"
        _pause(store, state)
        raise


def _dispatch_step(cfg, store, state, recipe, point, client) -> dict[str, Any]:
    from watcher.smoke.dispatch import dispatch
    from watcher.smoke.run import new_run_id

    run_id = new_run_id(recipe.id)
    with open_client(cfg, client) as c:
        sent = dispatch(cfg, recipe_for(recipe, point["build"]), run_id, c, build=point["build"])
    if not sent.sent:  # refused: nothing runs; the bisect waits for someone to fix the workflow
        state["message"] = f"paused: {sent.error}"
        return _pause(store, state)
    state["pending"] = {
        "index": point["index"],
        "build": point["build"],
        "run_id": run_id,
        "actions_run_id": sent.actions_run_id,
        "dispatched_at": iso(utcnow()),
        "note": sent.error,
    }
    state["message"] = (
        f"dispatched step {len(state['steps']) + 1} ({point['build']}) as Actions run"
        f" {sent.actions_run_id or '(id not known yet)'}; a later cycle collects it"
    )
    return _pause(store, state)


def _collect_pending(cfg, store, state, client) -> list[dict[str, Any]] | None:
    """The pending step's result document (stored as a smoke run), or None while it runs."""
    from watcher.core.clock import parse_iso
    from watcher.core.errors import GitHubError
    from watcher.smoke.dispatch import collect, find_run
    from watcher.smoke.run import error_doc, record_run

    p = state["pending"]
    recipe = cfg.recipe(state["recipe"])
    since = parse_iso(p["dispatched_at"]) or utcnow()
    overdue = (utcnow() - since).total_seconds() > cfg.smoke.dispatch_timeout
    doc = None
    try:
        with open_client(cfg, client) as c:
            gh_id = p.get("actions_run_id") or find_run(cfg, p["run_id"], c)
            if gh_id is not None:
                p["actions_run_id"] = gh_id
                # the dispatched recipe is the one with this build: its digest is what the runner ran
                doc = collect(cfg, recipe_for(recipe, p["build"]), p["run_id"], gh_id, c)
    except GitHubError as e:
        log.warning("bisect %s: collecting %s: %s", state["id"], p["run_id"], e)
        if not overdue:
            return None
        reason = (
            f"dispatched on {p['dispatched_at']}; still unreadable after the dispatch timeout: {e}"
        )
        doc = error_doc(recipe, p["run_id"], reason, backend="github-actions")
    if doc is None and overdue:
        reason = f"dispatched on {p['dispatched_at']}; no result within the dispatch timeout"
        doc = error_doc(recipe, p["run_id"], reason, backend="github-actions")
    if doc is None:
        return None
    doc["bisect"] = {"id": state["id"], "build": p["build"], "index": p["index"]}
    if doc.get("outcome") != "skipped":  # a skipped step judged nothing: dispatched again later
        record_run(store, doc)
    return [doc]


def _save(store: Store, state: dict[str, Any]) -> None:
    state["updated_at"] = iso(utcnow())
    store.put_bisect(state)


def _pause(store: Store, state: dict[str, Any]) -> dict[str, Any]:
    state["status"] = "paused"
    _save(store, state)
    return state


def _finish(cfg: Config, store: Store, state: dict[str, Any], status: str) -> dict[str, Any]:
    from watcher.bisect.report import report, summary

    state["status"] = status
    state["report"] = report(cfg, store, state)
    _save(store, state)
    store.add_event(
        state["updated_at"],
        None,
        "bisect",
        state["recipe"],
        None,
        status,
        summary(state),
        {"bisect": state["id"]},
    )
    return state


def unfinished(store: Store, recipe: str, good: str, bad: str, mode: str) -> dict[str, Any] | None:
    for s in store.bisects(recipe):
        if s["status"] in UNFINISHED and (s["good"], s["bad"], s["mode"]) == (good, bad, mode):
            return s
    return None


def point_of(state: dict[str, Any], index: int | None) -> Point | None:
    return Point(**state["points"][index]) if index is not None else None
