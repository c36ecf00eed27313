"""watch.toml -> typed, validated objects.

Every error names the file, the table and the key, so a maintainer can fix it without reading code.
Unknown keys are errors (a typo must not silently disable a blocker). Paths inside a config are
relative to the config file's folder.

Why one file of ~900 lines: every table's typed object sits beside its validation, so each
error names file, table and key the same way; splitting by table would scatter that one rule.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, fields
from datetime import date, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

from watcher.config.signatures import BUILTIN_IDS, Signature
from watcher.core.errors import ConfigError

ITEM_KINDS = ("issue", "pull", "commits", "releases", "code")
MATCH_SCOPES = ("subject", "message")
LATEST_RELEASE = "latest-release"
RULES = ("any", "all")
ENGINES = ("sglang", "vllm", "llama.cpp", "ik_llama.cpp", "other")
BLOCKER_STATUSES = ("blocked", "fix-merged", "verified", "reproduces")
STAGES = ("startup", "probe")
DEFAULT_READY_PATH = {
    "sglang": "/health_generate",
    "vllm": "/health",
    "llama.cpp": "/health",
    "ik_llama.cpp": "/health",
    "other": "/health",
}
DEFAULT_API_URL = "https://api.github.com"
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str | int | float) -> float:
    """'30m' -> 1800.0; bare numbers are seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 30m, 6h, 14d)")
    return float(m.group(1)) * _UNITS[m.group(2)]


# ---------------------------------------------------------------- typed objects


@dataclass(frozen=True)
class Settings:
    """[watcher]: where things live and how politely to poll."""

    github_api_url: str = DEFAULT_API_URL
    data_dir: str = "data"
    site_dir: str = "site"
    interval: float = 60.0  # a quiet cycle of 304s costs no rate limit: minutes, not half-hours
    jitter: float = 10.0
    misfire_grace: float = 600.0
    stale_after: float = 3.0  # multiples of interval before the site says checks stopped
    concurrency: int = 8
    timeout: float = 20.0
    cycle_timeout: float | None = None  # the polling stage in all; None: max(60 s, 10 x timeout)
    max_rate_limit_wait: float = 120.0
    lock_timeout: float = 60.0
    user_agent: str = "watcher/0.1 (+https://github.com)"
    # every issue, pull and release item gets its own conditional read at least this often (in
    # cycles), whatever the events feed says (watcher.poll.events_feed)
    full_read_every: int = 10


@dataclass(frozen=True)
class Snooze:
    until: date
    reason: str = ""


@dataclass(frozen=True)
class Item:
    """One upstream thing: an issue, a pull request, a filtered commit stream, a release stream,
    or a code check (regexes over files of a repo at a ref)."""

    id: str
    repo: str
    kind: str
    label: str = ""
    number: int | None = None
    paths: tuple[str, ...] = ()
    # commits: paths gone at the ref on purpose (kept so older commits still match); also in
    # `paths`, but their absence is declared, so it warns nobody and `validate --online` passes
    retired_paths: tuple[str, ...] = ()
    pattern: str | None = None
    branch: str | None = None
    since: str | None = None
    require_release: bool = False
    snooze: Snooze | None = None
    match: str = "subject"  # commits: what pattern/terms see, the subject line or the whole message
    terms: tuple[str, ...] = ()  # commits: regexes that must all match (AND)
    max_pages: int | None = None  # commits: read at most this many pages per path (with a warning)
    ref: str | None = None  # code: a branch, a tag or "latest-release"; None: the default branch
    present: tuple[str, ...] = ()  # code: regexes the fixed code contains
    absent: tuple[str, ...] = ()  # code: regexes the fixed code no longer contains
    exclude: tuple[str, ...] = ()  # commits: regexes that drop a commit (subject, word-bounded)
    core: tuple[str, ...] = ()  # commits: of `paths`, those whose commits headline first
    supersede_from: tuple[str, ...] = ()  # pull: other repos whose merged PRs may supersede it

    @property
    def owner_name(self) -> tuple[str, str]:
        owner, _, name = self.repo.partition("/")
        return owner, name

    @property
    def html_url(self) -> str:
        if self.kind == "pull":
            return f"https://github.com/{self.repo}/pull/{self.number}"
        if self.kind == "issue":
            return f"https://github.com/{self.repo}/issues/{self.number}"
        if self.kind == "releases":
            return f"https://github.com/{self.repo}/releases"
        if self.kind == "code" and self.paths:
            at = self.ref if self.ref and self.ref != LATEST_RELEASE else "HEAD"
            return f"https://github.com/{self.repo}/blob/{at}/{self.paths[0]}"
        return f"https://github.com/{self.repo}/commits"


@dataclass(frozen=True)
class Override:
    status: str
    reason: str
    until: date | None = None


@dataclass(frozen=True)
class Blocker:
    """A reason the recipe cannot ship, the items whose states would clear it, and its signatures."""

    id: str
    title: str
    items: tuple[str, ...] = ()
    rule: str = "any"
    watch: tuple[str, ...] = ()  # related items shown for context; never clear the blocker
    hints: tuple[str, ...] = ()  # fixes elsewhere, shown with their evidence; never clear it
    hints_trigger_smoke: bool = False  # may a hint's change start a smoke run (opt-in)
    signatures: tuple[str, ...] = ()
    fails_at: str = "startup"
    description: str = ""
    override: Override | None = None


@dataclass(frozen=True)
class Hardware:
    gpu_name: str = "RTX 3090"
    gpu_count: int = 1
    min_memory_mib: int = 24000


@dataclass(frozen=True)
class Checks:
    prompt: str = "What is the capital of France? Answer with one word."
    expect: str = "Paris"
    max_tokens: int = 64
    min_decode_tokens_per_s: float | None = None
    min_accept_length: float | None = None
    # optional checks (watcher.smoke.checks), each named in the verdict when it runs
    tool_call: bool = False  # a `tools` request must come back with tool_calls[]
    stream_tool_call: bool = False  # the same, streamed: tool_calls in the deltas
    long_output_tokens: int | None = None  # a long answer this long must not loop (degeneracy)
    repeats: int = 3  # timed streamed generations after a warm-up one; their spread is reported
    decode_tokens: int = 128  # tokens per timed generation (EOS ignored): enough to be stable


@dataclass(frozen=True)
class Recipe:
    """A launch command for an engine plus the checks that make it 'work' on its target hardware."""

    id: str
    engine: str
    command: tuple[str, ...]
    title: str = ""
    model: str = ""
    port: int = 30000
    host_port: int | None = None
    ready_path: str = ""
    startup_timeout: float = 900.0
    stop_timeout: float = 30.0  # SIGTERM -> SIGKILL grace at teardown
    spec_decode: bool = False
    hardware: Hardware = field(default_factory=Hardware)
    checks: Checks = field(default_factory=Checks)
    blockers: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    pass_env: tuple[str, ...] = ()  # names copied from watcher's environment (HF_TOKEN)
    notes: str = ""
    compose: str | None = None  # a docker compose file (relative to the config): run `service`
    service: str | None = None
    quant: str = ""  # the matrix's row labels
    spec_method: str = ""
    # the relative verdict: run `baseline` (the guide's validated path) on the same host in the
    # same session; decode below `min_speed_vs_baseline` x its speed parks the page
    baseline: str | None = None
    min_speed_vs_baseline: float | None = None
    max_ttft_vs_baseline: float | None = None  # TTFT may be at most this many times baseline's
    compare_rounds: int = 1  # launches of each, interleaved (B R, R B, ...)
    source: Source | None = None  # where its engine builds come from (watcher bisect)


@dataclass(frozen=True)
class Source:
    """[recipe.source]: an engine's published builds, for `watcher bisect`.

    `image` + `tag` (a docker image and a tag template), or `requirement` (a pip requirement
    template, checked against `index`). Templates take {version} (a tag without a leading v),
    {tag}, {sha}, {sha8} and {date} (YYYYMMDD of the commit). `every` says which commits have a
    build: each `release` tag, each `commit`, or the last commit of each UTC `day` (nightlies).
    """

    repo: str
    every: str = "release"
    image: str | None = None
    tag: str | None = None
    requirement: str | None = None
    index: str | None = None

    def build(self, values: dict[str, str]) -> str:
        """The grid point's build: `image:tag` or the requirement, with the template filled in."""
        if self.image:
            return f"{self.image}:{fill_template(self.tag or '{tag}', values)}"
        return fill_template(self.requirement or "", values)


_TEMPLATE_KEYS = ("version", "tag", "sha", "sha8", "date")


def fill_template(template: str, values: dict[str, str]) -> str:
    out = template
    for key in _TEMPLATE_KEYS:
        out = out.replace("{" + key + "}", values.get(key, ""))
    return out


@dataclass(frozen=True)
class BisectSettings:
    """[bisect]: whether a regression (or a blocker going fix-merged) starts a bisect by itself."""

    auto: bool = False  # off by default: each bisect spends up to ceil(log2 N) + 2 runs
    repeat: int = 1  # runs per step (a performance check needs at least 3 for a verdict)
    threshold: float = 0.1  # a performance step is slow below (1 - threshold) x the good median


@dataclass(frozen=True)
class Park:
    reason: str
    until: date | None = None


@dataclass(frozen=True)
class Page:
    """A generated document and the blockers and recipes its status is made of."""

    id: str
    title: str
    output: str
    template: str = "page.md.j2"
    blockers: tuple[str, ...] = ()
    recipes: tuple[str, ...] = ()
    fragments: str | None = None  # folder of hand-written Markdown fragments
    park: Park | None = None


@dataclass(frozen=True)
class Smoke:
    """[smoke]: where recipes run and how often."""

    backend: str = "local"  # local | github-actions
    max_runs_per_day: int = 2
    validation_max_age: float = 14 * 86400.0
    repo: str | None = None  # github-actions: where the workflow lives
    workflow: str = "smoke.yml"
    ref: str = "main"
    poll_interval: float = 15.0
    dispatch_timeout: float = 3 * 3600.0


@dataclass(frozen=True)
class Notify:
    """[notify]: the tracking issue that gets the sticky status comment."""

    repo: str | None = None
    issue: int | None = None
    enabled: bool = False
    pages: tuple[str, ...] = ()
    dashboard: bool = False  # checkboxes in the sticky comment (the issue is read every cycle)


@dataclass(frozen=True)
class Site:
    """[site]: how the status site presents itself and where it links back to."""

    title: str = "watcher status"
    url: str | None = None  # where the site is published: absolute links and Atom ids
    guide_url: str | None = None  # the guide the pages belong to
    issue_url: str | None = None  # its tracking issue (default: [notify] repo and issue)

    def issue_link(self, notify: Notify) -> str | None:
        if self.issue_url:
            return self.issue_url
        if notify.repo and notify.issue:
            return f"https://github.com/{notify.repo}/issues/{notify.issue}"
        return None


@dataclass(frozen=True)
class Config:
    path: Path
    settings: Settings = field(default_factory=Settings)
    items: tuple[Item, ...] = ()
    blockers: tuple[Blocker, ...] = ()
    recipes: tuple[Recipe, ...] = ()
    pages: tuple[Page, ...] = ()
    signatures: tuple[Signature, ...] = ()
    smoke: Smoke = field(default_factory=Smoke)
    notify: Notify = field(default_factory=Notify)
    site: Site = field(default_factory=Site)
    bisect: BisectSettings = field(default_factory=BisectSettings)

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def resolve(self, relative: str) -> Path:
        p = Path(relative).expanduser()
        return p if p.is_absolute() else (self.base_dir / p)

    @property
    def data_dir(self) -> Path:
        return self.resolve(self.settings.data_dir)

    @property
    def site_dir(self) -> Path:
        return self.resolve(self.settings.site_dir)

    @property
    def db_path(self) -> Path:
        return self.data_dir / "watcher.db"

    @cached_property
    def _ids(self) -> dict[str, dict[str, Any]]:
        """id -> object per table, built once: a cycle looks up every item, so a scan is O(N²)."""
        tables = ("items", "blockers", "recipes", "pages")
        return {t: _by_id(getattr(self, t)) for t in tables}

    def item(self, item_id: str) -> Item:
        return self._ids["items"][item_id]

    def blocker(self, blocker_id: str) -> Blocker:
        return self._ids["blockers"][blocker_id]

    def recipe(self, recipe_id: str) -> Recipe:
        return self._ids["recipes"][recipe_id]

    def page(self, page_id: str) -> Page:
        return self._ids["pages"][page_id]


def _by_id(objs):
    return {o.id: o for o in objs}


# ---------------------------------------------------------------- parsing


class _Reader:
    """Reads one TOML table, checking types and rejecting unknown keys, with precise errors."""

    def __init__(self, file: Path, where: str, table: Any):
        self.file, self.where = file, where
        if not isinstance(table, dict):
            self.fail(None, f"must be a table, got {type(table).__name__}")
        self.table = table
        self.used: set[str] = set()

    def fail(self, key: str | None, msg: str):
        place = f"[{self.where}]" + (f" key '{key}'" if key else "")
        raise ConfigError(f"{self.file}: {place}: {msg}")

    def get(self, key: str, types, default=None, required: bool = False):
        self.used.add(key)
        if key not in self.table:
            if required:
                self.fail(key, "is required")
            return default
        value = self.table[key]
        if types is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        ok = isinstance(value, types) and not (isinstance(value, bool) and types in (int, float))
        if not ok:
            names = (
                types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
            )
            self.fail(key, f"must be {names}, got {type(value).__name__} {value!r}")
        return value

    def str_list(self, key: str) -> tuple[str, ...]:
        value = self.get(key, list, [])
        if not all(isinstance(v, str) for v in value):
            self.fail(key, "must be a list of strings")
        return tuple(value)

    def regex_list(self, key: str) -> tuple[str, ...]:
        """A list of regular expressions, each compiled now so a typo fails at load time."""
        value = self.str_list(key)
        for i, pattern in enumerate(value):
            try:
                re.compile(pattern)
            except re.error as e:
                self.fail(
                    key, f"entry {i + 1} ({pattern!r}) is not a valid regular expression: {e}"
                )
        return value

    def duration(self, key: str, default: float) -> float:
        value = self.get(key, (str, int, float), None)
        if value is None:
            return default
        try:
            return parse_duration(value)
        except ValueError as e:
            self.fail(key, str(e))

    def date(self, key: str) -> date | None:
        value = self.get(key, (str, date), None)
        if value is None or (isinstance(value, date) and not isinstance(value, datetime)):
            return value
        if isinstance(value, datetime):
            return value.date()
        try:
            return date.fromisoformat(value)
        except ValueError:
            self.fail(key, f"must be a date like 2026-12-31, got {value!r}")

    def choice(self, key: str, choices, default=None, required=False):
        value = self.get(key, str, default, required)
        if value is not None and value not in choices:
            self.fail(key, f"must be one of {', '.join(choices)}; got {value!r}")
        return value

    def ident(self) -> str:
        value = self.get("id", str, required=True)
        if not _ID.match(value):
            self.fail("id", f"{value!r} must be lower-case letters, digits, '.', '_' or '-'")
        return value

    def sub(self, key: str) -> _Reader | None:
        self.used.add(key)
        if key not in self.table:
            return None
        return _Reader(self.file, f"{self.where}.{key}", self.table[key])

    def done(self):
        unknown = sorted(set(self.table) - self.used)
        if unknown:
            self.fail(unknown[0], "is not a known key" + _hint(unknown[0], self.used))


def _hint(key: str, known: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(sorted(known))})"


def _settings(r: _Reader | None) -> Settings:
    if r is None:
        return Settings()
    d = Settings()
    s = Settings(
        github_api_url=r.get("github_api_url", str, d.github_api_url).rstrip("/"),
        data_dir=r.get("data_dir", str, d.data_dir),
        site_dir=r.get("site_dir", str, d.site_dir),
        interval=r.duration("interval", d.interval),
        jitter=r.duration("jitter", d.jitter),
        misfire_grace=r.duration("misfire_grace", d.misfire_grace),
        stale_after=r.get("stale_after", float, d.stale_after),
        concurrency=r.get("concurrency", int, d.concurrency),
        timeout=r.duration("timeout", d.timeout),
        cycle_timeout=r.duration("cycle_timeout", d.cycle_timeout),
        max_rate_limit_wait=r.duration("max_rate_limit_wait", d.max_rate_limit_wait),
        lock_timeout=r.duration("lock_timeout", d.lock_timeout),
        user_agent=r.get("user_agent", str, d.user_agent),
        full_read_every=r.get("full_read_every", int, d.full_read_every),
    )
    if s.full_read_every < 1:
        r.fail("full_read_every", "must be at least 1")
    if s.concurrency < 1:
        r.fail("concurrency", "must be at least 1")
    if s.interval <= 0:
        r.fail("interval", "must be positive")
    if s.cycle_timeout is not None and s.cycle_timeout <= 0:
        r.fail("cycle_timeout", "must be positive")
    r.done()
    return s


def _item(r: _Reader) -> Item:
    item_id = r.ident()
    repo = r.get("repo", str, required=True)
    if not re.match(r"^[\w.-]+/[\w.-]+$", repo):
        r.fail("repo", f"must be 'owner/name', got {repo!r}")
    kind = r.choice("kind", ITEM_KINDS, required=True)
    number = r.get("number", int)
    if kind in ("issue", "pull") and number is None:
        r.fail("number", f"is required for kind '{kind}'")
    if kind in ("commits", "releases", "code") and number is not None:
        r.fail("number", f"does not apply to kind '{kind}'")
    pattern = r.get("pattern", str)
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as e:
            r.fail("pattern", f"is not a valid regular expression: {e}")
    paths = r.str_list("paths")
    retired = r.str_list("retired_paths")
    paths += tuple(p for p in retired if p not in paths)
    terms = r.regex_list("terms")
    match = r.choice("match", MATCH_SCOPES, "subject")
    max_pages = r.get("max_pages", int)
    ref = r.get("ref", str)
    present = r.regex_list("present")
    absent = r.regex_list("absent")
    branch = r.get("branch", str)
    exclude = r.regex_list("exclude")
    core = r.str_list("core")
    supersede_from = r.str_list("supersede_from")
    for other in supersede_from:
        if not re.match(r"^[\w.-]+/[\w.-]+$", other):
            r.fail("supersede_from", f"entries must be 'owner/name', got {other!r}")
    for c in core:
        if not any(c.strip("/") == p.strip("/") or c.startswith(p) for p in paths):
            r.fail("core", f"{c!r} is not one of `paths` (or under one of them)")
    _check_kind_keys(r, kind, paths)
    if max_pages is not None and max_pages < 1:
        r.fail("max_pages", f"must be at least 1, got {max_pages}")
    if kind == "code":
        if not paths:
            r.fail("paths", "is required for kind 'code' (the files to read)")
        for p in paths:
            if p.endswith("/") or not p.strip("/"):
                r.fail("paths", f"{p!r} is a folder; a code item reads files")
        if not present and not absent:
            r.fail("present", "kind 'code' needs at least one of 'present' or 'absent'")
        if ref is not None and not ref.strip():
            r.fail("ref", "must not be empty (leave it out for the default branch)")
    snooze = None
    sr = r.sub("snooze")
    if sr is not None:
        snooze = Snooze(
            until=sr.date("until") or sr.fail("until", "is required"),
            reason=sr.get("reason", str, ""),
        )
        sr.done()
    item = Item(
        id=item_id,
        repo=repo,
        kind=kind,
        label=r.get("label", str, ""),
        number=number,
        paths=paths,
        retired_paths=retired,
        pattern=pattern,
        branch=branch,
        since=r.get("since", str),
        require_release=r.get("require_release", bool, False),
        snooze=snooze,
        match=match,
        terms=terms,
        max_pages=max_pages,
        ref=ref,
        present=present,
        absent=absent,
        exclude=exclude,
        core=core,
        supersede_from=supersede_from,
    )
    r.done()
    return item


# Keys that only some kinds understand; anything else set on another kind is an error.
_KIND_KEYS = {
    "pattern": ("commits",),
    "terms": ("commits",),
    "match": ("commits",),
    "max_pages": ("commits",),
    "branch": ("commits",),
    "paths": ("commits", "code"),
    "retired_paths": ("commits",),
    "ref": ("code",),
    "present": ("code",),
    "absent": ("code",),
    "exclude": ("commits",),
    "core": ("commits",),
    "supersede_from": ("pull",),
}


def _check_kind_keys(r: _Reader, kind: str, paths: tuple[str, ...]) -> None:
    for key, kinds in _KIND_KEYS.items():
        if key in r.table and kind not in kinds:
            allowed = " and ".join(f"'{k}'" for k in kinds)
            extra = " (code items use 'ref')" if key == "branch" and kind == "code" else ""
            r.fail(key, f"applies only to kind {allowed}{extra}")


def _override(r: _Reader) -> Override:
    o = Override(
        status=r.choice("status", BLOCKER_STATUSES, required=True),
        reason=r.get("reason", str, required=True),
        until=r.date("until"),
    )
    r.done()
    return o


def _blocker(r: _Reader) -> Blocker:
    orr = r.sub("override")
    b = Blocker(
        id=r.ident(),
        title=r.get("title", str, required=True),
        items=r.str_list("items"),
        rule=r.choice("rule", RULES, "any"),
        watch=r.str_list("watch"),
        hints=r.str_list("hints"),
        hints_trigger_smoke=r.get("hints_trigger_smoke", bool, False),
        signatures=r.str_list("signatures"),
        fails_at=r.choice("fails_at", STAGES, "startup"),
        description=r.get("description", str, ""),
        override=_override(orr) if orr else None,
    )
    r.done()
    return b


def _recipe(r: _Reader) -> Recipe:
    recipe_id = r.ident()
    engine = r.choice("engine", ENGINES, required=True)
    command = r.str_list("command")
    compose_file, service = r.get("compose", str), r.get("service", str)
    from_compose = None
    if compose_file is not None or service is not None:
        from_compose = _compose_recipe(r, command, compose_file, service)
        command = from_compose.command
    if not command:
        r.fail(
            "command",
            "must be a non-empty list of strings (an argv list, never a shell string);"
            " or give `compose` and `service` instead",
        )
    hw = Hardware()
    if from_compose is not None and from_compose.gpu_count is not None:
        hw = Hardware(gpu_count=from_compose.gpu_count)
    hr = r.sub("hardware")
    if hr is not None:
        hw = Hardware(
            gpu_name=hr.get("gpu_name", str, hw.gpu_name),
            gpu_count=hr.get("gpu_count", int, hw.gpu_count),
            min_memory_mib=hr.get("min_memory_mib", int, hw.min_memory_mib),
        )
        hr.done()
    ch = Checks()
    cr = r.sub("checks")
    if cr is not None:
        ch = Checks(
            prompt=cr.get("prompt", str, ch.prompt),
            expect=cr.get("expect", str, ch.expect),
            max_tokens=cr.get("max_tokens", int, ch.max_tokens),
            min_decode_tokens_per_s=cr.get("min_decode_tokens_per_s", float),
            min_accept_length=cr.get("min_accept_length", float),
            tool_call=cr.get("tool_call", bool, False),
            stream_tool_call=cr.get("stream_tool_call", bool, False),
            long_output_tokens=cr.get("long_output_tokens", int),
            repeats=cr.get("repeats", int, ch.repeats),
            decode_tokens=cr.get("decode_tokens", int, ch.decode_tokens),
        )
        if ch.long_output_tokens is not None and not 50 <= ch.long_output_tokens <= 32768:
            cr.fail("long_output_tokens", "must be between 50 and 32768")
        if ch.decode_tokens < 8:
            cr.fail("decode_tokens", f"must be at least 8 to time decode, got {ch.decode_tokens}")
        if ch.repeats < 1:
            cr.fail("repeats", f"must be at least 1, got {ch.repeats}")
        cr.done()
    env_r = r.sub("env")
    env: tuple[tuple[str, str], ...] = ()
    if env_r is not None:
        for k in env_r.table:
            if not _ENV_NAME.match(k):
                env_r.fail(k, "is not an environment variable name")
            env = (*env, (k, env_r.get(k, str)))
        env_r.done()
    pass_env = r.str_list("pass_env")
    for name in pass_env:
        if not _ENV_NAME.match(name):
            r.fail("pass_env", f"{name!r} is not an environment variable name")
    port = r.get("port", int, None)
    host_port = r.get("host_port", int)
    if from_compose is not None:
        port = port or from_compose.container_port
        host_port = host_port or from_compose.host_port
    port = port or 30000
    rec = Recipe(
        id=recipe_id,
        engine=engine,
        command=command,
        title=r.get("title", str, ""),
        model=r.get("model", str, ""),
        port=port,
        host_port=host_port,
        ready_path=r.get("ready_path", str, DEFAULT_READY_PATH[engine]),
        startup_timeout=r.duration("startup_timeout", 900.0),
        stop_timeout=r.duration("stop_timeout", 30.0),
        spec_decode=r.get("spec_decode", bool, False),
        hardware=hw,
        checks=ch,
        blockers=r.str_list("blockers"),
        env=env,
        pass_env=pass_env,
        notes=r.get("notes", str, ""),
        compose=compose_file,
        service=service,
        quant=r.get("quant", str, ""),
        spec_method=r.get("spec_method", str, ""),
        baseline=r.get("baseline", str),
        min_speed_vs_baseline=r.get("min_speed_vs_baseline", float),
        max_ttft_vs_baseline=r.get("max_ttft_vs_baseline", float),
        compare_rounds=r.get("compare_rounds", int, 1),
        source=_source(r.sub("source"), engine),
    )
    for key in ("min_speed_vs_baseline", "max_ttft_vs_baseline"):
        value = getattr(rec, key)
        if value is not None and value <= 0:
            r.fail(key, f"must be a positive ratio, got {value}")
        if value is not None and not rec.baseline:
            r.fail(key, "needs a 'baseline' recipe to compare with")
    if rec.compare_rounds < 1:
        r.fail("compare_rounds", f"must be at least 1, got {rec.compare_rounds}")
    r.done()
    return rec


def recipe_digest(recipe: Recipe, base_dir: Path | None = None) -> str:
    """What a run of `recipe` tested, hashed: the launch (command, or compose file + service
    and the file's bytes), the model, spec decode, hardware and checks; not its prose, timeouts
    or the host port it is probed on (a host's choice, not the recipe's substance). A result
    from a runner whose recipe hashes differently is not this recipe's."""
    import hashlib
    import json
    from dataclasses import asdict

    keep = asdict(recipe)
    for key in (
        "title",
        "notes",
        "blockers",
        "startup_timeout",
        "stop_timeout",
        "port",
        "host_port",
    ):
        keep.pop(key, None)
    if recipe.compose and base_dir is not None:
        path = Path(recipe.compose)
        path = path if path.is_absolute() else base_dir / path
        try:
            keep["compose_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            keep["compose_sha256"] = None
    text = json.dumps(keep, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _compose_recipe(r: _Reader, command, compose_file, service):
    """`compose` + `service` instead of `command`: the file is read now, so a wrong path or
    service name fails at load time with the recipe's name."""
    from watcher.config.composefile import read_service

    if command:
        r.fail("command", "a recipe has either `command` or `compose` + `service`, not both")
    if compose_file is None or service is None:
        missing = "compose" if compose_file is None else "service"
        r.fail(missing, "is required with `compose`/`service` (the file and the service to run)")
    path = Path(compose_file)
    if not path.is_absolute():
        path = r.file.parent / path
    try:
        return read_service(path, service, shown_as=compose_file)
    except ConfigError as e:
        r.fail("compose", str(e))


SOURCE_EVERY = ("release", "commit", "day")
_ENGINE_REPOS = {"sglang": "sgl-project/sglang", "vllm": "vllm-project/vllm"}


def _source(r: _Reader | None, engine: str) -> Source | None:
    if r is None:
        return None
    repo = r.get("repo", str, _ENGINE_REPOS.get(engine))
    if not repo or not re.match(r"^[\w.-]+/[\w.-]+$", repo):
        r.fail("repo", "must name the engine's GitHub repository (owner/name)")
    s = Source(
        repo=repo,
        every=r.choice("every", SOURCE_EVERY, "release"),
        image=r.get("image", str),
        tag=r.get("tag", str),
        requirement=r.get("requirement", str),
        index=r.get("index", str),
    )
    if bool(s.image) == bool(s.requirement):
        r.fail("image", "give either 'image' (with 'tag') or 'requirement', not both or neither")
    if s.tag and not s.image:
        r.fail("tag", "goes with 'image'")
    if s.index and not s.requirement:
        r.fail("index", "goes with 'requirement'")
    for key in ("tag", "requirement"):
        text = getattr(s, key) or ""
        unknown = set(re.findall(r"\{(\w+)\}", text)) - set(_TEMPLATE_KEYS)
        if unknown:
            r.fail(
                key,
                f"unknown placeholder {{{sorted(unknown)[0]}}} (known: {', '.join(_TEMPLATE_KEYS)})",
            )
    if s.every != "release" and not re.search(
        r"\{(sha|sha8)\}", (s.tag or "") + (s.requirement or "")
    ):
        r.fail(
            "every",
            f"'{s.every}' builds are named by commit: the template needs {{sha}} or {{sha8}}",
        )
    r.done()
    return s


def _bisect(r: _Reader | None) -> BisectSettings:
    if r is None:
        return BisectSettings()
    d = BisectSettings()
    b = BisectSettings(
        auto=r.get("auto", bool, d.auto),
        repeat=r.get("repeat", int, d.repeat),
        threshold=r.get("threshold", float, d.threshold),
    )
    if b.repeat < 1:
        r.fail("repeat", "must be at least 1")
    if not 0 < b.threshold < 1:
        r.fail("threshold", "must be between 0 and 1 (a fraction of the good build's speed)")
    r.done()
    return b


def _page(r: _Reader) -> Page:
    pr = r.sub("park")
    park = None
    if pr is not None:
        park = Park(reason=pr.get("reason", str, required=True), until=pr.date("until"))
        pr.done()
    p = Page(
        id=r.ident(),
        title=r.get("title", str, required=True),
        output=r.get("output", str, required=True),
        template=r.get("template", str, "page.md.j2"),
        blockers=r.str_list("blockers"),
        recipes=r.str_list("recipes"),
        fragments=r.get("fragments", str),
        park=park,
    )
    r.done()
    return p


def _signature(r: _Reader) -> Signature:
    pattern = r.get("pattern", str, required=True)
    try:
        re.compile(pattern)
    except re.error as e:
        r.fail("pattern", f"is not a valid regular expression: {e}")
    s = Signature(
        id=r.ident(),
        pattern=pattern,
        description=r.get("description", str, ""),
        kind=r.choice("kind", ("upstream", "config", "environment"), "upstream"),
    )
    r.done()
    return s


def _smoke(r: _Reader | None) -> Smoke:
    if r is None:
        return Smoke()
    d = Smoke()
    s = Smoke(
        backend=r.choice("backend", ("local", "github-actions"), d.backend),
        max_runs_per_day=r.get("max_runs_per_day", int, d.max_runs_per_day),
        validation_max_age=r.duration("validation_max_age", d.validation_max_age),
        repo=r.get("repo", str),
        workflow=r.get("workflow", str, d.workflow),
        ref=r.get("ref", str, d.ref),
        poll_interval=r.duration("poll_interval", d.poll_interval),
        dispatch_timeout=r.duration("dispatch_timeout", d.dispatch_timeout),
    )
    if s.backend == "github-actions" and not s.repo:
        r.fail("repo", "is required when backend = 'github-actions'")
    r.done()
    return s


def _notify(r: _Reader | None) -> Notify:
    if r is None:
        return Notify()
    n = Notify(
        repo=r.get("repo", str),
        issue=r.get("issue", int),
        enabled=r.get("enabled", bool, False),
        pages=r.str_list("pages"),
        dashboard=r.get("dashboard", bool, False),
    )
    if n.enabled and (not n.repo or not n.issue):
        r.fail("repo" if not n.repo else "issue", "is required when enabled = true")
    r.done()
    return n


def _site(r: _Reader | None) -> Site:
    if r is None:
        return Site()
    d = Site()
    s = Site(
        title=r.get("title", str, d.title),
        url=r.get("url", str),
        guide_url=r.get("guide_url", str),
        issue_url=r.get("issue_url", str),
    )
    for key in ("url", "guide_url", "issue_url"):
        value = getattr(s, key)
        if value is not None and not re.match(r"^https?://[^\s<>\"']+$", value):
            r.fail(key, f"must be an http(s) URL, got {value!r}")
    r.done()
    return s


def _array(file: Path, data: dict, key: str, parse) -> tuple:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{file}: [[{key}]] must be an array of tables (write [[{key}]])")
    out = []
    seen: set[str] = set()
    for i, table in enumerate(value):
        reader = _Reader(file, f"{key}[{i}]", table)
        obj = parse(reader)
        if obj.id in seen:
            reader.fail("id", f"duplicate id {obj.id!r}")
        seen.add(obj.id)
        reader.where = f"{key}.{obj.id}"
        out.append(obj)
    return tuple(out)


TOP_LEVEL = (
    "watcher",
    "item",
    "blocker",
    "recipe",
    "page",
    "signature",
    "smoke",
    "notify",
    "site",
    "bisect",
)


def parse_config(text: str, path: Path) -> Config:
    """Parse and check a config text; `path` is used for errors and to resolve relative paths."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{path}: arrays or tables are nested too deeply to read") from None
    unknown = sorted(set(data) - set(TOP_LEVEL))
    if unknown:
        raise ConfigError(
            f"{path}: top-level table '{unknown[0]}' is not known{_hint(unknown[0], set(TOP_LEVEL))}"
        )

    def table(key):
        return _Reader(path, key, data[key]) if key in data else None

    cfg = Config(
        path=path.resolve(),
        settings=_settings(table("watcher")),
        items=_array(path, data, "item", _item),
        blockers=_array(path, data, "blocker", _blocker),
        recipes=_array(path, data, "recipe", _recipe),
        pages=_array(path, data, "page", _page),
        signatures=_array(path, data, "signature", _signature),
        smoke=_smoke(table("smoke")),
        notify=_notify(table("notify")),
        site=_site(table("site")),
        bisect=_bisect(table("bisect")),
    )
    _check_references(cfg, path)
    _check_files(cfg, path)
    return cfg


def _check_references(cfg: Config, path: Path) -> None:
    """Dangling references are errors: a blocker naming a missing item would never clear."""
    items = {i.id for i in cfg.items}
    blockers = {b.id for b in cfg.blockers}
    recipes = {r.id for r in cfg.recipes}
    pages = {p.id for p in cfg.pages}
    signatures = set(BUILTIN_IDS) | {s.id for s in cfg.signatures}

    def check(where, key, names, known, what):
        for name in names:
            if name not in known:
                raise ConfigError(f"{path}: [{where}] key '{key}': no {what} with id {name!r}")

    for b in cfg.blockers:
        check(f"blocker.{b.id}", "items", b.items, items, "item")
        check(f"blocker.{b.id}", "watch", b.watch, items, "item")
        check(f"blocker.{b.id}", "hints", b.hints, items, "item")
        both = [i for i in b.hints if i in b.items]
        if both:
            raise ConfigError(
                f"{path}: [blocker.{b.id}] key 'hints': {both[0]!r} is also in 'items'; a hint"
                " never clears the blocker, so an item cannot be both"
            )
        check(f"blocker.{b.id}", "signatures", b.signatures, signatures, "signature")
    for r in cfg.recipes:
        check(f"recipe.{r.id}", "blockers", r.blockers, blockers, "blocker")
        if r.baseline:
            check(f"recipe.{r.id}", "baseline", (r.baseline,), recipes, "recipe")
            base = cfg.recipe(r.baseline)
            if base.id == r.id or base.baseline:
                raise ConfigError(
                    f"{path}: [recipe.{r.id}] key 'baseline': {base.id!r} must be another"
                    " recipe that has no baseline of its own"
                )
    for p in cfg.pages:
        check(f"page.{p.id}", "blockers", p.blockers, blockers, "blocker")
        check(f"page.{p.id}", "recipes", p.recipes, recipes, "recipe")
    check("notify", "pages", cfg.notify.pages, pages, "page")


def _check_files(cfg: Config, path: Path) -> None:
    """What watcher writes stays inside the config's folder and off what it must never replace
    (the config, the data and site folders, hand-written text); what it reads as templates and
    fragments is a regular file inside the config's folder (a symlink must not leak /etc/passwd).
    """
    base = cfg.base_dir.resolve()
    templates = base / "templates"
    keep_off = {
        "data folder ([watcher] data_dir)": cfg.data_dir.resolve(),
        "site folder ([watcher] site_dir)": cfg.site_dir.resolve(),
        "templates folder": templates.resolve(),
    }
    for p in cfg.pages:
        if p.fragments:
            keep_off[f"fragments folder of page {p.id}"] = cfg.resolve(p.fragments).resolve()

    def fail(page: Page, key: str, msg: str):
        raise ConfigError(f"{path}: [page.{page.id}] key '{key}': {msg}")

    for p in cfg.pages:
        out = cfg.resolve(p.output).resolve()
        if out == base or not out.is_relative_to(base):
            fail(
                p, "output", f"{p.output!r} is {out}, not a file inside the config's folder {base}"
            )
        if out == cfg.path.resolve():
            fail(p, "output", f"{p.output!r} is the config file itself")
        for what, folder in keep_off.items():
            if out == folder or out.is_relative_to(folder):
                fail(p, "output", f"{p.output!r} lies in the {what} {folder}")
        if out.exists() and not out.is_file():
            fail(p, "output", f"{p.output!r} exists and is not a regular file")
        if Path(p.template).is_absolute() or ".." in Path(p.template).parts:
            fail(p, "template", f"{p.template!r} must be a file name inside templates/")
        if p.fragments:
            folder = cfg.resolve(p.fragments)
            if not folder.resolve().is_relative_to(base):
                fail(p, "fragments", f"{p.fragments!r} is {folder.resolve()}, outside {base}")
            for f in sorted(folder.glob("*.md")) if folder.is_dir() else ():
                problem = _unsafe_file(f, base)
                if problem:
                    fail(p, "fragments", f"{f}: {problem}")
    if templates.is_dir():
        if not templates.resolve().is_relative_to(base):
            raise ConfigError(f"{path}: {templates} links outside the config's folder {base}")
        for f in sorted(templates.rglob("*")):
            problem = None if f.is_dir() and not f.is_symlink() else _unsafe_file(f, base)
            if problem:
                raise ConfigError(f"{path}: template {f}: {problem}")


def _unsafe_file(f: Path, base: Path) -> str | None:
    """Why `f` must not be read as a template or fragment, or None."""
    target = f.resolve()
    if not target.is_relative_to(base):
        return f"links to {target}, outside the config's folder {base}"
    if not target.is_file():
        return "is not a regular file"
    return None


def load_config(path: str | Path) -> Config:
    """Read and parse a config file; a missing file is a ConfigError that says how to make one."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{p}: no such config file (looked in {p.absolute().parent}; pass --config PATH, "
            "or run `watcher init` there to write the default one)"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read config: {e}") from None
    return parse_config(text, p)


def default_config_text() -> str:
    """The default watch list, from the wheel if installed, else from the checkout."""
    from importlib import resources

    packaged = resources.files("watcher") / "default_watch.toml"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "watch.toml").read_text(encoding="utf-8")


def as_dict(obj) -> Any:
    """Dataclass -> plain JSON-able data (for `--json` and the status document)."""
    if hasattr(obj, "__dataclass_fields__"):
        return {f.name: as_dict(getattr(obj, f.name)) for f in fields(obj) if f.name != "path"}
    if isinstance(obj, tuple | list):
        return [as_dict(v) for v in obj]
    if isinstance(obj, date | datetime):
        return obj.isoformat()
    if isinstance(obj, timedelta):
        return obj.total_seconds()
    return obj
