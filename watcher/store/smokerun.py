"""A smoke run's typed result (`SmokeResult`, its `Metrics`), and the stored record it is written as
and read back from.

Both launchers (the argv one and the compose one) fill the same `SmokeResult`, so a compose run
keeps every figure an argv run keeps. The record (`to_record`) is the document the store keeps as
the `smoke_runs` row's JSON, `watcher smoke --json` prints and a GitHub Actions run uploads; its
keys and values are exactly those the untyped document had. `from_record` reads a stored record
back leniently: an old or remote record may lack keys (read as None) or carry others (kept in
`extra`, written back unchanged); values are taken as stored, so a reader still checks what it
formats.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

# the figures every record carries, measured or not
BASE_METRICS = ("startup_s", "ttft_s", "decode_tokens_per_s", "accept_length")
# the figures the probes add once the engine was ready and probed
PROBED_METRICS = (
    "decode_spread",
    "ttft_spread",
    "decode_tokens",
    "decode_samples",
    "timing_source",
    "ttft_samples",
)


@dataclass
class Metrics:
    """What a run measured. The probed figures (spread over the repeats, their samples, tokens per
    generation, where the timing came from) are in the record only once the probes ran."""

    startup_s: float | None = None
    ttft_s: float | None = None
    decode_tokens_per_s: float | None = None
    accept_length: float | None = None
    decode_spread: dict[str, float | int] | None = None
    ttft_spread: dict[str, float | int] | None = None
    decode_tokens: int | None = None
    decode_samples: list[float] = field(default_factory=list)
    timing_source: str | None = None  # engine (its own /metrics clocks) or client
    ttft_samples: list[float] = field(default_factory=list)
    probed: bool = False  # the probes ran: the probed figures belong to the record
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know

    def to_record(self) -> dict[str, Any]:
        names = BASE_METRICS + (PROBED_METRICS if self.probed else ())
        return {**{n: getattr(self, n) for n in names}, **self.extra}

    @classmethod
    def from_record(cls, m: Any) -> Metrics:
        if not isinstance(m, dict):
            return cls()
        known = set(BASE_METRICS) | set(PROBED_METRICS)
        out = cls(
            **{n: m.get(n) for n in BASE_METRICS},
            probed=any(n in m for n in PROBED_METRICS),
            extra={k: v for k, v in m.items() if k not in known},
        )
        for n in PROBED_METRICS:
            if n in m:
                setattr(out, n, m[n])
        return out


# how a refusal before launch begins its reason (a required variable unset, no port known, the
# port taken, a compose file that cannot be read): a setup problem of the host or the recipe,
# never the engine's verdict (watcher.judge.evaluate skips it)
SETUP_PREFIX = "not launched"

# record keys written only when the run got that far (absent rather than null before)
OPTIONAL = ("recipe_digest", "launch", "image", "checks", "teardown", "exit_code", "comparison")


@dataclass
class SmokeResult:
    """One smoke run, as the runner fills it and the judge, the pages and the comments read it."""

    run_id: str
    recipe: str
    backend: str = "local"  # or github-actions
    outcome: str = "error"  # passed failed timeout error skipped started interrupted
    signature: str | None = None
    blockers_reproduced: list[str] = field(default_factory=list)
    reason: str = ""
    gpus: list[dict[str, Any]] = field(default_factory=list)
    matches_target: bool = False
    engine_version: str | None = None
    metrics: Metrics = field(default_factory=Metrics)
    stage_reached: str = "launch"
    excerpt: str | None = None
    log_path: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    host: str | None = None
    # written only once set (see OPTIONAL)
    recipe_digest: str | None = None
    launch: dict[str, Any] | None = None
    image: dict[str, Any] | None = None
    checks: list[dict[str, Any]] | None = None
    teardown: dict[str, Any] | None = None
    exit_code: int | None = None
    comparison: dict[str, Any] | None = None  # against the recipe's baseline
    baseline_runs: list[SmokeResult] = field(default_factory=list)  # stored as runs of their own
    extra: dict[str, Any] = field(default_factory=dict)  # bisect, actions_run_url, watcher, ...
    has_exit_code: bool = False  # exit_code is in the record (it may be null there)

    def set_exit_code(self, code: int | None) -> None:
        self.exit_code, self.has_exit_code = code, True

    def to_record(self, with_baselines: bool = True) -> dict[str, Any]:
        """The stored document (the baseline runs nested under `baseline_runs`, when asked)."""
        doc: dict[str, Any] = {
            "run_id": self.run_id,
            "recipe": self.recipe,
            "backend": self.backend,
            "outcome": self.outcome,
            "signature": self.signature,
            "blockers_reproduced": self.blockers_reproduced,
            "reason": self.reason,
            "hardware": {"gpus": self.gpus, "matches_target": self.matches_target},
            "engine_version": self.engine_version,
            "metrics": self.metrics.to_record(),
            "stage_reached": self.stage_reached,
            "excerpt": self.excerpt,
            "log_path": self.log_path,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "host": self.host,
        }
        for name in OPTIONAL:
            value = getattr(self, name)
            if value is not None or (name == "exit_code" and self.has_exit_code):
                doc[name] = value
        if with_baselines and self.baseline_runs:
            doc["baseline_runs"] = [b.to_record() for b in self.baseline_runs]
        doc.update(self.extra)
        return doc

    @classmethod
    def from_record(cls, doc: dict[str, Any]) -> SmokeResult:
        """A stored (or uploaded) record, read leniently: missing keys read as None."""
        hw = doc.get("hardware") if isinstance(doc.get("hardware"), dict) else {}
        core = {f.name for f in fields(cls)} - {"extra", "has_exit_code", "gpus", "matches_target"}
        base = doc.get("baseline_runs")
        return cls(
            run_id=doc.get("run_id"),  # type: ignore[arg-type]
            recipe=doc.get("recipe"),  # type: ignore[arg-type]
            backend=doc.get("backend"),  # type: ignore[arg-type]
            outcome=doc.get("outcome"),  # type: ignore[arg-type]
            signature=doc.get("signature"),
            blockers_reproduced=doc.get("blockers_reproduced") or [],
            reason=doc.get("reason"),  # type: ignore[arg-type]
            gpus=[g for g in hw.get("gpus") or [] if isinstance(g, dict)],
            matches_target=bool(hw.get("matches_target")),
            engine_version=doc.get("engine_version"),
            metrics=Metrics.from_record(doc.get("metrics")),
            stage_reached=doc.get("stage_reached"),  # type: ignore[arg-type]
            excerpt=doc.get("excerpt"),
            log_path=doc.get("log_path"),
            started_at=doc.get("started_at"),
            finished_at=doc.get("finished_at"),
            host=doc.get("host"),
            **{n: doc.get(n) for n in OPTIONAL},
            baseline_runs=[cls.from_record(b) for b in base if isinstance(b, dict)]
            if isinstance(base, list)
            else [],
            extra={k: v for k, v in doc.items() if k not in core | {"hardware"}},
            has_exit_code="exit_code" in doc,
        )

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def setup_problem(self) -> bool:
        """Refused before anything launched: says nothing about the engine."""
        return self.outcome == "error" and str(self.reason or "").startswith(SETUP_PREFIX)

    @property
    def gpu_names(self) -> list[str]:
        return [str(g.get("name", "?")) for g in self.gpus]
