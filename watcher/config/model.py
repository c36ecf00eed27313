"""watch.toml's typed objects: settings, items, blockers, recipes, pages and the rest, with
their defaults, the names a table's choices come from, and the hash of what a recipe tests.

Reading them from a file, with errors that name the key and the file, is `watcher.config.load`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import date, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

from watcher.config.signatures import Signature

ITEM_KINDS = ("issue", "pull", "commits", "releases", "code", "commit", "discussion")
MATCH_SCOPES = ("subject", "message")
LATEST_RELEASE = "latest-release"
RULES = ("any", "all")
# The guide runs forks as engines of their own (their own pins and pages): beellama and
# llamacpp-club3090 (llama.cpp forks), vllm-omni and vllm-lmcache (vLLM builds).
ENGINES = (
    "sglang", "vllm", "llama.cpp", "ik_llama.cpp",
    "beellama", "llamacpp-club3090", "vllm-omni", "vllm-lmcache", "other",
)  # fmt: skip
BLOCKER_STATUSES = ("blocked", "fix-merged", "verified", "reproduces")
STAGES = ("startup", "probe")
DEFAULT_READY_PATH = {
    "sglang": "/health_generate",
    "vllm": "/health",
    "llama.cpp": "/health",
    "ik_llama.cpp": "/health",
    "beellama": "/health",
    "llamacpp-club3090": "/health",
    "vllm-omni": "/health",
    "vllm-lmcache": "/health",
    "other": "/health",
}
DEFAULT_API_URL = "https://api.github.com"


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
    a code check (regexes over files of a repo at a ref), one commit (its first release), or a
    discussion (read through GraphQL)."""

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
    core: tuple[str, ...] = ()  # commits: of `paths`, shown as a reason only (no longer ranks)
    prefer: tuple[str, ...] = ()  # commits: subject words of what the recipe runs (rank first)
    demote: tuple[str, ...] = ()  # commits: subject words of what it does not use (rank last)
    supersede_from: tuple[str, ...] = ()  # pull: other repos whose merged PRs may supersede it
    sha: str | None = None  # commit: the commit (7 to 40 hex digits, as the link gives it)

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
        if self.kind == "commit":
            return f"https://github.com/{self.repo}/commit/{self.sha}"
        if self.kind == "discussion":
            return f"https://github.com/{self.repo}/discussions/{self.number}"
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
    probe_timeout: float = 600.0  # the probes and checks together, once the engine is ready
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
    # baselines for a smaller rig, tried in order where `baseline` needs more GPUs than the host
    # has (watcher.smoke.session.pick_baseline): a one-GPU recipe is compared on one GPU too
    rig_baselines: tuple[str, ...] = ()
    # who starts its first GPU run: `auto` (a cycle's trigger) or `manual` (`watcher smoke ID`);
    # unset: `auto` once it names blockers (their fix is what it waits for), else `manual`
    first_run: str | None = None

    @property
    def first_run_manual(self) -> bool:
        """Its first GPU run waits for the maintainer: a proposal is not a verdict."""
        return (self.first_run or ("auto" if self.blockers else "manual")) == "manual"

    source: Source | None = None  # where its engine builds come from (watcher bisect)
    image_written: str = ""  # its compose service's image (variables filled where knowable)
    # the image a compose service runs instead of its own, through an override file: set only by
    # the pin-bump gate (watcher bump), never read from watch.toml; the compose file is not edited
    image_override: str = ""


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


TEMPLATE_KEYS = ("version", "tag", "sha", "sha8", "date")


def fill_template(template: str, values: dict[str, str]) -> str:
    out = template
    for key in TEMPLATE_KEYS:
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
    since: date | None = None  # when the maintainers parked it (adopted from the page's own line)


# the statuses a maintainer may give a page by hand ([page.override]); parked is [page.park]'s
PAGE_OVERRIDE_STATUSES = ("blocked", "ready-to-test", "validated")


@dataclass(frozen=True)
class PageOverride:
    """[page.override]: the maintainers' word on a page's status (a hand-kept page's own dated
    "Status: validated"), shown as theirs; watcher's evidence is still gathered and shown beside it."""

    status: str
    reason: str
    since: date | None = None
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
    override: PageOverride | None = None
    engine: str | None = None  # a page made for one engine by [engines] (watcher.config.engines)


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
    pin_check_every: float = 86400.0  # does each pinned build still exist? (watcher.poll.pins)


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
class TrackerSettings:
    """[tracker]: the guide's hand-kept upstream tracker and the audited copy watcher writes.

    `source` is the maintainers' file (read every cycle, never written unless `output` is the
    same path); `output` is the generated tracker: every row as written plus watcher's column."""

    source: str
    output: str


@dataclass(frozen=True)
class EngineSettings:
    """[engines]: a page for every engine of the shelf, and the At-a-glance table over them.

    `pages`: make a page (in `folder`) for each engine with recipes that no [[page]] covers;
    `glance`: where the At-a-glance table is written ("" for none); `hand`: the maintainers'
    own copy of that page (adopted), whose prose and hand cells are kept."""

    pages: bool = True
    folder: str = "docs/engines"
    glance: str = "docs/engines/README.md"
    hand: str | None = None


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
    tracker: TrackerSettings | None = None
    engines: EngineSettings | None = None

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
        return {t: by_id(getattr(self, t)) for t in tables}

    def item(self, item_id: str) -> Item:
        return self._ids["items"][item_id]

    def blocker(self, blocker_id: str) -> Blocker:
        return self._ids["blockers"][blocker_id]

    def recipe(self, recipe_id: str) -> Recipe:
        return self._ids["recipes"][recipe_id]

    def page(self, page_id: str) -> Page:
        return self._ids["pages"][page_id]


def by_id(objs):
    """id -> object, for any of the config's tables."""
    return {o.id: o for o in objs}


def recipe_digest(recipe: Recipe, base_dir: Path | None = None) -> str:
    """What a run of `recipe` tested, hashed: the launch (command, or compose file + service
    and the bytes of the file and of the `.env` beside it), the model, spec decode, hardware and checks; not its prose, timeouts
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
        "probe_timeout",
        "port",
        "host_port",
        "image_written",  # read from the compose file, whose bytes are hashed below
    ):
        keep.pop(key, None)
    if recipe.compose and base_dir is not None:
        path = Path(recipe.compose)
        path = path if path.is_absolute() else base_dir / path
        try:
            keep["compose_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            keep["compose_sha256"] = None
        dotenv = path.parent / ".env"  # Compose interpolates the file with it: part of the launch
        if dotenv.is_file():
            keep["compose_env_sha256"] = hashlib.sha256(dotenv.read_bytes()).hexdigest()
    text = json.dumps(keep, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:32]


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
