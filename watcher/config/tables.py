"""The tables of watch.toml other than `[[recipe]]`, each read into its typed object: [watcher],
`[[item]]` (with the keys each kind understands), `[[blocker]]`, `[[page]]`, `[[signature]]`,
[smoke], [notify], [site] and [bisect].
"""

from __future__ import annotations

import re

from watcher.config.model import (
    BLOCKER_STATUSES,
    ITEM_KINDS,
    MATCH_SCOPES,
    PAGE_OVERRIDE_STATUSES,
    RULES,
    STAGES,
    BisectSettings,
    Blocker,
    Item,
    Notify,
    Override,
    Page,
    PageOverride,
    Park,
    Settings,
    Site,
    Smoke,
    Snooze,
    TrackerSettings,
)
from watcher.config.reader import TableReader
from watcher.config.signatures import Signature


def read_settings(r: TableReader | None) -> Settings:
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
    if not re.fullmatch(r"[A-Za-z0-9._/+@=,~-]+", s.data_dir) or s.data_dir.startswith("-"):
        r.fail(  # what `init --github` would refuse later: the data folder is in the workflows
            "data_dir",
            f"{s.data_dir!r} cannot go into the workflows (they run it in YAML and bash): use"
            " only letters, digits, . _ / + @ = , ~ -",
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


def read_item(r: TableReader) -> Item:
    item_id = r.ident()
    repo = r.get("repo", str, required=True)
    if not re.match(r"^[\w.-]+/[\w.-]+$", repo):
        r.fail("repo", f"must be 'owner/name', got {repo!r}")
    kind = r.choice("kind", ITEM_KINDS, required=True)
    number = r.get("number", int)
    if kind in ("issue", "pull", "discussion") and number is None:
        r.fail("number", f"is required for kind '{kind}'")
    if kind in ("commits", "releases", "code", "commit") and number is not None:
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
    prefer = r.regex_list("prefer")
    demote = r.regex_list("demote")
    supersede_from = r.str_list("supersede_from")
    sha = r.get("sha", str)
    if kind == "commit" and (sha is None or not re.match(r"^[0-9a-f]{7,40}$", sha)):
        r.fail("sha", "is required for kind 'commit': 7 to 40 lower-case hex digits")
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
        prefer=prefer,
        demote=demote,
        supersede_from=supersede_from,
        sha=sha,
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
    "prefer": ("commits",),
    "demote": ("commits",),
    "supersede_from": ("pull",),
    "sha": ("commit",),
}


def _check_kind_keys(r: TableReader, kind: str, paths: tuple[str, ...]) -> None:
    for key, kinds in _KIND_KEYS.items():
        if key in r.table and kind not in kinds:
            allowed = " and ".join(f"'{k}'" for k in kinds)
            extra = " (code items use 'ref')" if key == "branch" and kind == "code" else ""
            r.fail(key, f"applies only to kind {allowed}{extra}")


def _override(r: TableReader) -> Override:
    o = Override(
        status=r.choice("status", BLOCKER_STATUSES, required=True),
        reason=r.get("reason", str, required=True),
        until=r.date("until"),
    )
    r.done()
    return o


def read_blocker(r: TableReader) -> Blocker:
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


def read_bisect(r: TableReader | None) -> BisectSettings:
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


def read_page(r: TableReader) -> Page:
    pr = r.sub("park")
    park = None
    if pr is not None:
        park = Park(
            reason=pr.get("reason", str, required=True),
            until=pr.date("until"),
            since=pr.date("since"),
        )
        pr.done()
    orr = r.sub("override")
    override = None
    if orr is not None:
        override = PageOverride(
            status=orr.choice("status", PAGE_OVERRIDE_STATUSES, required=True),
            reason=orr.get("reason", str, required=True),
            since=orr.date("since"),
            until=orr.date("until"),
        )
        orr.done()
        if park is not None:
            orr.fail(
                "status",
                "cannot stand beside [page.park]: a page is parked or overridden, keep one",
            )
    p = Page(
        id=r.ident(),
        title=r.get("title", str, required=True),
        output=r.get("output", str, required=True),
        template=r.get("template", str, "page.md.j2"),
        blockers=r.str_list("blockers"),
        recipes=r.str_list("recipes"),
        fragments=r.get("fragments", str),
        park=park,
        override=override,
    )
    r.done()
    return p


def read_signature(r: TableReader) -> Signature:
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


def read_smoke(r: TableReader | None) -> Smoke:
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
        pin_check_every=r.duration("pin_check_every", d.pin_check_every),
    )
    if s.pin_check_every < 60:
        r.fail("pin_check_every", "must be at least 60s (each check asks every registry)")
    if s.backend == "github-actions" and not s.repo:
        r.fail("repo", "is required when backend = 'github-actions'")
    r.done()
    return s


def read_notify(r: TableReader | None) -> Notify:
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


def read_site(r: TableReader | None) -> Site:
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


def read_tracker(r: TableReader | None) -> TrackerSettings | None:
    """[tracker]: source (the maintainers' file) and output (the audited copy; default: beside it,
    `<name>.audit.md`)."""
    if r is None:
        return None
    source = r.get("source", str, required=True)
    if not source.strip():
        r.fail("source", "must name the tracker file, e.g. docs/UPSTREAM.md")
    default = (
        source[: -len(".md")] + ".audit.md" if source.endswith(".md") else source + ".audit.md"
    )
    t = TrackerSettings(source=source, output=r.get("output", str, default))
    r.done()
    return t
