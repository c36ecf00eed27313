"""The comparison's edges, each a one-line slip that passed the comparison's tests (issue 32's
mutation set): an interval that ends exactly on the floor, an even number of samples, a zero
figure (a failed timing), and a TTFT interval across its ceiling."""

from __future__ import annotations

from watcher.judge.compare import BELOW, CLEARS, INSUFFICIENT, compare, paired_rounds


def test_an_interval_whose_top_is_the_floor_is_not_below_it():
    # 8 or 9 tok/s against a steady 10: the ratio's interval is 0.8-0.9, its top on the floor
    out = compare([9, 8, 9, 8], [10, 10, 10, 10], floor=0.9)
    assert out["speed_ratio_range"][1] == 0.9
    assert out["verdict"] == INSUFFICIENT, out


def test_an_interval_whose_bottom_is_the_floor_clears_it():
    out = compare([9, 9, 9], [10, 10, 10], floor=0.9)
    assert out["speed_ratio_range"] == [0.9, 0.9] and out["verdict"] == CLEARS


def test_the_median_of_an_even_count_is_the_mean_of_the_middle_two():
    out = compare([10, 20, 30, 40], [10, 10, 10, 10], floor=None)
    assert out["decode_tokens_per_s"] == 25.0 and out["speed_ratio"] == 2.5


def test_a_zero_figure_is_no_figure():
    # a repeat whose timing failed reports 0: it must not drag a median (nor divide by zero)
    assert paired_rounds([0, 10, 12], [10, 0, 10]) == [([10.0, 12.0], [10.0, 10.0])]
    assert paired_rounds([[0, 0], [10, 10]], [[10, 10], [10, 10]]) == [([10.0, 10.0], [10.0, 10.0])]


def test_a_ttft_interval_across_its_ceiling_is_insufficient_not_clear():
    # decode clears; TTFT 1.0-1.3× the baseline's against a 1.2 ceiling: not known either way
    out = compare(
        [10, 10, 10],
        [10, 10, 10],
        floor=0.5,
        ttft=[0.10, 0.13, 0.10, 0.13],
        baseline_ttft=[0.10, 0.10, 0.10, 0.10],
        ttft_ceiling=1.2,
    )
    low, high = out["ttft_ratio_range"]
    assert low < 1.2 < high
    assert out["verdict"] == INSUFFICIENT and "straddles the ceiling 1.2" in out["why"], out
    slow = compare([10] * 3, [10] * 3, 0.5, [0.2] * 3, [0.1] * 3, ttft_ceiling=1.2)
    assert slow["verdict"] == BELOW and slow["why"] == "ttft"
