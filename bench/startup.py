"""Start-up and work done once per process, each measured side by side in one run.

    python bench/startup.py [--repeat 5]

1. Import time of each command in a fresh process (`python -X importtime`: the sum of the
   top-level imports, start-up of the interpreter itself excluded), the whole process's wall
   and CPU time, on the shipped watch.toml in a temporary folder. Heavy libraries each loads.
2. Templates: rendering the site's item template with a new jinja2 Environment per call (before)
   against the process's cached one (after).
3. Config lookups at 1,000 items: `Config.item` through the index built once (after) against
   a dict rebuilt on every lookup (before).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEAVY = ("github", "httpx", "jinja2", "markdown", "sqlite_utils", "apscheduler")
COMMANDS = (["--help"], ["validate"], ["status"], ["explain"], ["check-now", "--offline"])


def spread(values: list[float], unit: float = 1e3, fmt: str = "{:.0f}") -> str:
    med, lo, hi = statistics.median(values), min(values), max(values)
    return f"{fmt.format(med * unit)} ({fmt.format(lo * unit)}–{fmt.format(hi * unit)})"


def import_run(args: list[str], cwd: Path) -> tuple[float, float, float, set[str]]:
    """(seconds importing, seconds of the whole process, its CPU seconds, heavy packages).

    On a shared machine the wall times include waiting for a core; CPU time does not.
    """
    t = time.perf_counter()
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "watcher", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = now.ru_utime - cpu.ru_utime + now.ru_stime - cpu.ru_stime
    if proc.returncode:
        raise SystemExit(f"watcher {' '.join(args)}: {proc.stderr[-500:]}")
    total, heavy = 0, set()
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if not cumulative.strip().isdigit():
            continue  # the header line
        if not name.startswith("  "):  # a top-level import: its time includes its children
            total += int(cumulative)
        top = name.strip().split(".")[0]
        if top in HEAVY:
            heavy.add(top)
    return total / 1e6, wall, cpu_s, heavy


def startup(repeat: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="watcher-bench-startup-"))
    try:
        shutil.copy(ROOT / "watch.toml", tmp / "watch.toml")
        subprocess.run(
            [sys.executable, "-m", "watcher", "check-now", "--offline"],
            cwd=tmp,
            capture_output=True,
            check=True,
        )  # a store and a site to read
        print(f"1. start-up, fresh process each, median (min–max) of {repeat} runs, ms")
        print(
            f"  {'command':<20} {'imports':>15} {'whole process':>16} {'its CPU time':>15}"
            "  heavy modules loaded"
        )
        for args in COMMANDS:
            runs = [import_run(args, tmp) for _ in range(repeat)]
            imports, walls, cpus = ([r[k] for r in runs] for k in range(3))
            heavy = ", ".join(sorted(runs[0][3])) or "none"
            print(
                f"  {' '.join(args):<20} {spread(imports):>15} {spread(walls):>16}"
                f" {spread(cpus):>15}  {heavy}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def templates(repeat: int) -> None:
    import jinja2

    from watcher.config.load import load_config
    from watcher.publish import page as render

    cfg = load_config(ROOT / "watch.toml")
    item = dict(label="x", title="t", kind_word="issue", repo="o/r", number=1, url="#")
    item.update(checked_at=None, changed_at=None, error=None, moved_to=None, snoozed_until=None)
    ctx = dict(item=item, history=[], commits=[], item_events=[], root="../", pages=[])

    def once(env: jinja2.Environment) -> None:
        env.filters["href"] = str
        env.globals["css"] = ""
        try:
            env.get_template("site/item.html.j2").render(**ctx)
        except jinja2.UndefinedError:
            pass  # the site passes more context; compiling is what is measured here

    before, after = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        once(render._new_environment([str(render.package_templates())]))
        before.append(time.perf_counter() - t)
        t = time.perf_counter()
        once(render.environment(cfg))
        after.append(time.perf_counter() - t)
    print(f"\n2. site item template, one render, ms, median (min–max) of {repeat}")
    print(f"  new Environment per call (before) {spread(before, fmt='{:.2f}')}")
    print(f"  the process's Environment (after) {spread(after[1:] or after, fmt='{:.2f}')}")


def lookups(repeat: int) -> None:
    from watcher.config.load import parse_config
    from watcher.config.model import by_id

    n = 1000
    text = "".join(
        f'[[item]]\nid = "i{k}"\nrepo = "o/r"\nkind = "issue"\nnumber = {k}\n\n'
        for k in range(1, n + 1)
    )
    cfg = parse_config(text, ROOT / "watch.toml")
    ids = [i.id for i in cfg.items]
    before, after = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        for i in ids[:100]:
            by_id(cfg.items)[i]
        before.append((time.perf_counter() - t) / 100)
        t = time.perf_counter()
        for i in ids:
            cfg.item(i)
        after.append((time.perf_counter() - t) / n)
    print(f"\n3. Config.item at {n} items, µs per lookup, median (min–max) of {repeat}")
    print(f"  dict rebuilt per lookup (before) {spread(before, unit=1e6, fmt='{:.2f}')}")
    print(f"  index built once (after)         {spread(after, unit=1e6, fmt='{:.3f}')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    startup(args.repeat)
    templates(args.repeat)
    lookups(args.repeat)


if __name__ == "__main__":
    main()
