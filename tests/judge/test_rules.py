"""Rules as config and as pure functions: code items, match scope, terms, hints that never clear.

The HTTP side (contents, trees, 304s) is in test_code_items.py; here the parsing, the matching
the backtest reuses, and the evaluation of hints over stored rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from kits.watchtoml import load_watch

from watcher.config.load import load_config
from watcher.config.model import Item
from watcher.core.errors import ConfigError
from watcher.judge.evaluate import evaluate
from watcher.judge.states import item_satisfied
from watcher.judge.views import item_view, project_name
from watcher.poll.poller import commit_matches
from watcher.publish.status import status_document

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

CODE = """
[[item]]
id = "guard"
repo = "sgl-project/sglang"
kind = "code"
label = "SGLang's Marlin call site"
paths = ["python/sglang/srt/layers/quantization/marlin_utils.py"]
ref = "latest-release"
present = ['\\bpad_?to\\b']
absent = ['not divisible by min_thread_n']
"""

HINTED = (
    CODE
    + """
[[item]]
id = "vllm-40361"
repo = "vllm-project/vllm"
kind = "pull"
number = 40361
label = "Marlin pad fix in vLLM"

[[item]]
id = "vllm-39931"
repo = "vllm-project/vllm"
kind = "pull"
number = 39931

[[blocker]]
id = "marlin-pad"
title = "Marlin pad on SGLang"
items = ["guard"]
rule = "any"
hints = ["vllm-40361"]
watch = ["vllm-39931"]

[[recipe]]
id = "r"
engine = "sglang"
command = ["x"]
blockers = ["marlin-pad"]

[[page]]
id = "sglang"
title = "SGLang"
output = "SGLANG.md"
blockers = ["marlin-pad"]
recipes = ["r"]
"""
)


def parse(text: str, tmp_path: Path):
    return load_watch(tmp_path, text)


def error_of(text: str, tmp_path: Path) -> str:
    with pytest.raises(ConfigError) as e:
        parse(text, tmp_path)
    return str(e.value)


# ------------------------------------------------------------------ config


def test_code_item_and_hints_parse(tmp_path):
    cfg = parse(HINTED, tmp_path)
    guard = cfg.item("guard")
    assert guard.kind == "code" and guard.ref == "latest-release"
    assert guard.present == (r"\bpad_?to\b",) and guard.absent == ("not divisible by min_thread_n",)
    b = cfg.blocker("marlin-pad")
    assert b.hints == ("vllm-40361",) and b.hints_trigger_smoke is False


def test_commit_item_scope_terms_and_max_pages_parse(tmp_path):
    cfg = parse(
        '[[item]]\nid = "c"\nrepo = "o/r"\nkind = "commits"\npaths = ["a/"]\nmatch = "message"\n'
        "terms = ['\\beagle3?\\b', '\\bmamba\\b']\nmax_pages = 2\n",
        tmp_path,
    )
    c = cfg.item("c")
    assert (c.match, c.terms, c.max_pages) == ("message", (r"\beagle3?\b", r"\bmamba\b"), 2)
    assert parse('[[item]]\nid = "c"\nrepo = "o/r"\nkind = "commits"\n', tmp_path).item(
        "c"
    ).match == ("subject")


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "code"\npresent = ["a"]\n',
            "[item[0]] key 'paths': is required for kind 'code'",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "code"\npaths = ["a.py"]\n',
            "[item[0]] key 'present': kind 'code' needs at least one of 'present' or 'absent'",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "code"\npaths = ["src/"]\npresent = ["a"]\n',
            "[item[0]] key 'paths': 'src/' is a folder; a code item reads files",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "code"\npaths = ["a.py"]\nabsent = ["(x"]\n',
            "[item[0]] key 'absent': entry 1 ('(x') is not a valid regular expression",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "code"\npaths = ["a.py"]\npresent = ["a"]\n'
            'branch = "main"\n',
            "[item[0]] key 'branch': applies only to kind 'commits' (code items use 'ref')",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "code"\npaths = ["a.py"]\npresent = ["a"]\n'
            'ref = ""\n',
            "[item[0]] key 'ref': must not be empty",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "code"\npaths = ["a.py"]\npresent = [1]\n',
            "[item[0]] key 'present': must be a list of strings",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "pull"\nnumber = 1\npresent = ["a"]\n',
            "[item[0]] key 'present': applies only to kind 'code'",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "commits"\nref = "main"\n',
            "[item[0]] key 'ref': applies only to kind 'code'",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "commits"\nmatch = "body"\n',
            "[item[0]] key 'match': must be one of subject, message; got 'body'",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "commits"\nterms = ["ok", "[bad"]\n',
            "[item[0]] key 'terms': entry 2 ('[bad') is not a valid regular expression",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "commits"\nterms = "eagle"\n',
            "[item[0]] key 'terms': must be list, got str",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "commits"\nmax_pages = 0\n',
            "[item[0]] key 'max_pages': must be at least 1, got 0",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "releases"\nterms = ["a"]\n',
            "[item[0]] key 'terms': applies only to kind 'commits'",
        ),
        (
            '[[item]]\nid = "x"\nrepo = "o/r"\nkind = "code"\nnumber = 3\npaths = ["a"]\n',
            "[item[0]] key 'number': does not apply to kind 'code'",
        ),
        (
            CODE + '[[blocker]]\nid = "b"\ntitle = "B"\nitems = ["guard"]\nhints = ["nope"]\n',
            "[blocker.b] key 'hints': no item with id 'nope'",
        ),
        (
            CODE + '[[blocker]]\nid = "b"\ntitle = "B"\nitems = ["guard"]\nhints = ["guard"]\n',
            "[blocker.b] key 'hints': 'guard' is also in 'items'",
        ),
        (
            CODE + '[[blocker]]\nid = "b"\ntitle = "B"\nhints_trigger_smoke = "yes"\n',
            "[blocker[0]] key 'hints_trigger_smoke': must be bool",
        ),
        (
            CODE.replace("present = [", "presnt = ["),
            "[item[0]] key 'presnt': is not a known key (did you mean 'present'?)",
        ),
    ],
)
def test_new_keys_have_precise_errors(tmp_path, text, expected):
    message = error_of(text, tmp_path)
    assert str(tmp_path / "watch.toml") in message
    assert expected in message


def test_default_watch_list_stays_valid():
    load_config(Path(__file__).resolve().parents[2] / "watch.toml")


# ------------------------------------------------------------------ matching (the backtest's)


def commit(message: str) -> dict:
    return {"sha": "a" * 40, "commit": {"message": message}}


def rule(**kw) -> Item:
    return Item(id="c", repo="o/r", kind="commits", **kw)


def test_subject_scope_ignores_the_body():
    refactor = commit("Refactor scheduler\n\nThis prepares for draft models later.")
    it = rule(pattern=r"\bdraft\b")
    assert not commit_matches(it, refactor)  # default: subject only
    assert commit_matches(rule(pattern=r"\bdraft\b", match="message"), refactor)
    assert commit_matches(it, commit("Support draft models\n\nbody"))
    assert commit_matches(it, "Support draft models")  # a message given as text


def test_terms_must_all_match():
    both = rule(terms=(r"(?i)\b(eagle3?|spec(ulative)?[-_ ]?(v2|decod\w*))\b", r"(?i)\bmamba\b"))
    assert commit_matches(both, commit("[Spec V2] Support specV2 for mamba hybrid attention"))
    assert commit_matches(both, commit("support qwen3-next eagle3 on mamba layers"))
    assert not commit_matches(both, commit("support qwen3-next eagle3"))  # no hybrid term
    assert not commit_matches(both, commit("mamba: faster conv1d"))  # no spec-decode term
    # terms and pattern together: both must hold
    gated = rule(pattern=r"^\[Spec", terms=(r"(?i)mamba",))
    assert commit_matches(gated, commit("[Spec V2] mamba state"))
    assert not commit_matches(gated, commit("mamba state for [Spec V2]"))
    # no pattern and no terms: every commit in the paths counts
    assert commit_matches(rule(), commit("anything"))


def test_code_item_satisfied_only_when_present():
    it = Item(id="g", repo="o/r", kind="code", paths=("a.py",), present=("x",))
    assert item_satisfied(it, {"state": "present"})
    assert not item_satisfied(it, {"state": "absent"})
    assert not item_satisfied(it, {"state": "unreadable"})
    assert not item_satisfied(it, {"state": "file-missing"})
    assert not item_satisfied(it, None)


# ------------------------------------------------------------------ hints never clear


def fixed_elsewhere_rows(guard_state: str) -> dict[str, dict]:
    return {
        "vllm-40361": {
            "id": "vllm-40361",
            "state": "closed",
            "superseded_by": 45295,
            "superseded_state": "merged",
            "in_release": "v0.24.0",
            "title": "[Kernel] Marlin pad sub-tile n",
            "details": {},
        },
        "guard": {
            "id": "guard",
            "state": guard_state,
            "title": "marlin_utils.py at v0.5.9",
            "details": {
                "code": {
                    "ref": "v0.5.9",
                    "sha": "d55f1c2" + "0" * 33,
                    "lines": [
                        {
                            "path": "python/sglang/srt/layers/quantization/marlin_utils.py",
                            "line": 88,
                            "text": 'raise ValueError("not divisible by min_thread_n")',
                            "url": "https://github.com/sgl-project/sglang/blob/d55f1c2/x#L88",
                            "rule": "absent",
                        }
                    ],
                    "line_count": 1,
                    "not_found": [r"\bpad_?to\b"],
                },
                "warnings": [],
            },
        },
    }


def test_a_fix_elsewhere_never_clears_the_blocker(tmp_path):
    cfg = parse(HINTED, tmp_path)
    items = fixed_elsewhere_rows("absent")
    ev = evaluate(cfg, items, [], {}, NOW)
    b = ev.blockers["marlin-pad"]
    assert b.status == "blocked"
    assert ev.pages["sglang"].status == "blocked"
    (hint,) = b.hints
    assert hint["satisfied"] is True
    assert hint["text"] == "fixed in vLLM #45295, first in v0.24.0; not detected in SGLang"
    doc = status_document(cfg, items, ev, None, [], "2026-11-30T12:00:00Z")
    blocker = doc["blockers"][0]
    assert blocker["status"] == "blocked" and blocker["hints"][0]["text"] == hint["text"]
    guard = next(i for i in doc["items"] if i["id"] == "guard")
    assert guard["evidence"]["ref"] == "v0.5.9" and guard["evidence"]["line_count"] == 1
    assert guard["evidence"]["lines"][0]["line"] == 88 and guard["warnings"] == []
    # once SGLang's own code has the fix, the blocker clears on its own items (not the hint)
    ev = evaluate(cfg, fixed_elsewhere_rows("present"), [], {}, NOW)
    assert ev.blockers["marlin-pad"].status == "fix-merged"
    assert ev.blockers["marlin-pad"].hints[0]["text"] == "fixed in vLLM #45295, first in v0.24.0"


def test_hint_not_yet_fixed_and_never_read(tmp_path):
    cfg = parse(HINTED, tmp_path)
    items = {"vllm-40361": {"id": "vllm-40361", "state": "open", "details": {}}}
    (hint,) = evaluate(cfg, items, [], {}, NOW).blockers["marlin-pad"].hints
    assert hint["text"] == "not fixed in vLLM #40361 (open); not detected in SGLang"
    (hint,) = evaluate(cfg, {}, [], {}, NOW).blockers["marlin-pad"].hints
    assert hint["text"].startswith("vLLM #40361 not read yet")


def test_item_view_carries_warnings_and_commit_evidence(tmp_path):
    cfg = parse('[[item]]\nid = "c"\nrepo = "o/r"\nkind = "commits"\npaths = ["gone/"]\n', tmp_path)
    match = {"sha": "b" * 40, "date": "2026-02-01T00:00:00Z", "subject": "s", "url": "https://x"}
    view = item_view(
        cfg,
        "c",
        {
            "state": "matched",
            "details": {"commits": [match], "matched": 31, "warnings": ["`gone/` no longer"]},
        },
    )
    assert view["evidence"] == {"matches": [match], "match_count": 31}
    assert view["warnings"] == ["`gone/` no longer"]


def test_project_names():
    assert project_name("vllm-project/vllm") == "vLLM"
    assert project_name("sgl-project/sglang") == "SGLang"
    assert project_name("someone/thing") == "thing"


# ------------------------------------------------------------------ hostile text in the new filters


def test_code_spans_and_ticked_sentences_stay_inert():
    from watcher.publish.page import code_span, html_ticks, md_ticks

    assert code_span("a `b` c") == "``a `b` c``"
    assert code_span("`x`") == "`` `x` ``"
    assert code_span("line\nbreak") == "`line break`"
    assert code_span("token ghp_" + "a" * 30) == "`token [redacted]`"
    assert md_ticks("`p/` gone <b>[x](javascript:1)</b>") == (
        "`p/` gone &lt;b&gt;\\[x\\](javascript:1)&lt;/b&gt;"
    )
    assert md_ticks("odd ` tick") == "odd \\` tick"  # unbalanced: all plain, escaped
    assert str(html_ticks("`<script>` gone")) == "<code>&lt;script&gt;</code> gone"


@pytest.mark.parametrize("opt_in", [False, True])
def test_a_hint_starts_a_smoke_run_only_when_opted_in(tmp_path, opt_in):
    from watcher.smoke.trigger import due_recipes
    from watcher.store.db import Store

    text = HINTED
    if opt_in:
        text = text.replace(
            'hints = ["vllm-40361"]', 'hints = ["vllm-40361"]\nhints_trigger_smoke = true'
        )
    cfg = parse(text, tmp_path)
    ev = evaluate(cfg, fixed_elsewhere_rows("absent"), [], {}, NOW)
    change = {"kind": "item", "subject": "vllm-40361", "old": "open", "new": "closed"}
    store = Store(tmp_path / "watcher.db")
    try:
        due = due_recipes(cfg, store, ev, [change], NOW)
    finally:
        store.close()
    assert [(d.recipe, d.reasons) for d in due] == (
        [("r", ["item vllm-40361 of blocker marlin-pad changed"])] if opt_in else []
    )


def test_status_json_evidence_is_plain_and_bounded_like_titles(tmp_path):
    """Evidence lines are upstream text (a file's line, a commit subject): in status.json they
    lose control and bidi characters and tokens, and are cut like titles; unsafe links go."""
    cfg = parse(HINTED, tmp_path)
    items = fixed_elsewhere_rows("absent")
    line = items["guard"]["details"]["code"]["lines"][0]
    token = "ghp_" + "A" * 36
    line["text"] = "\x1b[31mred\u202e " + token + " " + "x" * 5000
    line["url"] = "javascript:alert(1)"
    items["guard"]["details"]["warnings"] = ["\x1b]0;title\x07moved " + token]
    ev = evaluate(cfg, items, [], {}, NOW)
    doc = status_document(cfg, items, ev, None, [], "2026-11-30T12:00:00Z")
    guard = next(i for i in doc["items"] if i["id"] == "guard")
    shown = guard["evidence"]["lines"][0]
    assert "\x1b" not in shown["text"] and "\u202e" not in shown["text"]
    assert token not in shown["text"] and len(shown["text"]) <= 500
    assert shown["url"] is None
    assert token not in guard["warnings"][0] and "\x1b" not in guard["warnings"][0]
