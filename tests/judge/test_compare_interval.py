"""The relative verdict's statistic on synthetic samples: per-round medians, a seeded bootstrap
interval, `insufficient data` only near the floor, and a reason that says what would settle it."""

from __future__ import annotations

import random

import pytest

from watcher.config.recipes import COMPARED_CHECKS
from watcher.judge.compare import BELOW, CLEARS, INSUFFICIENT, compare, rejudge

REPEATS = COMPARED_CHECKS.repeats  # what a comparison times by default


def session(rng, truth, *, cv, launch=0.0, rounds=1, n=REPEATS, speed=85.0):
    """Per-round decode figures of a candidate truly `truth`× the baseline: each launch off by
    a normal `launch` share, each repeat by a lognormal `cv` (a quiet GPU host: ~1% each)."""
    mine, theirs = [], []
    for _ in range(rounds):
        c, b = speed * truth * (1 + rng.gauss(0, launch)), speed * (1 + rng.gauss(0, launch))
        mine.append([c * rng.lognormvariate(0, cv) for _ in range(n)])
        theirs.append([b * rng.lognormvariate(0, cv) for _ in range(n)])
    return mine, theirs


def test_a_stray_slow_repeat_does_not_decide():
    """One 107 tok/s repeat among 500-623 (seen on real vLLM) made a session insufficient at
    floor 0.5 when the extremes were paired; a median per round barely moves."""
    rng = random.Random(7)
    base = [rng.uniform(500, 623) for _ in range(REPEATS)]
    mine = [rng.uniform(500, 623) for _ in range(REPEATS - 1)] + [107.0]
    c = compare(mine, base, 0.5)
    assert c["verdict"] == CLEARS, c
    assert c["speed_ratio_range"][0] > 0.8  # the stray repeat is not the interval's edge
    # ... and a stray fast baseline repeat neither
    assert compare(base, [*mine[:-1], 5000.0], 0.5)["verdict"] == CLEARS


@pytest.mark.parametrize("truth, floor, want", [(0.12, 0.06, CLEARS), (0.12, 0.24, BELOW)])
def test_a_pair_twice_away_from_the_floor_always_gives_the_same_verdict(truth, floor, want):
    """Noise as loud as the CPU host's (the ratio 0.07-0.16 launch to launch, repeats ±10%),
    even with the old 3 or 5 repeats: with the floor 2x away, every session says the same."""
    for seed in range(40):
        rng = random.Random(seed)
        for rounds, n in ((1, 3), (1, 5), (2, 5), (3, 5)):
            mine, theirs = session(rng, truth, cv=0.10, launch=0.10, rounds=rounds, n=n)
            c = compare(mine, theirs, floor)
            assert c["verdict"] == want, (seed, rounds, c)


def test_insufficient_only_near_the_line():
    verdicts = {}
    for floor in (0.80, 0.90, 0.97, 1.0, 1.03, 1.1, 1.25):
        got = set()
        for seed in range(20):
            mine, theirs = session(random.Random(seed), 1.0, cv=0.03, launch=0.01)
            got.add(compare(mine, theirs, floor)["verdict"])
        verdicts[floor] = got
    assert verdicts[0.80] == verdicts[0.90] == {CLEARS}
    assert verdicts[1.1] == verdicts[1.25] == {BELOW}
    assert INSUFFICIENT in verdicts[1.0]
    # never both definite verdicts for the same pair at the same floor
    assert all(not {CLEARS, BELOW} <= v for v in verdicts.values()), verdicts


def test_five_percent_is_resolved_with_the_default_repeats_on_a_quiet_host():
    """The pin-bump gate's question: within 5% of the old build? A build as fast clears a 0.95
    floor, one 10% slower is below it, in (nearly) every session, never the wrong way."""
    same, slower = [], []
    for seed in range(50):
        rng = random.Random(seed)
        same.append(compare(*session(rng, 1.0, cv=0.01, launch=0.01), 0.95)["verdict"])
        slower.append(compare(*session(rng, 0.90, cv=0.01, launch=0.01), 0.95)["verdict"])
    assert BELOW not in same and CLEARS not in slower
    assert same.count(CLEARS) >= 48 and slower.count(BELOW) >= 48, (same, slower)


def test_the_same_figures_always_give_the_same_interval():
    mine, theirs = session(random.Random(3), 0.97, cv=0.03, launch=0.01, rounds=2)
    first = compare(mine, theirs, 0.95)
    assert all(compare(mine, theirs, 0.95) == first for _ in range(3))
    assert first["interval"].startswith("95% bootstrap")
    assert len(first["speed_ratio_rounds"]) == 2


def test_the_reason_says_what_would_settle_it():
    # repeats noisy, the ratio 8% from the floor: more repeats would settle it
    rng = random.Random(11)
    mine, theirs = session(rng, 0.87, cv=0.08, n=5)
    c = compare(mine, theirs, 0.8)
    assert c["verdict"] == INSUFFICIENT, c
    assert "repeats (checks.repeats) a launch would settle it" in c["why"], c["why"]
    # the rounds disagree while each is tight: more rounds, not more repeats
    c = compare([[80, 81, 80.5], [70, 70.5, 71]], [[100, 99, 100.5], [100, 100.5, 99]], 0.75)
    assert c["verdict"] == INSUFFICIENT and "rounds (compare_rounds)" in c["why"], c["why"]
    # right at the floor: no number of runs would settle it, and the reason says so
    same = [[85.0, 86.0, 84.0, 85.5, 84.5]]
    c = compare(same, same, 1.0)
    assert c["verdict"] == INSUFFICIENT
    assert "no number of runs would settle it" in c["why"] and "move the floor" in c["why"]
    assert "run more" not in c["why"]


def test_one_repeat_in_one_round_cannot_show_the_noise_and_stays_insufficient():
    c = compare([16.0], [85.0], 0.8)
    assert c["verdict"] == INSUFFICIENT and "checks.repeats" in c["why"]
    assert c["speed_ratio"] == pytest.approx(0.188, abs=0.001)
    assert rejudge({**c, "baseline_passed": True}, 0.8, None) == INSUFFICIENT
    # two rounds of one repeat each do show it
    assert compare([[16.0], [16.5]], [[85.0], [84.0]], 0.8)["verdict"] == BELOW


def test_a_stored_comparison_from_before_reads_and_rejudges_as_it_did():
    old = {  # the shape stored before the interval: the extremes of the repeats
        "verdict": "clears",
        "baseline_passed": True,
        "speed_ratio": 1.059,
        "speed_ratio_range": [1.02, 1.1],
    }
    assert rejudge(old, 0.8, None) == CLEARS
    assert rejudge(old, 1.05, None) == INSUFFICIENT
    assert rejudge(old, 1.2, None) == BELOW


def test_a_failed_round_adds_no_figure_and_pairs_the_rest_by_order():
    c = compare([[], [60.0, 61.0, 59.0]], [[85.0, 84.0, 86.0], [85.0, 84.0, 86.0]], 0.8)
    assert c["speed_ratio_rounds"] == [pytest.approx(60 / 85, abs=0.001)]
    assert c["verdict"] == BELOW
