"""`watcher serve`: the same cycle as `check-now`, on a schedule, for months without anyone looking.

APScheduler 3 (BackgroundScheduler, one worker thread) fires the cycle every `[watcher] interval`
plus up to `jitter`; `max_instances=1` and `coalesce=True` mean a slow cycle or a suspended machine
never stacks cycles up, and `misfire_grace` bounds how late a cycle may still start. The main thread
only waits for a signal: SIGTERM/SIGINT let the running cycle finish, then serve exits 0.

Every cycle takes the data folder's lock (watcher.lock), so serve and a manual `check-now` never
overlap. A heartbeat row (table `heartbeats`, name "serve") says who runs, when it beat and when it
checks next; with the cycles table it lets `watcher status` and the site say when checks stopped.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from watcher.config.model import Config
from watcher.core.clock import iso, parse_iso, utcnow
from watcher.core.errors import LockBusy, WatcherError
from watcher.judge import fresh
from watcher.loop.lock import cycle_lock
from watcher.store.db import Store

if TYPE_CHECKING:  # `watcher status` reads freshness from here without loading a cycle's modules
    from watcher.loop.cycle import CycleReport

log = logging.getLogger("watcher")

HEARTBEAT = "serve"
CLOCK_CHECK_S = 5.0  # how often serve compares the wall clock with the monotonic one
CLOCK_JUMP_S = 30.0  # a difference this large is a clock step (NTP slews far less)
CycleFn = Callable[..., "CycleReport"]  # None where one is asked for: cycle.run_cycle


def locked_cycle(
    cfg: Config,
    command: str,
    *,
    stop: threading.Event | None = None,
    cycle: CycleFn | None = None,
    **kwargs: Any,
) -> CycleReport:
    """One cycle under the data folder's lock: what `check-now` and every `serve` tick run.

    First, smoke runs a killed watcher left `started` are torn down and marked `interrupted`.
    """
    if cycle is None:
        from watcher.loop.cycle import run_cycle as cycle
    with cycle_lock(cfg.data_dir, cfg.settings.lock_timeout, command, stop=stop):
        recover_smoke_runs(cfg)
        return cycle(cfg, **kwargs)


def recover_smoke_runs(cfg: Config) -> None:
    """Never stops the cycle: a failure here is logged, and tried again next time.

    watcher.smoke.run (and the httpx it needs) loads only when some run is still marked `started`;
    asking SQL for one such row spares decoding every run the database ever kept.
    """
    try:
        store = Store(cfg.db_path)
        try:
            started = "SELECT 1 FROM smoke_runs WHERE outcome = 'started' LIMIT 1"
            if store.db.execute(started).fetchone():
                from watcher.smoke.run import recover_interrupted

                recover_interrupted(cfg, store)
        finally:
            store.close()
    except Exception as e:  # noqa: BLE001 (the cycle matters more than the clean-up)
        log.warning("could not check for interrupted smoke runs: %s", e)


class Service:
    """The scheduler loop. `run()` returns the exit code."""

    def __init__(self, cfg: Config, *, once: bool = False, cycle: CycleFn | None = None):
        self.cfg = cfg
        self.once = once
        self.cycle = cycle
        self.stop = threading.Event()
        self.cycles = 0
        self.failures = 0
        self.started_at = iso(utcnow())
        self._stop_reason = "finished"
        self._scheduler = None
        # APScheduler's shutdown() holds its job-store lock while it waits for the running cycle,
        # and get_job() takes that lock: a cycle must not ask after shutdown began (deadlock).
        self._scheduler_guard = threading.Lock()
        self._shutting_down = False
        self.wall, self.mono = time.time, time.monotonic  # clocks (tests step the wall clock)

    # ---------------------------------------------------------------- signals

    def _on_signal(self, signum: int, _frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.stop.is_set():
            log.warning("%s again: still finishing the current cycle (SIGKILL aborts it)", name)
            return
        self._stop_reason = name
        log.info("%s: stopping after the current cycle", name)
        self.stop.set()

    def _install_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        return {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}

    # ---------------------------------------------------------------- the loop

    def run(self) -> int:
        previous = self._install_signals()
        try:
            if self.once:
                return self._run_once()
            return self._run_scheduled()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _run_once(self) -> int:
        """One cycle, then exit. Leaves the heartbeat alone: it belongs to a long-running serve."""
        report = locked_cycle(self.cfg, "serve --once", cycle=self.cycle)
        self.cycles += 1
        self._log_report(report, None)
        return 0

    def build_scheduler(self):
        """The APScheduler setup, not started: one worker, one job, the first run now."""
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler
        from apscheduler.triggers.interval import IntervalTrigger

        s = self.cfg.settings
        scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max_workers=1)}, timezone=UTC
        )
        scheduler.add_job(
            self._tick,
            IntervalTrigger(seconds=s.interval, jitter=s.jitter or None, timezone=UTC),
            id="cycle",
            name="watcher cycle",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, math.ceil(s.misfire_grace)),
            next_run_time=datetime.now(UTC),  # the first cycle runs at once
        )
        return scheduler

    def _run_scheduled(self) -> int:
        s = self.cfg.settings
        scheduler = self.build_scheduler()
        self._scheduler = scheduler
        self._beat(
            pid=os.getpid(),
            host=socket.gethostname(),
            started_at=self.started_at,
            beat_at=self.started_at,
            interval_s=s.interval,
            cycles=0,
            next_run_at=self.started_at,
            stopped_at=None,
            stop_reason=None,
        )
        log.info(
            "serving %s: a cycle every %s (+ up to %s jitter); SIGTERM or Ctrl-C stops",
            self.cfg.path,
            _human(s.interval),
            _human(s.jitter),
        )
        scheduler.start()
        try:
            self._watch_the_clock()
        finally:
            with self._scheduler_guard:
                self._shutting_down = True
            scheduler.shutdown(wait=True)  # lets a running cycle finish; starts no new one
            stopped = iso(utcnow())
            self._beat(
                beat_at=stopped, next_run_at=None, stopped_at=stopped, stop_reason=self._stop_reason
            )
            log.info("stopped after %s (%d failed)", _count(self.cycles, "cycle"), self.failures)
        return 0

    def _watch_the_clock(self) -> None:
        """Wait for a stop signal; meanwhile keep the interval a monotonic one.

        APScheduler plans in wall-clock time: a clock stepped back by an hour would delay the
        next cycle by an hour (and `status` would say checks stopped), one stepped forward would
        count the cycle as missed. A jump moves the next run by the same amount.
        """
        last_wall, last_mono = self.wall(), self.mono()
        while not self.stop.wait(CLOCK_CHECK_S):
            wall, mono = self.wall(), self.mono()
            jump = (wall - last_wall) - (mono - last_mono)
            last_wall, last_mono = wall, mono
            if abs(jump) >= CLOCK_JUMP_S:
                self.clock_jumped(jump)

    def clock_jumped(self, jump: float) -> None:
        """The wall clock moved `jump` seconds more than time passed: move the next run with it."""
        with self._scheduler_guard:
            if self._shutting_down or self._scheduler is None:
                return
            job = self._scheduler.get_job("cycle")
            if job is None or job.next_run_time is None:
                return
            when = job.next_run_time + timedelta(seconds=jump)
            job.modify(next_run_time=when)
        log.warning(
            "the system clock moved %+.0f s; the next cycle moves with it, to %s", jump, iso(when)
        )

    def _tick(self) -> None:
        """One scheduled cycle. Nothing a cycle raises may stop the service."""
        if self.stop.is_set():
            return
        report = None
        try:
            report = locked_cycle(self.cfg, "serve", stop=self.stop, cycle=self.cycle)
            self.cycles += 1
        except LockBusy as e:
            log.warning("skipped this cycle: %s", e)
        except WatcherError as e:
            self.failures += 1
            log.error("cycle failed: %s", e)
        except Exception:
            self.failures += 1
            log.exception("cycle failed with an unexpected error; serve keeps running")
        if report is not None:
            self.honour_poll_interval((report.stats or {}).get("poll_interval"))
        next_run = self._next_run()
        if report is not None:
            self._log_report(report, next_run)
        try:
            self._beat(beat_at=iso(utcnow()), next_run_at=next_run, cycles=self.cycles)
        except WatcherError as e:
            log.error("could not store the heartbeat: %s", e)

    def honour_poll_interval(self, seconds: float | None) -> None:
        """GitHub's `X-Poll-Interval` (the events feed sends it) asks for more time than the
        interval: the next cycle waits that long after this one, however short `interval` is."""
        if not seconds or seconds <= self.cfg.settings.interval:
            return
        with self._scheduler_guard:
            if self._shutting_down or self._scheduler is None:
                return
            job = self._scheduler.get_job("cycle")
            if job is None or job.next_run_time is None:
                return
            when = datetime.now(UTC) + timedelta(seconds=seconds)
            if when > job.next_run_time:
                job.modify(next_run_time=when)
                log.info(
                    "GitHub asked to poll at most every %s; next cycle at %s",
                    _human(seconds),
                    iso(when),
                )

    def _next_run(self) -> str | None:
        with self._scheduler_guard:
            if self._shutting_down or self._scheduler is None:
                return None
            job = self._scheduler.get_job("cycle")
        when = getattr(job, "next_run_time", None)
        return iso(when) if when else None

    def _log_report(self, report: CycleReport, next_run: str | None) -> None:
        line = report.summary()
        if next_run:
            line += f"; next at {next_run}"
        for item_id, err in sorted(report.item_errors.items()):
            log.warning("%s: %s (kept its last known state, marked stale)", item_id, err)
        if report.site_error:
            log.error("status site not rebuilt (the previous one stays): %s", report.site_error)
        log.info(line)

    def _beat(self, **fields: Any) -> None:
        store = Store(self.cfg.db_path)
        try:
            store.beat(HEARTBEAT, **fields)
        finally:
            store.close()


def serve(cfg: Config, *, once: bool = False, cycle: CycleFn | None = None) -> int:
    return Service(cfg, once=once, cycle=cycle).run()


# -------------------------------------------------------------------- freshness


def freshness(
    cfg: Config,
    last_cycle: dict[str, Any] | None,
    heartbeat: dict[str, Any] | None,
    now: datetime,
) -> dict[str, Any]:
    """When did checks last finish, and have they stopped? (`watcher status`.)

    judge.fresh's rule on the last polling cycle's end; before the first one, checks count as
    stopped here (status warns to run one), and whether `serve` still runs is added.
    """
    f = fresh.freshness(cfg, (last_cycle or {}).get("finished_at"), now)
    out: dict[str, Any] = {
        "last_checked": f.last_checked,
        "age_s": round(f.age_s) if f.age_s is not None else None,
        "interval_s": cfg.settings.interval,
        "stale_after_s": f.stale_after_s,
        "stale_at": f.stale_at,
        "stale": f.age_s is None or f.stale,
        "serve": None,
    }
    if heartbeat:
        out["serve"] = {
            k: heartbeat.get(k)
            for k in (
                "pid",
                "host",
                "started_at",
                "beat_at",
                "next_run_at",
                "cycles",
                "stopped_at",
                "stop_reason",
            )
        }
        stopped = heartbeat.get("stopped_at") is not None
        # A SIGKILLed or crashed serve never writes stopped_at; on its own host we can tell.
        gone = (
            not stopped
            and heartbeat.get("host") == socket.gethostname()
            and not _pid_alive(heartbeat.get("pid"))
        )
        out["serve"]["running"] = not stopped and not gone
        out["serve"]["gone"] = gone
    return out


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


def freshness_lines(f: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(lines for stdout, warnings for stderr) that `watcher status` prints."""
    lines, warnings = [], []
    if f["last_checked"] is None:
        lines.append("last checked: never")
        warnings.append("no polling cycle has finished yet: run `watcher check-now`")
    else:
        lines.append(f"last checked: {f['last_checked']} ({_human(f['age_s'])} ago)")
        if f["stale"]:
            warnings.append(
                f"checks have stopped? the last cycle finished {_human(f['age_s'])} ago, more than "
                f"{_human(f['stale_after_s'])} ({f['stale_after_s'] / f['interval_s']:g} x the "
                f"{_human(f['interval_s'])} interval). Is `watcher serve`, the timer or the "
                "scheduled workflow still running?"
            )
    sv = f.get("serve")
    if sv:
        if sv["running"]:
            lines.append(
                f"serve: pid {sv['pid']} on {sv['host']} since {sv['started_at']}, "
                f"{_count(sv['cycles'], 'cycle')}, last beat {sv['beat_at']}, "
                f"next check {sv['next_run_at'] or 'not scheduled'}"
            )
        elif sv.get("gone"):
            lines.append(
                f"serve: pid {sv['pid']} is gone without stopping (killed or crashed?); "
                f"last beat {sv['beat_at']}"
            )
        else:
            lines.append(
                f"serve: stopped at {sv['stopped_at']} ({sv['stop_reason'] or 'unknown'}) "
                f"after {_count(sv['cycles'], 'cycle')}"
            )
    return lines, warnings


def read_lines(
    last_read: str | None, attempt: dict[str, Any], now: datetime
) -> tuple[list[str], list[str]]:
    """(lines, warnings) that keep the last successful read apart from the last attempt.

    `last_read` and `attempt` are what status.json calls `last_successful_read` and
    `last_attempt`: a cycle that asked GitHub and read nothing is an attempt, not a read.
    """

    def when(stamp: str | None) -> str:
        seen = parse_iso(stamp)
        if seen is None:
            return "never"
        return f"{iso(seen)} ({_human(round(max(0.0, (now - seen).total_seconds())))} ago)"

    lines = [f"last successful read: {when(last_read)}"]
    warnings = []
    if attempt.get("at"):
        failed = attempt.get("failed")
        lines.append(
            f"last attempt: {when(attempt['at'])}" + (", every read failed" if failed else "")
        )
        if failed:
            warnings.append(
                "the last attempt read nothing from GitHub (every read failed): pages show the "
                "last successful read, marked stale; see `watcher check-now` for the errors"
            )
    else:
        lines.append("last attempt: never")
    return lines, warnings


def _count(n: int | None, noun: str) -> str:
    n = n or 0
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _human(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = float(seconds)
    if seconds < 90:
        return f"{seconds:g} s" if seconds != int(seconds) else f"{int(seconds)} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
