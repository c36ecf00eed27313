"""What every launch shares: the launcher interface (argv or compose), probing a ready engine into the
result, and the verdict that reads the same for both.

The run sequence (`smoke.run`) asks a launcher to `prepare` (read its files, refuse a taken port),
stores the run as started, lets it `run` (launch, wait, probe through `probe_ready`, always tear
down) and judges what it saw with `verdict`; the launcher may then `finish` the reason in its own
words. Both launchers import this module and neither imports the sequence.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from watcher.config.model import Config, Recipe
from watcher.config.signatures import HANG, all_signatures
from watcher.smoke.checks import run_checks
from watcher.smoke.classify import Classifier, describe, tail
from watcher.smoke.launch import KILL_WAIT, Teardown
from watcher.smoke.probes import PORT_IN_USE, Probe, Wait, probe
from watcher.store.smokerun import Metrics, SmokeResult

FATAL_GRACE_S = 30.0  # how long a run may still become ready after logging a known failure
TEARDOWN_SLACK_S = (
    KILL_WAIT + 5.0
)  # past `stop_timeout`: reaping after SIGKILL, the log's last read


def run_bound(recipe: Recipe) -> float:
    """The most one run takes from launch to torn down: readiness with its generation check
    (`startup_timeout`), probes and checks (`probe_timeout`), teardown (`stop_timeout`, then
    SIGKILL). Each stage ends by its own deadline, so the run ends by their sum; a compose run
    adds docker's own bounds (`up` and `down`)."""
    return recipe.startup_timeout + recipe.probe_timeout + recipe.stop_timeout + TEARDOWN_SLACK_S


@dataclass
class Launched:
    """What a launch saw: how the wait ended (None: it never got that far, or the runner failed;
    the result already says why), the failed checks, the notes, and the teardown."""

    wait: Wait | None = None
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    td: Teardown = field(default_factory=Teardown)
    overran: bool = False  # ready, but the probes and checks ran past `probe_timeout`


class Launcher(Protocol):
    """One way to launch a recipe (an argv list, a compose service)."""

    def prepare(self, result: SmokeResult) -> bool:
        """Before anything runs: False when the run cannot start (the result says why)."""
        ...

    def run(self, result: SmokeResult, started: Callable[[], None]) -> Launched | None:
        """Launch, wait, probe, always tear down; `started()` once the engine's process exists.
        None when nothing was launched (the result says why; no verdict follows)."""
        ...

    def finish(self, result: SmokeResult, launched: Launched) -> None:
        """After the verdict: the launcher's own words for what it saw."""
        ...


def fill_metrics(metrics: Metrics, p: Probe) -> None:
    """Every figure the probes measured, for either launcher."""
    metrics.ttft_s = p.ttft_s
    metrics.decode_tokens_per_s = p.decode_tokens_per_s
    metrics.accept_length = p.accept_length
    metrics.decode_spread = p.decode
    metrics.ttft_spread = p.ttft
    metrics.decode_tokens = p.decode_tokens
    metrics.decode_samples = p.decode_samples
    metrics.timing_source = p.timing_source
    metrics.ttft_samples = p.ttft_samples
    metrics.probed = True


def probe_ready(base: str, recipe: Recipe, wait: Wait, result: SmokeResult) -> Launched:
    """The engine is ready at `base`: probe it and run the checks into `result`."""
    result.stage_reached = "ready"
    result.metrics.startup_s = round(wait.startup_s, 2)
    deadline = time.monotonic() + recipe.probe_timeout
    p = probe(base, recipe, deadline=deadline)
    result.checks = run_checks(base, recipe, p, deadline=deadline)
    result.engine_version = p.engine_version
    fill_metrics(result.metrics, p)
    return Launched(wait, p.failures, p.notes, overran=p.overran)


def verdict(
    cfg: Config, recipe: Recipe, result: SmokeResult, seen: Launched, log_path: Path
) -> None:
    """Outcome, reason, signature and excerpt of a launched run, from what it saw."""
    wait, failures, notes, td = seen.wait, seen.failures, seen.notes, seen.td
    finding = None
    passed = wait is not None and wait.state == "ready" and not failures
    if wait is not None and not passed and wait.state != "foreign":
        finding = Classifier(all_signatures(cfg.signatures)).scan(log_path)
    if passed:
        result.outcome, result.stage_reached = "passed", "passed"
        m = result.metrics
        parts = [f"ready in {m.startup_s:.0f} s"]
        if m.decode_tokens_per_s is not None:
            parts.append(f"decode {m.decode_tokens_per_s:.1f} tok/s")
        if m.accept_length is not None:
            parts.append(f"accept length {m.accept_length:.2f}")
        result.reason = "passed: " + ", ".join(parts) + "".join(f"; {n}" for n in notes)
    elif wait is None:
        pass  # runner error, reason already set
    elif wait.state == "fatal":
        result.outcome = "failed"
        result.reason = (
            f"logged a known failure and was still not ready {wait.startup_s:.0f} s after launch;"
            " stopped early instead of waiting out the startup timeout"
        )
    elif wait.state == "foreign":
        result.outcome, result.signature = "error", PORT_IN_USE
        result.reason = (
            f"a server answered on port {recipe.host_port or recipe.port} that is not the engine"
            " watcher launched (another process holds the port); it was not probed"
        )
    elif wait.state == "died":
        result.outcome = "failed"
        result.reason = f"exited with code {wait.exit_code} before becoming ready"
        if wait.last_error:
            result.reason += f" (its ready path answered, but {wait.last_error})"
    elif wait.state == "timeout":
        result.outcome = "timeout"
        result.reason = (
            f"not ready after {recipe.startup_timeout:.0f} s and still running "
            "(hang: neither ready nor dead by the deadline)"
        )
        if wait.last_error:
            result.reason += f"; its ready path answered, but {wait.last_error}"
        result.signature = HANG
    elif seen.overran:
        result.outcome, result.signature = "timeout", HANG
        result.reason = f"ready in {wait.startup_s:.0f} s, but " + "; ".join(failures)
    else:
        result.outcome = "failed"
        result.reason = "; ".join(failures)
    if finding is not None:
        result.signature = finding.id
        result.excerpt = finding.excerpt
        result.reason += f". {describe(finding)}"
    elif wait is not None and not passed and wait.state != "foreign":
        result.excerpt = tail(log_path)
        if result.signature is None:
            result.reason += ". No known failure signature in the log; see the excerpt"
    sig = result.signature
    if sig:
        result.blockers_reproduced = [
            b for b in recipe.blockers if sig in cfg.blocker(b).signatures
        ]
    if td.escaped:
        result.reason += (
            f". {len(td.escaped)} process(es) had left the run's session ({', '.join(td.escaped)});"
            " teardown found them all the same"
        )
    if td.leftovers:
        result.reason += f". Teardown left {', '.join(td.leftovers)} behind"
    if td.killed:
        result.reason += f". Needed SIGKILL after {recipe.stop_timeout:.0f} s"
