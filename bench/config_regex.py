"""Config regexes over one long upstream line: whole-text `re.finditer` (before issue 21) against
watcher.poll.textmatch (line by line, 2,000-character cap, hyperscan gate), side by side in one run.

    python bench/config_regex.py [--kib 8 16 32]

The pattern is the issue's `GPTQ.*!=\\s*0` over a line of repeated "GPTQ" with no "!=" (a
minified file, say): quadratic backtracking for `re`; hyperscan rules the line out in linear time.
"""

from __future__ import annotations

import argparse
import re
import time

from watcher.poll import textmatch

PATTERN = r"GPTQ.*!=\s*0"


def whole_text(pattern: str, text: str) -> int:
    return sum(1 for _ in re.finditer(pattern, text, re.MULTILINE))


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kib", type=int, nargs="+", default=[16, 64, 128])
    a = ap.parse_args()
    textmatch.matching_lines(PATTERN, "warm up the gate and the compiled pattern\n")
    whole_text(PATTERN, "warm up")
    print(f"{'line':>8}  {'re.finditer':>12}  {'textmatch':>10}  {'python only':>12}")
    for kib in a.kib:
        text = "x = 1\n" + "GPTQ" * (kib * 256) + "\nif GPTQ != 0: pass\n"
        before = timed(whole_text, PATTERN, text)
        after = timed(textmatch.matching_lines, PATTERN, text)
        gate, textmatch._gate = textmatch._gate, lambda p: None
        try:
            python_only = timed(textmatch.matching_lines, PATTERN, text)
        finally:
            textmatch._gate = gate
        print(f"{kib:>5} KiB  {before:>10.3f} s  {after:>8.4f} s  {python_only:>10.4f} s")


if __name__ == "__main__":
    main()
