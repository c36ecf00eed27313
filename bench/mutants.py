"""Mutation testing by hand: realistic one-line faults, one at a time, against the tests that touch
each module. A fault the tests do not notice (a survivor) is a test that cannot fail. A fault
whose text is no longer in the checkout is listed and makes the bench exit 1: "35/35" must mean
all 35 ran.

    python bench/mutants.py --root /path/to/a/checkout [--only SUBSTRING] [--timeout 300]

Each fault replaces one exact piece of source (it must occur exactly once; otherwise it is
reported as not applicable to that checkout), runs `pytest -x -q` over the listed test files that
exist in that checkout, and restores the file. Caught: the tests failed. Survived: they passed.
The baseline (no fault) runs first over every file named: a red baseline makes every count
meaningless, so the script stops. CPU is scarce: each fault runs only its module's test files.

The first 15 faults are the survivors issue 21 lists on the main of 2026-12-01; the rest are
faults of the same kind that the tests of that main already caught.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


GITHUB_TESTS = (
    "tests/publish/test_caching.py",
    "tests/github/test_hostile_net.py",
    "tests/whole/test_hostile.py",
    "tests/poll/test_poll.py",
    "tests/poll/test_code_items.py",
    "tests/github/test_pagination_bounds.py",
    "tests/whole/test_survivors.py",
)
EVALUATE_TESTS = (
    "tests/judge/test_evaluate.py",
    "tests/judge/test_states.py",
    "tests/whole/test_survivors.py",
)
POLL_TESTS = (
    "tests/poll/test_poll.py",
    "tests/poll/test_code_items.py",
    "tests/whole/test_survivors.py",
)

MUTANTS = [
    # ---- the 15 survivors of issue 21
    Mutant(
        "github: a 304 drops the cached Link header",
        "watcher/github/client.py",
        'json.loads(cached.get("link") or "{}")',
        "{}",
        GITHUB_TESTS,
    ),
    Mutant(
        "github: a link's origin checked by string prefix",
        "watcher/github/client.py",
        "        if not same_origin(path, self.base_url):\n",
        "        if not path.startswith(self.base_url):\n",
        GITHUB_TESTS,
    ),
    Mutant(
        "evaluate: an error run on target validates",
        "watcher/judge/evaluate.py",
        'and latest[r.id].get("outcome") == "passed"',
        'and latest[r.id].get("outcome") in ("passed", "error")',
        EVALUATE_TESTS,
    ),
    Mutant(
        "evaluate: regressed not kept",
        "watcher/judge/evaluate.py",
        'if previous in ("validated", "regressed") and',
        'if previous == "validated" and',
        EVALUATE_TESTS,
    ),
    Mutant(
        "evaluate: rule all with no items is met",
        "watcher/judge/evaluate.py",
        "rule_met = bool(satisfied) and (",
        "rule_met = (",
        EVALUATE_TESTS,
    ),
    Mutant(
        "poll: any error on releases/latest falls back to tags",
        "watcher/poll/poller.py",
        "if e.status != 404:",
        "if e.status is None:",
        POLL_TESTS,
    ),
    Mutant(
        "hardware: the count gate counts every GPU",
        "watcher/smoke/hardware.py",
        "if len(fitting) >= target.gpu_count:",
        "if fitting and len(reading.gpus) >= target.gpu_count:",
        ("tests/smoke/test_hardware.py", "tests/whole/test_survivors.py"),
    ),
    Mutant(
        "classify: priority lost across blocks",
        "watcher/smoke/classify.py",
        "for i in range(best_index):",
        "for i in range(len(self._compiled)):",
        (
            "tests/smoke/test_classify.py",
            "tests/smoke/test_classify_engines.py",
            "tests/whole/test_survivors.py",
        ),
    ),
    Mutant(
        "redact: only ghp_ tokens",
        "watcher/core/redact.py",
        "gh[pousr]_",
        "ghp_",
        (
            "tests/publish/test_render.py",
            "tests/notify/test_notify_plan.py",
            "tests/whole/test_survivors.py",
        ),
    ),
    Mutant(
        "redact: user:pass@ kept",
        "watcher/core/redact.py",
        'return _USERINFO.sub("", _SECRET.sub("[redacted]", text))',
        'return _SECRET.sub("[redacted]", text)',
        (
            "tests/publish/test_render.py",
            "tests/notify/test_notify_plan.py",
            "tests/whole/test_survivors.py",
        ),
    ),
    Mutant(
        "scaffold: actions: write when only notify is on",
        "watcher/onboard/scaffold.py",
        '    if cfg.smoke.backend == "github-actions":\n        perms.append(',
        '    if cfg.smoke.backend == "github-actions" or cfg.notify.enabled:\n        perms.append(',
        ("tests/onboard/test_scaffold.py", "tests/onboard/test_scaffold_injection.py"),
    ),
    Mutant(
        "backtest: keeps the item's max_pages",
        "watcher/poll/backtest.py",
        "replayed = dataclasses.replace(item, since=_iso(self.since), max_pages=None)",
        "replayed = dataclasses.replace(item, since=_iso(self.since))",
        (
            "tests/store/test_history.py",
            "tests/poll/test_history_rules.py",
            "tests/whole/test_survivors.py",
        ),
    ),
    Mutant(
        "store: a failed transaction commits",
        "watcher/store/db.py",
        'self.db.execute("ROLLBACK")',
        'self.db.execute("COMMIT")',
        (
            "tests/store/test_store_schema.py",
            "tests/loop/test_crash.py",
            "tests/whole/test_survivors.py",
        ),
    ),
    Mutant(
        "answers: a boolean accepted as an integer",
        "watcher/github/answers.py",
        "ok = isinstance(value, spec) and not (spec is int and isinstance(value, bool))",
        "ok = isinstance(value, spec)",
        (
            "tests/whole/test_hostile.py",
            "tests/github/test_hostile_net.py",
            "tests/github/test_answer_shapes.py",
        ),
    ),
    Mutant(
        "comments: edits a comment absent from the listing",
        "watcher/github/comments.py",
        "if comment_id not in self._listed:",
        "if False:",
        (
            "tests/notify/test_notify.py",
            "tests/notify/test_hostile_comments.py",
            "tests/whole/test_survivors.py",
        ),
    ),
    # ---- faults of the same kind that main's tests caught
    Mutant(
        "github: no If-None-Match",
        "watcher/github/client.py",
        'headers["If-None-Match"] = cached["etag"]',
        "pass",
        GITHUB_TESTS,
    ),
    Mutant(
        "github: a redirect of a write is followed",
        "watcher/github/client.py",
        'if not (follow and method == "GET" and answer.status in REDIRECTS and location):',
        "if not (follow and answer.status in REDIRECTS and location):",
        GITHUB_TESTS,
    ),
    Mutant(
        "github: the size cap is not enforced",
        "watcher/github/client.py",
        "if len(body) > limit:",
        "if len(body) > limit * 1000:",
        GITHUB_TESTS,
    ),
    Mutant(
        "github: no retry of a transient error",
        "watcher/github/client.py",
        "if attempt >= self.retries or (",
        "if True or (",
        GITHUB_TESTS,
    ),
    Mutant(
        "github: a redirect off the origin is followed",
        "watcher/github/client.py",
        "            if not same_origin(url, self.base_url):\n                raise GitHubError(\n"
        '                    f"HTTP {answer.status} redirect',
        "            if False:\n                raise GitHubError(\n"
        '                    f"HTTP {answer.status} redirect',
        GITHUB_TESTS,
    ),
    Mutant(
        "poll: merged_at alone is not merged",
        "watcher/poll/poller.py",
        'if pull.get("merged") or pull.get("merged_at"):',
        'if pull.get("merged"):',
        POLL_TESTS,
    ),
    Mutant(
        "poll: terms need only one to match",
        "watcher/poll/poller.py",
        "return all(",
        "return any(",
        POLL_TESTS + ("tests/judge/test_rules.py",),
    ),
    Mutant(
        "poll: compare 'identical' is not contained",
        "watcher/poll/poller.py",
        'return data.get("status") in ("behind", "identical")',
        'return data.get("status") == "behind"',
        POLL_TESTS,
    ),
    Mutant(
        "poll: prereleases count as releases",
        "watcher/poll/poller.py",
        'if not r.get("draft") and not r.get("prerelease")',
        'if not r.get("draft")',
        POLL_TESTS,
    ),
    Mutant(
        "poll: issue state_reason ignored",
        "watcher/poll/poller.py",
        'return reason if reason in ("completed", "not_planned") else "closed"',
        'return "closed"',
        POLL_TESTS,
    ),
    Mutant(
        "evaluate: an off-target run counts",
        "watcher/judge/evaluate.py",
        'if run.get("outcome") in NO_VERDICT or not (run.get("hardware") or {}).get(',
        'if run.get("outcome") in NO_VERDICT or (run.get("hardware") or {}).get(',
        EVALUATE_TESTS,
    ),
    Mutant(
        "evaluate: an interrupted run has a verdict",
        "watcher/judge/evaluate.py",
        'NO_VERDICT = ("skipped", "started", "interrupted")',
        'NO_VERDICT = ("skipped", "started")',
        EVALUATE_TESTS,
    ),
    Mutant(
        "hardware: memory not checked",
        "watcher/smoke/hardware.py",
        "and g.memory_mib >= target.min_memory_mib",
        "and g.memory_mib >= 0",
        ("tests/smoke/test_hardware.py", "tests/whole/test_survivors.py"),
    ),
    Mutant(
        "notify_plan: a marker anywhere in the body counts",
        "watcher/notify/plan.py",
        'return comment.body.lstrip().split("\\n", 1)[0].strip() == marker',
        "return marker in comment.body",
        ("tests/notify/test_notify.py", "tests/notify/test_notify_plan.py"),
    ),
    Mutant(
        "comments: any 2xx counts as written",
        "watcher/github/comments.py",
        "if status != wanted:",
        "if status >= 300:",
        (
            "tests/notify/test_notify.py",
            "tests/notify/test_hostile_comments.py",
            "tests/whole/test_survivors.py",
        ),
    ),
    Mutant(
        "answers: no depth limit",
        "watcher/github/answers.py",
        "if depth > MAX_DEPTH:",
        "if depth > MAX_DEPTH * 1000:",
        (
            "tests/whole/test_hostile.py",
            "tests/github/test_hostile_net.py",
            "tests/github/test_answer_shapes.py",
        ),
    ),
    Mutant(
        "answers: NUL bytes kept",
        "watcher/github/answers.py",
        r'_BAD_CHARS = re.compile(r"[\x00-\x08',
        r'_BAD_CHARS = re.compile(r"[\x01-\x08',
        (
            "tests/whole/test_hostile.py",
            "tests/github/test_hostile_net.py",
            "tests/github/test_answer_shapes.py",
        ),
    ),
    Mutant(
        "store: a transaction never commits",
        "watcher/store/db.py",
        '        self.db.execute("COMMIT")\n',
        "        pass\n",
        (
            "tests/store/test_store_schema.py",
            "tests/loop/test_crash.py",
            "tests/whole/test_survivors.py",
        ),
    ),
    Mutant(
        "classify: the block overlap is dropped",
        "watcher/smoke/classify.py",
        "carry = data[keep_from:]",
        'carry = b""',
        (
            "tests/smoke/test_classify.py",
            "tests/smoke/test_classify_engines.py",
            "tests/whole/test_survivors.py",
        ),
    ),
    Mutant(
        "scaffold: the cron is on the hour",
        "watcher/onboard/scaffold.py",
        "offset = 7 % minutes",
        "offset = 0",
        ("tests/onboard/test_scaffold.py", "tests/onboard/test_scaffold_injection.py"),
    ),
    # ---- issue 32: a GPU never left held, every dispatched job settled
    Mutant(
        "launch: a second signal does not hasten the teardown",
        "watcher/smoke/launch.py",
        "if time.monotonic() >= deadline or GUARD.hurry:",
        "if time.monotonic() >= deadline:",
        ("tests/smoke/test_teardown_guard.py",),
    ),
    Mutant(
        "run: a signal during the launch is not held back",
        "watcher/smoke/run.py",
        "            GUARD.defer()  #",
        "            pass  #",
        ("tests/smoke/test_teardown_guard.py",),
    ),
    Mutant(
        "probes: a stream past the deadline reads on",
        "watcher/smoke/probes.py",
        "if deadline is not None and time.monotonic() > deadline:",
        "if False:",
        ("tests/smoke/test_teardown_guard.py",),
    ),
    Mutant(
        "run: recovery kills only what it finds again",
        "watcher/smoke/run.py",
        "same = {pid: t for pid, t in found.items() if t is not None and _start_time(pid) == t}",
        "same = {}",
        ("tests/smoke/test_teardown_guard.py",),
    ),
    Mutant(
        "dispatch: a run with no event is accepted",
        "watcher/smoke/dispatch.py",
        'if event != "workflow_dispatch":',
        'if event is not None and event != "workflow_dispatch":',
        ("tests/smoke/test_settle.py", "tests/smoke/test_trigger.py"),
    ),
    Mutant(
        "dispatch: an unreadable artifact is asked for again",
        "watcher/smoke/dispatch.py",
        'raise Unreadable(f"artifact {name} is unreadable: {e}") from None',
        'raise GitHubError(f"artifact {name} is unreadable: {e}") from None',
        ("tests/smoke/test_settle.py", "tests/smoke/test_trigger.py"),
    ),
    Mutant(
        "trigger: a skipped Actions run uses up the trigger",
        "watcher/smoke/trigger.py",
        'if doc.get("outcome") == "skipped":  # the runner found no target GPU',
        "if False:  # the runner found no target GPU",
        ("tests/smoke/test_settle.py", "tests/smoke/test_trigger.py"),
    ),
    Mutant(
        "token: watcher stays dumpable",
        "watcher/core/token.py",
        "    not_dumpable()\n",
        "",
        ("tests/core/test_token_env.py",),
    ),
    Mutant(
        "redact: a shell reference is taken for a secret",
        "watcher/core/redact.py",
        "(?!\\$)",
        "",
        ("tests/core/test_redact.py", "tests/publish/test_render.py"),
    ),
]


def run_tests(root: Path, tests: list[str], timeout: float) -> tuple[bool, float]:
    """(passed, seconds) of `pytest -x -q` over `tests` in `root`."""
    start = time.monotonic()
    try:
        r = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
            cwd=root,
            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        passed = r.returncode == 0
    except subprocess.TimeoutExpired:
        passed = False  # a fault that hangs the tests is noticed
    return passed, time.monotonic() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--only", default="", help="run only faults whose name contains this")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--no-baseline", action="store_true")
    a = ap.parse_args()
    root = a.root.resolve()
    chosen = [m for m in MUTANTS if a.only in m.name]
    if not a.no_baseline:
        every = sorted({t for m in chosen for t in m.tests if (root / t).exists()})
        ok, secs = run_tests(root, every, a.timeout * 4)
        print(
            f"baseline: {'green' if ok else 'RED'} ({len(every)} files, {secs:.0f} s)", flush=True
        )
        if not ok:
            return 2
    caught = applicable = 0
    survivors, stale = [], []
    for m in chosen:
        path = root / m.path
        original = path.read_text(encoding="utf-8")
        if original.count(m.old) != 1:
            print(f"n/a       {m.name} (the faulted text is not in this checkout once)", flush=True)
            stale.append(m.name)
            continue
        tests = [t for t in m.tests if (root / t).exists()]
        path.write_text(original.replace(m.old, m.new, 1), encoding="utf-8")
        try:
            passed, secs = run_tests(root, tests, a.timeout)
        finally:
            path.write_text(original, encoding="utf-8")
        applicable += 1
        if passed:
            survivors.append(m.name)
        else:
            caught += 1
        print(f"{'SURVIVED' if passed else 'caught  '}  {m.name} ({secs:.0f} s)", flush=True)
    print(f"\ncaught {caught} of {applicable} faults ({len(chosen)} defined)")
    for name in survivors:
        print(f"  survived: {name}")
    for name in stale:  # a count over fewer faults than defined must not read as complete
        print(f"  NOT APPLICABLE (rewrite it for this code): {name}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
