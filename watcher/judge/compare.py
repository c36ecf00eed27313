"""The relative verdict: is a recipe fast enough next to the guide's validated path (its baseline)?

"It runs" is not the verdict: the guide parked SGLang's EAGLE-3 path because it decoded at ~16
tokens/s against ~85 on its vLLM MTP path. Both recipes are measured on the same host in the same
session (warm-up excluded, launches interleaved in rounds); this pure module turns their repeated
figures into a verdict. Each round gives one ratio of medians (a stray repeat moves a median
little), and a 95% bootstrap interval over the rounds and the repeats within them, drawn from a
fixed seed so the same figures always give the same verdict, says how far honest noise could move
it. Only when that interval straddles the floor is the verdict "insufficient data" (as Conbench
and Bencher do), and the reason then says what would settle it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

CLEARS, BELOW, INSUFFICIENT = "clears", "below", "insufficient data"

CONFIDENCE = 0.95
RESAMPLES = 2000  # enough for stable 2.5/97.5% percentiles; ~20 ms a side in pure Python
SEED = 30  # fixed: the same figures always give the same interval, hence the same verdict
# more than this many times the repeats (or rounds) to settle it: no practical run will
MAX_SETTLE_FACTOR = 4
INTERVAL = (
    f"{CONFIDENCE:.0%} bootstrap over rounds and repeats ({RESAMPLES} resamples, seed {SEED})"
)

Samples = Sequence[float] | Sequence[Sequence[float]]


def _median(values: Sequence[float]) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _judge(low: float, high: float, floor: float) -> str:
    if low >= floor:
        return CLEARS
    if high < floor:
        return BELOW
    return INSUFFICIENT


def _judge_ceiling(low: float, high: float, ceiling: float) -> str:
    # lower is better: clears when even the interval's top is under the ceiling
    return CLEARS if high <= ceiling else BELOW if low > ceiling else INSUFFICIENT


def _rounds(samples: Samples | None) -> list[list[float]]:
    """A flat list is one round; a list of lists is one list per round (empty: that round has
    no figure, e.g. its launch failed)."""
    if not samples:
        return []
    if all(isinstance(x, int | float) for x in samples):
        return [[float(x) for x in samples]]  # type: ignore[arg-type]
    return [[float(x) for x in r] for r in samples]  # type: ignore[union-attr]


def paired_rounds(mine: Samples | None, theirs: Samples | None) -> list[tuple[list, list]]:
    """Rounds in which both sides have positive figures, paired by their order."""
    out = []
    for a, b in zip(_rounds(mine), _rounds(theirs), strict=False):
        a, b = [x for x in a if x > 0], [x for x in b if x > 0]
        if a and b:
            out.append((a, b))
    return out


def ratio_interval(
    pairs: list[tuple[list, list]], resample_rounds: bool = True
) -> tuple[float, float, float]:
    """(ratio, low, high): the median over rounds of each round's median ratio, and its
    bootstrap interval (repeats resampled within each round, and the rounds themselves when
    there are several and `resample_rounds`)."""
    point = _median([_median(a) / _median(b) for a, b in pairs])
    rng = random.Random(SEED)
    n = len(pairs)
    stats = []
    for _ in range(RESAMPLES):
        picked = [pairs[rng.randrange(n)] for _ in range(n)] if resample_rounds else pairs
        stats.append(
            _median(
                [
                    _median(rng.choices(a, k=len(a))) / _median(rng.choices(b, k=len(b)))
                    for a, b in picked
                ]
            )
        )
    stats.sort()
    tail = (1 - CONFIDENCE) / 2
    low = stats[int(tail * (RESAMPLES - 1))]
    high = stats[math.ceil((1 - tail) * (RESAMPLES - 1))]
    return point, min(low, point), max(high, point)


def _too_few(pairs: list[tuple[list, list]]) -> str | None:
    """One round of single figures cannot say how noisy the host is."""
    if len(pairs) >= 2 or (pairs and min(len(pairs[0][0]), len(pairs[0][1])) >= 2):
        return None
    return (
        "one timed repeat a side in one round cannot show the host's noise; set"
        " checks.repeats (default 10 for a comparison) or compare_rounds to 2 or more"
    )


def settle(pairs: list[tuple[list, list]], point: float, low: float, high: float, floor: float):
    """What would settle an interval that straddles the floor, in words (never 'run more'
    when more would not help)."""
    half = (math.log(high) - math.log(low)) / 2
    gap = abs(math.log(point) - math.log(floor))
    where = (
        f"the spread of the figures puts the {CONFIDENCE:.0%} interval {low:.3f}–{high:.3f}"
        f" across the floor {floor}"
    )
    factor = (half / gap) ** 2 if gap > 0 else math.inf
    rounds = len(pairs)
    by_rounds = False
    if rounds >= 2:  # does launch-to-launch noise dominate the repeats' own?
        _, wl, wh = ratio_interval(pairs, resample_rounds=False)
        by_rounds = (math.log(wh) - math.log(wl)) < half
    unit = "rounds (compare_rounds)" if by_rounds else "repeats (checks.repeats)"
    if factor > MAX_SETTLE_FACTOR:
        more = f"about {math.ceil(factor)}× the {unit}" if gap > 0 else "no number of runs"
        return (
            f"{where}: the ratio {point:.3f} is {abs(point / floor - 1):.1%} from the floor,"
            f" inside the noise (±{math.exp(half) - 1:.1%}); {more} would settle it, so judge"
            " by hand, quiet the host, or move the floor"
        )
    need = max(2.0, factor * 1.3)  # a margin: intervals shrink about as 1/√n
    if by_rounds:
        return f"{where}; about {math.ceil(rounds * need)} {unit} would settle it"
    repeats = max(len(a) for a, _ in pairs)
    return f"{where}; about {math.ceil(repeats * need)} {unit} a launch would settle it" + (
        ", or 2 or more rounds (compare_rounds)" if rounds == 1 else ""
    )


def compare(
    decode: Samples,
    baseline_decode: Samples,
    floor: float | None,
    ttft: Samples | None = None,
    baseline_ttft: Samples | None = None,
    ttft_ceiling: float | None = None,
) -> dict[str, Any]:
    """Speed ratio (recipe / baseline) with its interval, and a verdict.

    Each figure is a flat list (one round) or a list per round (rounds pair by order). The
    verdict is `clears` or `below` only when the whole interval (`speed_ratio_range`) is on one
    side of the floor. TTFT, when a ceiling is asked, is judged the same way (lower is better).
    """
    out: dict[str, Any] = {"floor": floor, "ttft_ceiling": ttft_ceiling}
    pairs = paired_rounds(decode, baseline_decode)
    if not pairs:
        mine = [x for r in _rounds(decode) for x in r]
        missing = "the recipe" if not mine else "the baseline"
        return {**out, "verdict": INSUFFICIENT, "why": f"no decode figure from {missing}"}
    mine = [x for a, _ in pairs for x in a]
    theirs = [x for _, b in pairs for x in b]
    ratio, low, high = ratio_interval(pairs)
    out.update(
        decode_tokens_per_s=round(_median(mine), 2),
        baseline_decode_tokens_per_s=round(_median(theirs), 2),
        speed_ratio=round(ratio, 3),
        speed_ratio_range=[round(low, 3), round(high, 3)],
        speed_ratio_rounds=[round(_median(a) / _median(b), 3) for a, b in pairs],
        interval=INTERVAL,
    )
    verdicts: list[tuple[str, str, str]] = []  # (what, verdict, why)
    few = _too_few(pairs)
    out["noise_known"] = few is None  # False: the interval is a point; rejudged insufficient
    if floor is not None:
        v = INSUFFICIENT if few else _judge(round(low, 3), round(high, 3), floor)
        why = few or (settle(pairs, ratio, low, high, floor) if v == INSUFFICIENT else "")
        verdicts.append(("speed", v, why))
    tpairs = paired_rounds(ttft, baseline_ttft)
    if tpairs:
        t, tlow, thigh = ratio_interval(tpairs)
        out.update(
            ttft_s=round(_median([x for a, _ in tpairs for x in a]), 4),
            baseline_ttft_s=round(_median([x for _, b in tpairs for x in b]), 4),
            ttft_ratio=round(t, 3),
            ttft_ratio_range=[round(tlow, 3), round(thigh, 3)],
        )
        if ttft_ceiling is not None:
            tfew = _too_few(tpairs)
            v = INSUFFICIENT if tfew else _judge_ceiling(*out["ttft_ratio_range"], ttft_ceiling)
            why = tfew or (
                f"TTFT's interval {tlow:.3f}–{thigh:.3f} straddles the ceiling {ttft_ceiling}"
            )
            verdicts.append(("ttft", v, why))
    if any(v == BELOW for _, v, _ in verdicts):
        out["verdict"] = BELOW
        out["why"] = " and ".join(k for k, v, _ in verdicts if v == BELOW)
    elif any(v == INSUFFICIENT for _, v, _ in verdicts):
        out["verdict"] = INSUFFICIENT
        out["why"] = "; ".join(w for _, v, w in verdicts if v == INSUFFICIENT)
    else:
        out["verdict"] = CLEARS
    return out


def rejudge(c: dict[str, Any], floor: float | None, ttft_ceiling: float | None) -> str:
    """The verdict of a stored comparison under the config's floor now (a changed floor re-judges
    the interval already measured; a baseline that did not pass stays insufficient data). A run
    stored before the interval judged by the extremes of its repeats; it is re-judged on them."""
    if (
        not c.get("baseline_passed", True)
        or c.get("speed_ratio_range") is None
        or c.get("noise_known") is False
    ):
        return INSUFFICIENT
    verdicts = []
    if floor is not None:
        verdicts.append(_judge(*c["speed_ratio_range"], floor))
    if ttft_ceiling is not None:
        if c.get("ttft_ratio_range") is None:
            verdicts.append(INSUFFICIENT)
        else:
            verdicts.append(_judge_ceiling(*c["ttft_ratio_range"], ttft_ceiling))
    if BELOW in verdicts:
        return BELOW
    return INSUFFICIENT if INSUFFICIENT in verdicts else CLEARS


def speed_phrase(c: dict[str, Any], baseline_title: str) -> str:
    """'decodes at 0.19× the speed of the vLLM MTP path (16 vs 85 tokens/s)'."""
    if c.get("speed_ratio") is None:
        return f"has no speed figure against {baseline_title}"
    text = (
        f"decodes at {c['speed_ratio']:.2f}× the speed of {baseline_title}"
        f" ({c['decode_tokens_per_s']:.0f} vs {c['baseline_decode_tokens_per_s']:.0f} tokens/s"
    )
    if c.get("ttft_ratio") is not None and c.get("ttft_ceiling") is not None:
        text += f"; TTFT {c['ttft_s']:.3f} vs {c['baseline_ttft_s']:.3f} s"
    return text + ")"
