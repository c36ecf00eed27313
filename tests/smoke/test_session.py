"""A comparison session: three candidates that share a baseline launch it once, and every
launch, the baseline's included, counts against smoke.max_runs_per_day. The fake engine runs
at set speeds; the GPU is claimed by a fake nvidia-smi."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from kits.smokekit import REPO, RTX3090, engine_command, fake_nvidia_smi, free_port, with_path
from kits.watchtoml import load_watch

from watcher.core.clock import iso
from watcher.judge.evaluate import evaluate
from watcher.smoke.session import admit, launch_cost, sessions
from watcher.smoke.trigger import run_triggers, runs_in_last_day

# Verdicts 2x and 5x away from the floor: a loaded host's noise cannot move them (issue 30)
SPEEDS = {"base": 300, "fast": 300, "slow": 30, "also-fast": 330}


def _recipe(rid, speed, baseline=None):
    """A candidate (with `baseline`) exercises blocker b1; the baseline is not due itself."""
    cmd = engine_command("--ready-delay", "0.2", "--tokens-per-s", str(speed), "--burst", "3")
    compared = f'baseline = "{baseline}"\nmin_speed_vs_baseline = 0.5\n' if baseline else ""
    return f"""
[[recipe]]
id = "{rid}"
engine = "sglang"
port = {free_port()}
startup_timeout = 20
stop_timeout = 3
blockers = {'["b1"]' if baseline else "[]"}
command = {json.dumps(cmd)}
{compared}
[recipe.checks]
repeats = 3
decode_tokens = 24
[recipe.env]
PYTHONPATH = "{REPO}"
"""


def _config(tmp_path, budget):
    text = (
        '[watcher]\ndata_dir = "data"\nsite_dir = "site"\n'
        '[[item]]\nid = "fix-pr"\nrepo = "up/eng"\nkind = "pull"\nnumber = 1\n'
        '[[blocker]]\nid = "b1"\ntitle = "B"\nitems = ["fix-pr"]\n'
        + _recipe("base", SPEEDS["base"])
        + "".join(_recipe(r, SPEEDS[r], "base") for r in ("fast", "slow", "also-fast"))
        + f"\n[smoke]\nmax_runs_per_day = {budget}\n"
    )
    return load_watch(tmp_path, text)


def test_sessions_share_a_baseline_and_count_it(tmp_path):
    cfg = _config(tmp_path, 4)
    cands = [cfg.recipe(r) for r in ("fast", "slow", "also-fast")]
    (s,) = sessions(cfg, cands)
    assert s.baseline.id == "base" and s.launches == 4
    assert [r.id for _, r in s.order()] == ["base", "fast", "slow", "also-fast"]
    assert sum(x.launches for x in sessions(cfg, cands, shared=False)) == 6
    assert launch_cost(cands[0]) == 2 and launch_cost(cfg.recipe("base")) == 1
    assert [r.id for r in admit(cfg, cands, 3)] == ["fast", "slow"]
    assert [r.id for r in admit(cfg, cands, 3, shared=False)] == ["fast"]
    assert admit(cfg, cands, 1) == []


def test_three_candidates_launch_their_baseline_once_within_the_budget(
    tmp_path, store, monkeypatch
):
    fake_nvidia_smi(tmp_path / "bin", [RTX3090])
    with_path(monkeypatch, tmp_path / "bin")
    monkeypatch.setenv("WATCHER_GPU_SOURCE", "nvidia-smi")
    cfg = _config(tmp_path, 3)  # the baseline and two candidates; the third waits
    now = datetime.now(UTC)  # the runs are stamped with the real clock
    ev = evaluate(cfg, {}, [], {}, now)
    event = {"kind": "item", "subject": "fix-pr", "old": "open", "new": "merged"}
    docs, _ = run_triggers(cfg, store, ev, [event], now, cycle_id=None, at=iso(now))

    assert [d["recipe"] for d in docs] == ["fast", "slow"]
    runs = store.smoke_runs()
    launched = sorted(r["recipe"] for r in runs)
    assert launched == ["base", "fast", "slow"], launched  # the baseline once, for both
    (base_run,) = [r for r in runs if r["recipe"] == "base"]
    for d in docs:
        assert d["outcome"] == "passed", d["reason"]
        assert d["comparison"]["baseline_run_ids"] == [base_run["run_id"]]
    verdicts = {d["recipe"]: d["comparison"]["verdict"] for d in docs}
    assert verdicts == {"fast": "clears", "slow": "below"}, [d["comparison"] for d in docs]
    assert runs_in_last_day(store, now) == 3  # every launch counted, the baseline's too
    assert set(store.triggers()) == {"also-fast"}  # kept for later, not dropped

    # the day's budget is spent: the third candidate waits, nothing is launched
    docs, _ = run_triggers(cfg, store, ev, [], now, cycle_id=None, at=iso(now))
    assert docs == [] and len(store.smoke_runs()) == 3
    assert store.triggers()["also-fast"]["state"] == "waiting"


def test_each_round_runs_in_the_other_order_so_no_recipe_always_runs_on_a_warmer_host(tmp_path):
    # Issue 32's mutation set: every test had one round, so rounds that never alternated passed.
    text = (
        '[watcher]\ndata_dir = "data"\n'
        '[[item]]\nid = "fix-pr"\nrepo = "up/eng"\nkind = "pull"\nnumber = 1\n'
        '[[blocker]]\nid = "b1"\ntitle = "B"\nitems = ["fix-pr"]\n'
        + _recipe("base", 300)
        + "".join(
            _recipe(r, 300, "base").replace(
                "\n[recipe.checks]", "compare_rounds = 3\n[recipe.checks]"
            )
            for r in ("fast", "slow")
        )
    )
    cfg = load_watch(tmp_path, text)
    (s,) = sessions(cfg, [cfg.recipe("fast"), cfg.recipe("slow")])
    assert s.rounds == 3 and s.launches == 9
    assert [(i, r.id) for i, r in s.order()] == [
        (0, "base"), (0, "fast"), (0, "slow"),
        (1, "slow"), (1, "fast"), (1, "base"),
        (2, "base"), (2, "fast"), (2, "slow"),
    ]  # fmt: skip
    assert launch_cost(cfg.recipe("fast")) == 6
