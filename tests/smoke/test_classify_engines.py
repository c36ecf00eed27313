"""The one-pass literal filter never changes the answer.

Each engine (hyperscan, the pure-Python finder, and `none`: every regex on every block, the
reference) must return the same family, line number, line and excerpt, on the real-looking lines
of test_classify.py and on lines built to trip a filter: matches split over block edges, Unicode
letters that Python's IGNORECASE folds to ASCII, invalid UTF-8, and config patterns with
look-arounds, back-references or no literal at all.
"""

from __future__ import annotations

import random
import re
import sys

import pytest
from test_classify import FAMILIES, MARLIN

from watcher.config.signatures import BUILTIN, Signature, all_signatures
from watcher.core.patterns import (
    ANYTHING,
    ENGINES,
    FOLD,
    _hyperscan_accepts,
    hyperscan_pattern,
    requirement,
)
from watcher.smoke.classify import Classifier

EXTRA = (
    Signature(id="lookaround", pattern=r"(?<!no )fatal (\w+) again \1", kind="upstream"),
    Signature(id="digits-only", pattern=r"\b\d{3}-\d{4}-\d{2}\b", kind="environment"),
    Signature(id="non-ascii", pattern=r"(?i)straße\s+ist\s+kaputt", kind="environment"),
)
SIGNATURE_SETS = {"builtin": all_signatures(), "with-config": all_signatures(EXTRA)}


def findings(text: bytes, signatures, sizes=(7, 64, 1000, 1 << 20)) -> dict:
    """engine -> block size -> (id, line_no, line, excerpt) or None."""
    out = {}
    for engine in ENGINES:
        c = Classifier(signatures, engine=engine)
        assert c.engine.name == engine
        for size in sizes:
            f = c.scan_blocks(text[i : i + size] for i in range(0, len(text), size))
            out[engine, size] = f and (f.id, f.line_no, f.line, f.excerpt)
    return out


def assert_same(text: bytes, signatures=None, want: str | None = "any") -> None:
    got = findings(text, signatures or all_signatures())
    reference = got["none", 1 << 20]
    for (engine, size), answer in got.items():  # the excerpt may depend on the block size
        assert answer == got["none", size], (engine, size, answer, got["none", size])
        assert (answer and answer[:2]) == (reference and reference[:2]), (engine, size)
    if want != "any":
        assert (reference and reference[0]) == want, reference


ADVERSARIAL = [
    # Unicode letters that Python's re.IGNORECASE folds to ASCII i, k and s
    ("address already \u0131n use (dotless i)", "port-in-use"),
    ("b\u0130nd() failed", "port-in-use"),
    ("\u212aV cache is too small", "kv-cache-memory"),
    ("address already in u\u017fe", "port-in-use"),
    # invalid UTF-8 inside a match (`.{0,80}` spans the replacement characters)
    ("model \udcff\udcfe/weights path not found", "model-not-found"),
    # multi-byte characters before the match shift byte offsets
    ("\u2588" * 300 + " torch.OutOfMemoryError: CUDA out of memory", "cuda-oom"),
    # a family's words spread over wrapped lines and extra whitespace
    ("Watchdog\n   caught   collective\toperation timeout", "nccl"),
    ("CUDA  out\n of memory", "cuda-oom"),
    # whitespace Python's \s accepts and a byte-wise \s would not (hyperscan runs the regexes)
    ("CUDA\u00a0out\u2003of\u3000memory", "cuda-oom"),
    ("address\x1calready\x1fin\x85use", "port-in-use"),
    ("port \u0663\u0660 is in use (Arabic-Indic digits are \\d)", "port-in-use"),
    ("nccl\u200a error", "nccl"),  # a hair space is \s too
    # literals present, regex not: the filter says maybe, the regex says no
    ("divisible is not by size; kv cache is small; model not found nowhere", None),
    ("no such file or directory: 'notes.txt' (not a model file)", None),
]


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


@pytest.mark.parametrize("line, family", ADVERSARIAL)
def test_adversarial_lines_get_the_same_answer_from_every_engine(line, family):
    pad = "".join(f"[2026-11-30 12:00:{i % 60:02d}] step {i}\n" for i in range(120))
    assert_same(encode(pad + line + "\n" + pad), want=family)


@pytest.mark.parametrize("line", [*MARLIN, *FAMILIES.values()])
def test_fixture_lines_get_the_same_answer_from_every_engine(line):
    assert_same(f"INFO loading\n{line}\nTraceback follows\n".encode())


def test_a_match_straddling_every_block_edge():
    line = "RuntimeError: size_n = 96 is not divisible by\n    tile_n_size = 64"
    head = "".join(f"INFO step {i}\n" for i in range(30)).encode()
    text = head + line.encode() + b"\nmore\n"
    start = len(head)
    for cut in range(start - 3, start + len(line) + 3):  # every edge inside the failure
        blocks = [text[:cut], text[cut:]]
        answers = {e: Classifier(engine=e).scan_blocks(blocks) for e in ENGINES}
        assert {(f.id, f.line_no, f.excerpt) for f in answers.values()} == {
            ("marlin-tile-n", 31, answers["none"].excerpt)
        }, cut


def test_config_patterns_with_lookarounds_backrefs_and_no_literal():
    signatures = SIGNATURE_SETS["with-config"]
    assert requirement(r"\b\d{3}-\d{4}-\d{2}\b") == ANYTHING  # runs on every block
    assert requirement(r"(?<!no )fatal (\w+) again \1").literals() == {"fatal ", " again "}
    for line, want in (
        ("fatal disk again disk", "lookaround"),
        ("no fatal disk again disk", None),
        ("call 555-1234-99 now", "digits-only"),
        ("STRASSE ist kaputt", None),
        ("Straße   IST kaputt", "non-ascii"),
    ):
        assert_same(f"start\n{line}\nend\n".encode(), signatures, want=want)


def test_random_logs_get_the_same_answer_from_every_engine():
    """Fragments of real failure lines, re-cased, re-spaced, folded and cut at random."""
    rnd = random.Random(15)
    words = " ".join([*MARLIN, *FAMILIES.values(), *(a for a, _ in ADVERSARIAL)]).split()
    folds = {"i": "\u0131", "k": "\u212a", "s": "\u017f", "I": "\u0130"}
    for n in range(60):
        lines = []
        for _ in range(rnd.randint(1, 40)):
            picked = rnd.sample(words, rnd.randint(1, 9))
            line = rnd.choice([" ", "  ", "\n", "\t"]).join(picked)
            line = "".join(
                folds.get(ch, ch)
                if rnd.random() < 0.02
                else ch.upper()
                if rnd.random() < 0.1
                else ch
                for ch in line
            )
            lines.append(line)
        if rnd.random() < 0.5:
            lines.insert(rnd.randrange(len(lines) + 1), rnd.choice(list(FAMILIES.values())))
        text = encode("\n".join(lines) + "\n")
        signatures = SIGNATURE_SETS[rnd.choice(list(SIGNATURE_SETS))]
        for size in (rnd.randint(5, 300), 1 << 20):
            got = findings(text, signatures, sizes=(size,))
            assert len(set(got.values())) == 1, (n, size, got)


def test_fold_table_is_what_python_ignorecase_does():
    """Every non-ASCII code point that (?i) matches to an ASCII letter is folded before the pass."""
    everything = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    folded = {}
    for letter in "abcdefghijklmnopqrstuvwxyz":
        for ch in re.findall(f"(?i){letter}", everything):
            if not ch.isascii():
                folded[ch.encode()] = letter.encode()
    assert folded == dict(FOLD)


def test_every_builtin_family_has_literals():
    for s in BUILTIN:
        assert requirement(s.pattern).literals(), s.id


def test_line_numbers_counted_on_demand_match_a_whole_log_count(tmp_path):
    """scan(path) counts newlines only once something matched, by reading the file again."""
    lines = [f"[2026-11-30 12:00:00] step {i} " + "x" * 60 for i in range(60_000)]  # ~5 MiB
    lines[20_000] = "torch.OutOfMemoryError: CUDA out of memory."  # block 2
    lines[50_000] = "NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error"  # wins
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    for engine in ENGINES:
        c = Classifier(engine=engine)
        streamed = c.scan(log)
        assert (streamed.id, streamed.line_no) == ("nccl", 50_001), engine
        assert streamed == c.scan_blocks([log.read_bytes()]), engine


@pytest.mark.parametrize("shift", [-40, -20, -1, 0, 1, 20])
def test_a_failure_straddling_the_files_block_edge_keeps_its_line_and_excerpt(tmp_path, shift):
    """A wrapped failure cut by the 1 MiB read edge: same line number and excerpt as one block."""
    failure = "RuntimeError: size_n = 96 is not divisible by\n    tile_n_size = 64\n"
    head = "".join(f"INFO step {i:07d}\n" for i in range(((1 << 20) + shift) // 18))
    head = head[: (1 << 20) + shift - 30]  # the failure starts 30 bytes (+shift) before the edge
    head = head[: head.rfind("\n") + 1]
    log = tmp_path / "run.log"
    log.write_bytes((head + failure + "INFO after\n" * 20).encode())
    want_line = head.count("\n") + 1
    for engine in ENGINES:
        c = Classifier(engine=engine)
        streamed = c.scan(log)
        whole = c.scan_blocks([log.read_bytes()])
        assert (streamed.id, streamed.line_no) == ("marlin-tile-n", want_line), engine
        assert streamed.line == whole.line, engine
        # the lines around it may stop at a block edge (as before); the failure itself is there
        assert "is not divisible by\n    tile_n_size = 64" in streamed.excerpt, engine


def test_hyperscan_runs_every_builtin_regex_and_leaves_lookarounds_to_the_literals():
    pytest.importorskip("hyperscan")
    assert Classifier(engine="hyperscan").engine.families == set(range(len(BUILTIN)))
    with_config = Classifier(SIGNATURE_SETS["with-config"], engine="hyperscan")
    ids = [s.id for s in with_config.signatures]
    assert ids.index("lookaround") not in with_config.engine.families  # back-reference
    assert hyperscan_pattern(r"(?<!no )fatal") is None and hyperscan_pattern(r"(a)\1") is None
    assert ids.index("non-ascii") in with_config.engine.families


LINES = [a for a, _ in ADVERSARIAL] + ["call 555-1234-99 now", "Straße   IST kaputt"]


def test_rewritten_regexes_match_whatever_python_matches():
    """Python's match on the decoded text implies hyperscan's on the bytes, on random text."""
    hyperscan = pytest.importorskip("hyperscan")
    rnd = random.Random(4)
    words = " ".join([*MARLIN, *FAMILIES.values(), *LINES]).split()
    odd = ["\u00a0", "\x1c", "\u0131", "\u212a", "\u017f", "\u0663", "\udcff", "é", "\n", "''"]
    signatures = [*BUILTIN, *EXTRA[1:]]
    for s in signatures:
        pattern = hyperscan_pattern(s.pattern)
        assert pattern is not None and _hyperscan_accepts(pattern), s.id
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(
            expressions=[pattern], ids=[0], elements=1, flags=[hyperscan.HS_FLAG_SINGLEMATCH]
        )
        regex = re.compile(s.pattern)
        matched = 0
        for _ in range(300):
            if rnd.random() < 0.5:  # random words, or a whole failure line
                parts = rnd.sample(words, rnd.randint(1, 8))
            else:
                parts = rnd.choice([*MARLIN, *FAMILIES.values(), *LINES]).split(" ")
            text = "".join(p + (rnd.choice(odd) if rnd.random() < 0.1 else " ") for p in parts)
            data = encode(text)
            hits: list = []
            db.scan(data, match_event_handler=lambda *a, hits=hits: hits.append(a))
            if regex.search(data.decode("utf-8", "replace")):
                matched += 1
                assert hits, (s.id, text)
        assert matched or s not in BUILTIN, s.id


def test_one_classifier_scans_from_several_threads_at_once():
    """The smoke runner's log pump and its verdict scan share one Classifier from two threads; a
    hyperscan scratch space serves one scan at a time (ScratchInUseError), so each thread needs
    its own. Eight threads scan big blocks at once and all get the same finding."""
    import threading

    clf = Classifier(engine="hyperscan")
    if clf.engine.name != "hyperscan":
        pytest.skip("hyperscan is not installed")
    block = (b"INFO loading shard, nothing to see here\n" * 40000) + MARLIN[0].encode() + b"\n"
    want = clf.scan_blocks([block])
    assert want is not None and want.signature.id == "marlin-tile-n"
    results, errors = [], []
    start = threading.Barrier(8)

    def scan():
        start.wait()
        try:
            for _ in range(5):
                results.append(clf.scan_blocks([block]))
        except Exception as e:  # noqa: BLE001 — the failure this test is about
            errors.append(e)

    threads = [threading.Thread(target=scan) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 40 and all(r == want for r in results)
