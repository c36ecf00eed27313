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
faults of the same kind that the tests of that main already caught. Those named `i32 ...` are
issue 32's set over the modules the round before it changed (`--only i32`).
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

# issue 32's set: the test files that import or drive each module
REGISTRY_TESTS = ("tests/poll/test_pins.py", "tests/poll/test_registry_faults.py")
POLL_PINS_TESTS = ("tests/poll/test_pins.py", "tests/publish/test_pins_page.py")
PIN_STATUS_TESTS = (
    "tests/judge/test_pin_rules.py",
    "tests/poll/test_pins.py",
    "tests/judge/test_pin_status.py",
    "tests/publish/test_pins_page.py",
)
COMPARE_TESTS = (
    "tests/judge/test_compare_edges.py",
    "tests/judge/test_compare_interval.py",
    "tests/judge/test_relative_verdict.py",
)
AUDIT_TESTS = (
    "tests/judge/test_audit_links.py",
    "tests/judge/test_audit.py",
    "tests/publish/test_tracker_page.py",
)
INTERPOLATE_TESTS = ("tests/config/test_interpolate.py",)
COMPOSEFILE_TESTS = (
    "tests/config/test_compose_devices.py",
    "tests/config/test_composecmd.py",
    "tests/smoke/test_compose.py",
)
SESSION_TESTS = ("tests/smoke/test_session.py",)
DISPATCH_TESTS = (
    "tests/smoke/test_settle.py",
    "tests/smoke/test_trigger.py",
    "tests/github/test_hostile_net.py",
)
SHELF_TESTS = ("tests/onboard/test_compose_scan.py",)
ADOPT_TRACKER_TESTS = (
    "tests/onboard/test_adopt_ids.py",
    "tests/onboard/test_adopt_tracker.py",
)
TRACKER_PAGE_TESTS = (
    "tests/publish/test_tracker_cell.py",
    "tests/publish/test_tracker_page.py",
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
    # ---- issue 32's round: the modules the round before changed (one-line slips of each)
    Mutant(
        "i32 registry: a redirect to another host keeps the Authorization header",
        "watcher/poll/registry.py",
        "if urlsplit(nxt).netloc != urlsplit(url).netloc:",
        "if False:",
        REGISTRY_TESTS,
    ),
    Mutant(
        "i32 registry: plain http to any host allowed",
        "watcher/poll/registry.py",
        'return parts.scheme == "http" and is_loopback(parts.hostname or "")',
        'return parts.scheme == "http"',
        REGISTRY_TESTS,
    ),
    Mutant(
        "i32 registry: a manifest that does not hash to its pinned digest accepted",
        "watcher/poll/registry.py",
        'if _DIGEST.match(ref) and "sha256:" + hashlib.sha256(body).hexdigest() != ref:',
        'if False and "sha256:" + hashlib.sha256(body).hexdigest() != ref:',
        REGISTRY_TESTS,
    ),
    Mutant(
        "i32 registry: a config blob that does not hash to its digest accepted",
        "watcher/poll/registry.py",
        'if "sha256:" + hashlib.sha256(body).hexdigest() != digest:',
        'if False and "sha256:" + hashlib.sha256(body).hexdigest() != digest:',
        REGISTRY_TESTS,
    ),
    Mutant(
        "i32 registry: a 404 on HEAD reads as present",
        "watcher/poll/registry.py",
        "return Head(False, requests=spent)",
        "return Head(True, requests=spent)",
        REGISTRY_TESTS,
    ),
    Mutant(
        "i32 registry: an index's arm64 image taken for amd64",
        "watcher/poll/registry.py",
        'if p.get("os") == "linux" and p.get("architecture") == "amd64":',
        'if p.get("os") == "linux":',
        REGISTRY_TESTS,
    ),
    Mutant(
        "i32 registry: a token realm on plain http accepted",
        "watcher/poll/registry.py",
        "if not allowed_url(realm):",
        "if False:",
        REGISTRY_TESTS,
    ),
    Mutant(
        "i32 registry: a body past its cap read on",
        "watcher/poll/registry.py",
        "if len(body) > cap:",
        "if len(body) > cap * 1000:",
        REGISTRY_TESTS,
    ),
    Mutant(
        "i32 pins: an annotated tag's own sha taken for its commit",
        "watcher/poll/pins.py",
        'if obj.get("type") == "tag":  # an annotated tag: the commit it tags',
        'if obj.get("type") == "tags":  # an annotated tag: the commit it tags',
        POLL_PINS_TESTS,
    ),
    Mutant(
        "i32 pins: a tag without its v prefix not tried",
        "watcher/poll/pins.py",
        'alt = t[1:] if t.startswith("v") else f"v{t}" if t[:1].isdigit() else None',
        "alt = None",
        POLL_PINS_TESTS,
    ),
    Mutant(
        "i32 pins: an image labelled from another repository trusted",
        "watcher/poll/pins.py",
        "if source and not same_repo(source, pin.repo):",
        "if False:",
        POLL_PINS_TESTS,
    ),
    Mutant(
        "i32 pins: github.com matched case-sensitively",
        "watcher/poll/pins.py",
        'return parts.hostname == "github.com" and path.lower() == repo.lower()',
        'return parts.hostname == "github.com" and path == repo',
        POLL_PINS_TESTS,
    ),
    Mutant(
        "i32 pins: liveness re-checked only after twice its interval",
        "watcher/poll/pins.py",
        "return checked is None or now - checked >= every",
        "return checked is None or now - checked >= 2 * every",
        POLL_PINS_TESTS,
    ),
    Mutant(
        "i32 pins: a fix from another repository compared against the pin",
        "watcher/poll/pins.py",
        "if not sha or not repo or fix_repo.lower() != repo.lower():",
        "if not sha or not repo:",
        POLL_PINS_TESTS,
    ),
    Mutant(
        "i32 judge pins: diverged read as in the pin",
        "watcher/judge/pins.py",
        'if compare_status in ("ahead", "identical"):',
        'if compare_status in ("ahead", "identical", "diverged"):',
        PIN_STATUS_TESTS,
    ),
    Mutant(
        "i32 judge pins: behind read as in the pin",
        "watcher/judge/pins.py",
        'if compare_status in ("behind", "diverged"):',
        'if compare_status in ("diverged",):',
        PIN_STATUS_TESTS,
    ),
    Mutant(
        "i32 judge pins: fix-merged held by the pin when only some fixes wait",
        "watcher/judge/pins.py",
        'if status == "fix-merged" and mine and all(f.get("state") == AWAITING_PIN for f in mine):',
        'if status == "fix-merged" and mine and any(f.get("state") == AWAITING_PIN for f in mine):',
        PIN_STATUS_TESTS,
    ),
    Mutant(
        "i32 judge pins: an unresolved pin counts as carrying the fix",
        "watcher/judge/pins.py",
        'if not (pin.get("resolved") or {}).get("sha"):',
        "if False:",
        PIN_STATUS_TESTS,
    ),
    Mutant(
        "i32 judge pins: one pin in the fix's state is enough",
        "watcher/judge/pins.py",
        "return True if all(s == IN_PIN for s in states) else None",
        "return True if any(s == IN_PIN for s in states) else None",
        PIN_STATUS_TESTS,
    ),
    Mutant(
        "i32 compare: a range touching the floor clears",
        "watcher/judge/compare.py",
        "if low >= floor:",
        "if high >= floor:",
        COMPARE_TESTS,
    ),
    Mutant(
        "i32 compare: a range ending on the floor is below",
        "watcher/judge/compare.py",
        "if high < floor:",
        "if high <= floor:",
        COMPARE_TESTS,
    ),
    Mutant(
        "i32 compare: a ttft range straddling its ceiling clears",
        "watcher/judge/compare.py",
        "return CLEARS if high <= ceiling else BELOW if low > ceiling else INSUFFICIENT",
        "return CLEARS if low <= ceiling else BELOW if low > ceiling else INSUFFICIENT",
        COMPARE_TESTS,
    ),
    Mutant(
        "i32 compare: zero samples kept in a ratio",
        "watcher/judge/compare.py",
        "a, b = [x for x in a if x > 0], [x for x in b if x > 0]",
        "a, b = [x for x in a if x >= 0], [x for x in b if x > 0]",
        COMPARE_TESTS,
    ),
    Mutant(
        "i32 compare: one pair of one sample each judged",
        "watcher/judge/compare.py",
        "if len(pairs) >= 2 or (pairs and min(len(pairs[0][0]), len(pairs[0][1])) >= 2):",
        "if len(pairs) >= 1 or (pairs and min(len(pairs[0][0]), len(pairs[0][1])) >= 2):",
        COMPARE_TESTS,
    ),
    Mutant(
        "i32 compare: the median of an even count is the upper middle",
        "watcher/judge/compare.py",
        "return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2",
        "return v[n // 2]",
        COMPARE_TESTS,
    ),
    Mutant(
        "i32 compare: one insufficient figure does not hold the verdict",
        "watcher/judge/compare.py",
        "elif any(v == INSUFFICIENT for _, v, _ in verdicts):",
        "elif all(v == INSUFFICIENT for _, v, _ in verdicts):",
        COMPARE_TESTS,
    ),
    Mutant(
        "i32 audit: an item in another repository matches a link",
        "watcher/judge/audit.py",
        "if item.repo.lower() != link.repo.lower():",
        "if False:",
        AUDIT_TESTS,
    ),
    Mutant(
        "i32 audit: a short sha prefix does not match",
        "watcher/judge/audit.py",
        "return a.startswith(b) or b.startswith(a)",
        "return a.startswith(b)",
        AUDIT_TESTS,
    ),
    Mutant(
        "i32 audit: a closed PR superseded by a merged one reads closed",
        "watcher/judge/audit.py",
        'if state == "closed" and row.get("superseded_state") == "merged":',
        'if state == "closed" and row.get("superseded_state") == "merge":',
        AUDIT_TESTS,
    ),
    Mutant(
        "i32 audit: a closed-by-author issue reads resolved",
        "watcher/judge/audit.py",
        'return "closed", f"closed by its author, nothing merged {_day(row.get(\'updated_at\'))}"',
        'return "resolved", f"closed by its author, nothing merged {_day(row.get(\'updated_at\'))}"',
        AUDIT_TESTS,
    ),
    Mutant(
        "i32 audit: the row's side is its weakest link",
        "watcher/judge/audit.py",
        'ra.side = max((ls.side for ls in ra.links), key=SIDES.index, default="unread")',
        'ra.side = min((ls.side for ls in ra.links), key=SIDES.index, default="unread")',
        AUDIT_TESTS,
    ),
    Mutant(
        "i32 interpolate: ${X:-d} keeps an empty X",
        "watcher/config/interpolate.py",
        'missing = value is None or (op.startswith(":") and value == "")',
        "missing = value is None",
        INTERPOLATE_TESTS,
    ),
    Mutant(
        "i32 interpolate: ${X-d} treats an empty X as unset",
        "watcher/config/interpolate.py",
        'missing = value is None or (op.startswith(":") and value == "")',
        'missing = value is None or (value == "")',
        INTERPOLATE_TESTS,
    ),
    Mutant(
        "i32 interpolate: $$ read as a variable",
        "watcher/config/interpolate.py",
        'if nxt == "$":',
        'if nxt == "$$":',
        INTERPOLATE_TESTS,
    ),
    Mutant(
        "i32 interpolate: ${X:+alt} gives alt when X is unset",
        "watcher/config/interpolate.py",
        'return "" if missing else substitute(arg, environ, seen)',
        'return "" if not missing else substitute(arg, environ, seen)',
        INTERPOLATE_TESTS,
    ),
    Mutant(
        "i32 composefile: ip:published:target read as published:target",
        "watcher/config/composefile.py",
        "if len(parts) == 3:  # ip:published:target (an IPv6 ip keeps its own colons)",
        "if len(parts) == 4:  # ip:published:target (an IPv6 ip keeps its own colons)",
        COMPOSEFILE_TESTS,
    ),
    Mutant(
        "i32 composefile: a non-GPU device counted as a GPU",
        "watcher/config/composefile.py",
        'if caps and "gpu" not in caps and d.get("driver") != "nvidia":',
        "if False:",
        COMPOSEFILE_TESTS,
    ),
    Mutant(
        "i32 composefile: count -1 not read as all GPUs",
        "watcher/config/composefile.py",
        'elif str(d.get("count", "all")).lower() == "all" or str(d.get("count")) == "-1":',
        'elif str(d.get("count", "all")).lower() == "all":',
        COMPOSEFILE_TESTS,
    ),
    Mutant(
        "i32 session: a round's order never alternates",
        "watcher/smoke/session.py",
        "out += [(i, r) for r in (seq if i % 2 == 0 else seq[::-1])]",
        "out += [(i, r) for r in seq]",
        SESSION_TESTS,
    ),
    Mutant(
        "i32 session: a compare over budget still chosen",
        "watcher/smoke/session.py",
        "if cost <= left:",
        "if cost <= left + 1:",
        SESSION_TESTS,
    ),
    Mutant(
        "i32 session: the baseline's cost counts once per compare",
        "watcher/smoke/session.py",
        "return 2 * recipe.compare_rounds if recipe.baseline else 1",
        "return recipe.compare_rounds if recipe.baseline else 1",
        SESSION_TESTS,
    ),
    Mutant(
        "i32 dispatch: a run for another recipe accepted",
        "watcher/smoke/dispatch.py",
        'if doc.get("recipe") != recipe.id:',
        "if False:",
        DISPATCH_TESTS,
    ),
    Mutant(
        "i32 dispatch: a run not yet completed settled",
        "watcher/smoke/dispatch.py",
        'if run.get("status") != "completed":',
        'if run.get("status") == "queued":',
        DISPATCH_TESTS,
    ),
    Mutant(
        "i32 dispatch: a run started by a push accepted",
        "watcher/smoke/dispatch.py",
        'if event != "workflow_dispatch":',
        "if False:",
        DISPATCH_TESTS,
    ),
    Mutant(
        "i32 shelf: a non-live recipe not marked",
        "watcher/onboard/shelf.py",
        "if status in NOT_LIVE:",
        "if False:",
        SHELF_TESTS,
    ),
    Mutant(
        "i32 shelf: a one-engine file's service named in the id",
        "watcher/onboard/shelf.py",
        "if len(found) > 1:  # two engines in one file: the service tells them apart",
        "if len(found) > 0:  # two engines in one file: the service tells them apart",
        SHELF_TESTS,
    ),
    Mutant(
        "i32 adopt tracker: a commit link keyed by its number",
        "watcher/onboard/adopt_tracker.py",
        'key = (link.repo.lower(), link.number if link.kind != "commit" else link.ref)',
        "key = (link.repo.lower(), link.number)",
        ADOPT_TRACKER_TESTS,
    ),
    Mutant(
        "i32 adopt tracker: a taken id reused",
        "watcher/onboard/adopt_tracker.py",
        "if ident not in taken:",
        "if True:",
        ADOPT_TRACKER_TESTS,
    ),
    Mutant(
        "i32 tracker page: a CRLF file loses its CR",
        "watcher/publish/tracker.py",
        'end = "\\r" if line.endswith("\\r") else ""  # a CRLF file stays CRLF',
        'end = ""  # a CRLF file stays CRLF',
        TRACKER_PAGE_TESTS,
    ),
    Mutant(
        "i32 tracker page: a stale read not marked",
        "watcher/publish/tracker.py",
        'stale = " (last known; the latest read failed)" if ls.stale else ""',
        'stale = " (last known; the latest read failed)" if not ls.stale else ""',
        TRACKER_PAGE_TESTS,
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
