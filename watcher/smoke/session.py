"""A comparison session: the recipes that share a baseline on this host run with it in rounds, the
baseline launched once a round for all of them, and what a session costs in launches.

The guide's three SGLang recipes share one baseline (its vLLM MTP path): launched per candidate
that is six launches where four do, and each launch of a 27B model is minutes of a GPU. Every
launch, a baseline's included, counts against smoke.max_runs_per_day, so a trigger is admitted
only when its whole session fits. The launching itself is `smoke.run`'s; this module says which
launches, in which order, and pairs their figures into each candidate's comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

from watcher.config.model import Config, Recipe
from watcher.judge.compare import CLEARS, INSUFFICIENT, compare, speed_phrase
from watcher.smoke.hardware import GpuReading, check_hardware
from watcher.store.smokerun import SmokeResult


@dataclass
class Session:
    """Candidates run together: with their shared `baseline` in `rounds` rounds, or (no
    baseline) one recipe launched once."""

    baseline: Recipe | None
    rounds: int
    candidates: list[Recipe]

    @property
    def launches(self) -> int:
        if self.baseline is None:
            return len(self.candidates)
        return self.rounds * (1 + len(self.candidates))

    def order(self) -> list[tuple[int, Recipe]]:
        """(round, recipe) in launch order: the baseline first, then each candidate; the next
        round reversed (B R1 R2, R2 R1 B, ...), so no recipe always runs on a warmer host."""
        out = []
        for i in range(self.rounds):
            seq = [self.baseline, *self.candidates] if self.baseline else self.candidates
            out += [(i, r) for r in (seq if i % 2 == 0 else seq[::-1])]
        return out


def pick_baseline(
    cfg: Config, recipe: Recipe, reading: GpuReading, any_hardware: bool = False
) -> tuple[Recipe | None, str | None]:
    """The baseline this host can run beside `recipe`: its `baseline`, else the first of its
    `rig_baselines` whose hardware this host has -> (that recipe, None); none fits ->
    (None, why, naming each baseline's own need). A recipe runs on every rig it fits; where
    no baseline fits, it runs alone and its verdict says so."""
    if not recipe.baseline:
        return None, None
    needs = []
    for name in (recipe.baseline, *recipe.rig_baselines):
        base = cfg.recipe(name)
        gate = check_hardware(base.hardware, reading)
        if gate.matches_target or any_hardware:
            return base, None
        need = base.hardware
        needs.append(f"{name} needs {need.gpu_count}× {need.gpu_name}")
    found = ", ".join(g.name for g in reading.gpus) or "no GPU"
    return None, f"no baseline ran on this rig ({'; '.join(needs)}; found {found})"


def no_baseline(res: SmokeResult, recipe: Recipe, why: str) -> SmokeResult:
    """A candidate that ran with no baseline on this host: its comparison says so plainly (no
    speed figure, insufficient data), never a skip and never a verdict on speed."""
    res.comparison = {
        "verdict": INSUFFICIENT,
        "why": why,
        "speed_ratio": None,
        "baseline": recipe.baseline,
        "baseline_title": recipe.baseline,
        "baseline_passed": False,
        "baseline_run_ids": [],
        "rounds": 0,
        "hardware": ", ".join(res.gpu_names) or "no GPU",
        "matches_target": res.matches_target,
        "date": (res.started_at or "")[:10],
    }
    if res.outcome != "skipped":
        res.reason += f"; {why}"
    return res


def sessions(
    cfg: Config,
    recipes: list[Recipe],
    shared: bool = True,
    picked: dict[str, Recipe | None] | None = None,
) -> list[Session]:
    """The sessions that run `recipes`, in their order: candidates with the same baseline and
    rounds share one (unless not `shared`: a dispatched run brings its own baseline).
    `picked`: recipe id -> the baseline this host runs for it (`pick_baseline`), where known."""
    out: list[Session] = []
    by_key: dict[tuple[str, int], Session] = {}
    for r in recipes:
        base = (picked or {}).get(r.id, cfg.recipe(r.baseline) if r.baseline else None)
        if base is None:
            out.append(Session(None, 1, [r]))
            continue
        key = (base.id, r.compare_rounds)
        if shared and key in by_key:
            by_key[key].candidates.append(r)
            continue
        s = Session(base, r.compare_rounds, [r])
        by_key[key] = s
        out.append(s)
    return out


def launch_cost(recipe: Recipe) -> int:
    """Launches of one recipe run alone: its rounds and its baseline's, or one."""
    return 2 * recipe.compare_rounds if recipe.baseline else 1


def admit(cfg: Config, recipes: list[Recipe], left: int, shared: bool = True) -> list[Recipe]:
    """The recipes, in order, whose launches fit in `left` (a candidate joining a session
    whose baseline is already admitted costs only its own rounds)."""
    chosen: list[Recipe] = []
    for r in recipes:
        cost = sum(s.launches for s in sessions(cfg, [*chosen, r], shared)) - sum(
            s.launches for s in sessions(cfg, chosen, shared)
        )
        if cost <= left:
            chosen.append(r)
            left -= cost
    return chosen


def with_comparison(
    recipe: Recipe, base: Recipe, mine: list[SmokeResult], theirs: list[SmokeResult]
) -> SmokeResult:
    """The recipe's last result with its comparison: the rounds paired by order (a round that
    did not pass on both sides adds no figure), the verdict, and which baseline runs it used."""
    res = mine[-1]
    failed = [r for r in mine if not r.passed]
    if failed and res.passed:
        res.outcome, res.reason = failed[-1].outcome, failed[-1].reason
        res.signature = failed[-1].signature

    def per_round(runs: list[SmokeResult], what: str) -> list[list[float]]:
        return [list(getattr(r.metrics, what) or []) if r.passed else [] for r in runs]

    c = compare(
        per_round(mine, "decode_samples"),
        per_round(theirs, "decode_samples"),
        recipe.min_speed_vs_baseline,
        per_round(mine, "ttft_samples"),
        per_round(theirs, "ttft_samples"),
        recipe.max_ttft_vs_baseline,
    )
    base_failed = [r for r in theirs if not r.passed]
    c["baseline_passed"] = not base_failed
    if base_failed:
        c["verdict"] = INSUFFICIENT
        c["why"] = f"the baseline {base.id} did not pass: {base_failed[-1].reason}"
    c.update(
        baseline=base.id,
        baseline_title=base.title or base.id,
        baseline_run_ids=[r.run_id for r in theirs],
        rounds=len(theirs),
        hardware=", ".join(res.gpu_names) or "no GPU",
        matches_target=res.matches_target,
        date=(res.started_at or "")[:10],
    )
    res.comparison = c
    if res.passed:
        title = f"the {base.title} path" if base.title else base.id
        res.reason += f"; {speed_phrase(c, title)}: {c['verdict']}"
        if c["verdict"] != CLEARS and c.get("why"):
            res.reason += f" ({c['why']})"
    return res
