"""Config regexes over upstream text: the work is bounded (issue 21 item 1).

`GPTQ.*!=\\s*0` over one long line backtracks quadratically in Python's `re`, which holds the GIL,
so a cycle deadline, Ctrl-C and the scheduler all wait. Patterns now match one line at a time,
each line cut to MAX_LINE_CHARS, behind a hyperscan gate. The hang tests run the matching in a
child process with a generous limit: unbounded matching needs tens of minutes there, bounded
matching milliseconds, so the limit tells the two apart on any machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from watcher.config.model import Item
from watcher.poll import textmatch
from watcher.poll.poller import _find, commit_matches

REPO = Path(__file__).resolve().parents[2]
SLOW = r"GPTQ.*!=\s*0"


def _in_child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.parametrize("engine", ["hyperscan", "python"])
def test_a_backtracking_pattern_over_a_1_mb_line_is_bounded(engine):
    gate = "" if engine == "hyperscan" else "textmatch._gate = lambda p: None\n"
    code = (
        "from watcher.poll import textmatch\n"
        "from watcher.poll.poller import _find\n"
        + gate
        + "text = 'x = 1\\n' + 'GPTQ' * 250_000 + '\\nif GPTQ != 0: pass\\n'\n"
        f"hits = _find('o/r', 'a' * 40, 'f.py', text, {SLOW!r}, 'present')\n"
        "print([h['line'] for h in hits])\n"
    )
    r = _in_child(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[3]"


def test_a_long_commit_message_with_match_message_is_bounded():
    code = (
        "from watcher.config.model import Item\n"
        "from watcher.poll.poller import commit_matches\n"
        f"item = Item(id='c', repo='o/r', kind='commits', pattern={SLOW!r}, match='message')\n"
        "msg = 'subject\\n\\n' + 'GPTQ' * 250_000\n"
        "print(commit_matches(item, msg))\n"
    )
    r = _in_child(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_matching_is_per_line_and_capped():
    text = "a\n" + "y" * textmatch.MAX_LINE_CHARS + "GPTQ != 0\nGPTQ\n!= 0\nok GPTQ x != 0\n"
    hits = _find("o/r", "a" * 40, "f.py", text, SLOW, "present")
    assert [h["line"] for h in hits] == [5]  # past the cap, and across lines, do not count
    item = Item(id="c", repo="o/r", kind="commits", pattern=SLOW, match="message")
    assert commit_matches(item, "subject\n\nok GPTQ x != 0")
    assert not commit_matches(item, "subject\nGPTQ\n!= 0")


@pytest.mark.parametrize(
    "pattern",
    [r"(?i)gptq.*marlin", r"\bpad_?to\b", r"déjà.{0,3}vu", r"(a|b)+c", r"^$", r"x*", r"(?=a)a"],
)
def test_the_gate_never_hides_a_match(pattern):
    lines = ["GPTQ and MARLIN", "pad_to(", "déjà  vu", "ababc", "", "zzz", "a", "ａ gptq marlin"]
    text = "\n".join(lines)
    import re

    expected = [n for n, line in enumerate(lines, 1) if re.search(pattern, line)]
    assert textmatch.matching_lines(pattern, text) == expected


def test_slow_pattern_names_dot_star_between_literals():
    assert textmatch.slow_pattern(SLOW)
    assert textmatch.slow_pattern(r"foo.+bar")
    for fine in (r"^GPTQ.*!=", r"GPTQ.{0,200}!=", r"GPTQ[^!]*!=", r"foo.*", r".*bar", r"foo"):
        assert textmatch.slow_pattern(fine) is None, fine


def test_validate_warns_about_a_slow_pattern(tmp_path):
    path = tmp_path / "watch.toml"
    path.write_text(
        '[[item]]\nid = "c"\nrepo = "o/r"\nkind = "code"\nlabel = "L"\npaths = ["a.py"]\n'
        f"present = ['{SLOW}']\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "watcher", "validate", "--config", str(path)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "warning: [item.c]" in r.stderr and "unanchored `.*` between literals" in r.stderr


def test_evidence_lines_from_files_carry_no_terminal_escapes():
    text = "ok\n\x1b[2J\x1b]0;pwned\x07GPTQ x != 0\x1b[0m\n"
    (hit,) = _find("o/r", "a" * 40, "f.py", text, SLOW, "present")
    assert "\x1b" not in hit["text"] and "\x07" not in hit["text"] and "GPTQ x != 0" in hit["text"]
