"""[recipe.source] and [bisect]: parsed into typed objects, bad input named by table and key;
the grid's template filling and the search's pure parts (budget, next step, judging)."""

from __future__ import annotations

from pathlib import Path

import pytest

from watcher.bisect.search import DECODE_CHECK, budget_for, failure_key, judge, next_index
from watcher.config.load import parse_config
from watcher.core.errors import ConfigError

RECIPE = """
[[recipe]]
id = "r"
engine = "sglang"
command = ["docker", "run", "lmsysorg/sglang:v0.5.0"]
"""


def cfg(text: str):
    return parse_config(RECIPE + text, Path("/tmp/watch.toml"))


def test_source_and_bisect_parse():
    c = cfg(
        '[recipe.source]\nimage = "lmsysorg/sglang"\ntag = "nightly-dev-{date}-{sha8}"\n'
        'every = "day"\n\n[bisect]\nauto = true\nrepeat = 3\nthreshold = 0.2\n'
    )
    src = c.recipe("r").source
    assert src.repo == "sgl-project/sglang"  # the engine's own repository by default
    values = {"date": "20261201", "sha8": "abcdef12"}
    assert src.build(values) == "lmsysorg/sglang:nightly-dev-20261201-abcdef12"
    assert (c.bisect.auto, c.bisect.repeat, c.bisect.threshold) == (True, 3, 0.2)
    assert cfg("").bisect.auto is False and cfg("").recipe("r").source is None
    wheel = cfg('[recipe.source]\nrequirement = "sglang=={version}"\nindex = "http://x/simple"\n')
    assert wheel.recipe("r").source.build({"version": "0.5.3"}) == "sglang==0.5.3"


@pytest.mark.parametrize(
    "text,expected",
    [
        (
            '[recipe.source]\nimage = "a"\nrequirement = "b"\n',
            r"\[recipe\[0\]\.source\] key 'image': give either",
        ),
        ("[recipe.source]\nevery = 'release'\n", r"key 'image': give either"),
        (
            '[recipe.source]\nimage = "a"\ntag = "{nope}"\n',
            r"key 'tag': unknown placeholder \{nope\}",
        ),
        (
            '[recipe.source]\nimage = "a"\ntag = "{date}"\nevery = "day"\n',
            r"key 'every': 'day' builds are named by commit",
        ),
        ('[recipe.source]\nimage = "a"\nimag = 1\n', r"key 'imag': is not a known key"),
        ('[recipe.source]\nrequirement = "x"\ntag = "t"\n', r"key 'tag': goes with 'image'"),
        ("[bisect]\nrepeat = 0\n", r"\[bisect\] key 'repeat': must be at least 1"),
        ("[bisect]\nthreshold = 1.5\n", r"\[bisect\] key 'threshold': must be between"),
        ("[bisect]\nauto = 'yes'\n", r"\[bisect\] key 'auto': must be bool"),
    ],
)
def test_bad_source_or_bisect_is_named(text, expected):
    with pytest.raises(ConfigError, match=expected):
        cfg(text)


def _state(n: int, **kw):
    points = [
        {"index": i, "build": f"img:v{i}", "sha": f"{i:040x}", "version": str(i), "tag": f"v{i}"}
        for i in range(n)
    ]
    base = {
        "mode": "regression",
        "points": points,
        "steps": [],
        "lo": 0,
        "hi": n - 1,
        "candidate": None,
        "candidate_done": True,
        "fail_key": "marlin-tile-n",
        "reference_median": None,
        "threshold": 0.1,
    }
    return base | kw


def test_next_index_confirms_the_ends_then_halves_and_goes_around_skips():
    s = _state(9)
    assert next_index(s) == 0
    s["steps"] = [{"index": 0, "verdict": "pass"}]
    assert next_index(s) == 8
    s["steps"].append({"index": 8, "verdict": "fail"})
    assert next_index(s) == 4
    s["steps"].append({"index": 4, "verdict": "skip"})
    assert next_index(s) == 3  # the nearest untested build, the lower one first
    s["steps"] += [{"index": 3, "verdict": "skip"}, {"index": 5, "verdict": "skip"}]
    assert next_index(s) in (2, 6)


def test_candidate_is_tried_just_after_then_just_before():
    s = _state(16, candidate={"index": 11, "sha": "x"}, candidate_done=False)
    s["steps"] = [{"index": 0, "verdict": "pass"}, {"index": 15, "verdict": "fail"}]
    assert next_index(s) == 11
    s["steps"].append({"index": 11, "verdict": "fail"})
    s["hi"] = 11
    assert next_index(s) == 10


def _doc(outcome="passed", **kw):
    return {"run_id": "x", "outcome": outcome, "metrics": {}, "reason": "", **kw}


def test_judge_compares_the_failure_and_the_installed_version():
    s = _state(4)
    p = s["points"][2]
    assert judge(s, p, [_doc(engine_version="2")])["verdict"] == "pass"
    bad = _doc("failed", signature="marlin-tile-n", engine_version="2")
    assert judge(s, p, [bad])["verdict"] == "fail"
    other = judge(s, p, [_doc("failed", signature="cuda-oom", engine_version="2")])
    assert other["verdict"] == "skip" and "fails differently (cuda-oom" in other["why"]
    lying = judge(s, p, [_doc(engine_version="1")])
    assert lying["verdict"] == "skip" and "labelled 2 but its engine reports 1" in lying["why"]
    err = judge(s, p, [_doc("error", signature="port-in-use")])
    assert err["verdict"] == "skip"


def test_performance_steps_need_repeats_and_clear_separation():
    s = _state(4, fail_key=DECODE_CHECK, reference_median=100.0, threshold=0.2)
    p = s["points"][1]

    def docs(*speeds):
        out = []
        for v in speeds:
            d = _doc("passed" if v >= 50 else "failed", engine_version="1")
            d["metrics"] = {"decode_tokens_per_s": v}
            if v < 50:
                d["reason"] = f"decode {v} tok/s is below the required 50.0"
            out.append(d)
        return out

    assert judge(s, p, docs(95, 99))["verdict"] == "insufficient"  # 2 < 3 samples
    assert judge(s, p, docs(95, 90, 99))["verdict"] == "pass"
    assert judge(s, p, docs(40, 60, 70))["verdict"] == "fail"  # all below 80
    mixed = judge(s, p, docs(70, 90, 75))
    assert mixed["verdict"] == "insufficient" and "straddle" in mixed["why"]
    assert failure_key(docs(40)[0]) == DECODE_CHECK


def test_budget_counts():
    assert [budget_for(n) for n in (2, 3, 4, 5, 16, 17, 64, 200)] == [3, 4, 4, 5, 6, 7, 8, 10]


def test_installed_check_by_version_or_commit():
    from watcher.bisect.search import installed_check

    release = {"tag": "v0.5.3", "version": "0.5.3", "sha": "abcdef1234567890"}
    nightly = {"tag": None, "version": "abcdef12", "sha": "abcdef1234567890"}
    assert installed_check(release, {"engine_version": "0.5.3"})[0]
    assert installed_check(release, {"engine_version": "0.5.3+gabcdef1"})[0]
    assert not installed_check(release, {"engine_version": "0.5.2"})[0]
    assert installed_check(nightly, {"engine_version": "0.5.4.dev7+gabcdef1"})[0]
    assert not installed_check(nightly, {"engine_version": "0.5.4.dev7+g1234567"})[0]
    ok, why = installed_check(nightly, {"engine_version": "0.5.4"})
    assert ok and why == "unverified: the engine reports 0.5.4, which names no commit"
    assert installed_check(release, {})[1] == "unverified: the engine reported no version"
