"""The relative verdict: is a recipe fast enough next to the guide's validated path (its baseline)?

"It runs" is not the verdict: the guide parked SGLang's EAGLE-3 path because it decoded at ~16
tokens/s against ~85 on its vLLM MTP path. Both recipes are measured on the same host in the same
session (warm-up excluded, launches interleaved); this pure module turns their repeated figures
into a verdict. When the spread of the repeats straddles the floor, it says "insufficient data"
instead of guessing (as Conbench and Bencher do).
"""

from __future__ import annotations

from typing import Any

CLEARS, BELOW, INSUFFICIENT = "clears", "below", "insufficient data"


def _median(values: list[float]) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _judge(low: float, high: float, floor: float) -> str:
    if low >= floor:
        return CLEARS
    if high < floor:
        return BELOW
    return INSUFFICIENT


def compare(
    decode: list[float],
    baseline_decode: list[float],
    floor: float | None,
    ttft: list[float] | None = None,
    baseline_ttft: list[float] | None = None,
    ttft_ceiling: float | None = None,
) -> dict[str, Any]:
    """Speed ratio (recipe / baseline medians) with its range over the repeats, and a verdict.

    The range pairs the extremes (slowest recipe repeat against fastest baseline one, and the
    reverse): the verdict is `clears` or `below` only when the whole range is on one side of the
    floor. TTFT, when a ceiling is asked, is judged the same way (lower is better).
    """
    out: dict[str, Any] = {"floor": floor, "ttft_ceiling": ttft_ceiling}
    if not decode or not baseline_decode:
        missing = "the recipe" if not decode else "the baseline"
        return {**out, "verdict": INSUFFICIENT, "why": f"no decode figure from {missing}"}
    med, bmed = _median(decode), _median(baseline_decode)
    out.update(
        decode_tokens_per_s=round(med, 2),
        baseline_decode_tokens_per_s=round(bmed, 2),
        speed_ratio=round(med / bmed, 3),
        speed_ratio_range=[
            round(min(decode) / max(baseline_decode), 3),
            round(max(decode) / min(baseline_decode), 3),
        ],
    )
    verdicts = []
    if floor is not None:
        low, high = out["speed_ratio_range"]
        verdicts.append(("speed", _judge(low, high, floor)))
    if ttft and baseline_ttft:
        out.update(
            ttft_s=round(_median(ttft), 4),
            baseline_ttft_s=round(_median(baseline_ttft), 4),
            ttft_ratio=round(_median(ttft) / _median(baseline_ttft), 3),
            ttft_ratio_range=[
                round(min(ttft) / max(baseline_ttft), 3),
                round(max(ttft) / min(baseline_ttft), 3),
            ],
        )
        if ttft_ceiling is not None:
            low, high = out["ttft_ratio_range"]
            # lower is better: clears when even the worst ratio is under the ceiling
            v = CLEARS if high <= ttft_ceiling else BELOW if low > ttft_ceiling else INSUFFICIENT
            verdicts.append(("ttft", v))
    if any(v == BELOW for _, v in verdicts):
        out["verdict"] = BELOW
        out["why"] = " and ".join(k for k, v in verdicts if v == BELOW)
    elif any(v == INSUFFICIENT for _, v in verdicts):
        out["verdict"] = INSUFFICIENT
        out["why"] = "the repeats spread across the floor; run more rounds or repeats"
    else:
        out["verdict"] = CLEARS
    return out


def rejudge(c: dict[str, Any], floor: float | None, ttft_ceiling: float | None) -> str:
    """The verdict of a stored comparison under the config's floor now (a changed floor re-judges
    the figures already measured; a baseline that did not pass stays insufficient data)."""
    if not c.get("baseline_passed", True) or c.get("speed_ratio_range") is None:
        return INSUFFICIENT
    verdicts = []
    if floor is not None:
        verdicts.append(_judge(*c["speed_ratio_range"], floor))
    if ttft_ceiling is not None:
        if c.get("ttft_ratio_range") is None:
            verdicts.append(INSUFFICIENT)
        else:
            low, high = c["ttft_ratio_range"]
            verdicts.append(
                CLEARS if high <= ttft_ceiling else BELOW if low > ttft_ceiling else INSUFFICIENT
            )
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
