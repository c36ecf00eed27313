"""`watcher init --github`: the files a guide repository needs, derived from its watch.toml.

The workflows are filled-in templates shipped in the package (templates/github/), so a guide
repository needs nothing from watcher's own checkout. Placeholders are `@@NAME@@`, not jinja:
GitHub's own `${{ }}` expressions must pass through untouched. Nothing is ever overwritten.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from watcher import __version__
from watcher.config.model import Config
from watcher.core.errors import WatcherError

PYTHON_MIN = (3, 11)  # keep in step with requires-python in pyproject.toml
WORKFLOW_PYTHON = "3.11"  # what the hosted runner installs for the watch job
SOURCE_FALLBACK = "https://github.com/club-3090/watcher"
# The distribution's name on the package index (`watcher` there is another project); the
# command stays `watcher`. Keep in step with [project] name in pyproject.toml.
DIST_NAME = "upstream-blocker-watcher"
CYCLE_MINUTES = 20  # poll, evaluate, render, commit; a cycle waits up to lock_timeout too
ACTIONS_MAX_MINUTES = 360  # GitHub ends any hosted job after 6 hours


@dataclass
class Scaffold:
    """What `write_github` did: the paths it wrote, and the existing ones it left alone."""

    written: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)
    merged: dict[Path, list[str]] = field(default_factory=dict)  # lines added to existing files


def source_url() -> str:
    """watcher's repository, from the installed package's metadata (pyproject [project.urls])."""
    try:
        urls = metadata.metadata(DIST_NAME).get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        urls = []
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("source", "repository"):
            return url.strip().removesuffix(".git")
    return SOURCE_FALLBACK


def pinned_install() -> str:
    """A pip requirement for exactly this watcher: its release tag in its git repository.

    The default only; a guide points `init --github --install` at where watcher is really
    published (this checkout's [project.urls] Source may not be it).
    """
    return f"{DIST_NAME} @ git+{source_url()}@v{__version__}"


_GIT = re.compile(r"^[A-Za-z0-9][\w.-]*\s*@\s*git\+(https|ssh)://\S+?@(?P<ref>[^@/\s]+)$")
_PINNED = re.compile(r"^[A-Za-z0-9][\w.-]*(\[[\w,.-]+\])?\s*(==|===)\s*[\w.+!-]+$")
_URL = re.compile(r"^[A-Za-z0-9][\w.-]*\s*@\s*(https|file)://\S+\.(whl|tar\.gz)$")


def install_problem(spec: str) -> str | None:
    """Why a pip requirement does not name one resolvable watcher, or None when it does: a git
    URL with a tag or sha (`NAME @ git+https://host/repo@v0.1.0`), an exact package pin
    (`NAME==0.1.0`), or a URL of a wheel or sdist."""
    s = spec.strip()
    if not s:
        return "it is empty"
    m = _GIT.match(s)
    if m:
        ref = m.group("ref")
        if re.fullmatch(r"[0-9a-f]{7,40}|v?\d+(\.\d+)*([.-]?\w+)?", ref):
            return None
        return f"its git ref {ref!r} is a branch, not a tag or commit: it moves under the guide"
    if s.startswith(("git+", "http://", "https://")):
        return "it has no distribution name (write `NAME @ URL`)"
    if "git+" in s:
        return "its git URL has no @tag or @sha at the end"
    if _PINNED.match(s) or _URL.match(s):
        return None
    return "it is not pinned to one version (`NAME==X.Y.Z`, or a git URL ending in @tag)"


def cron_for(interval_s: float) -> tuple[str, str]:
    """(cron line, note) closest to [watcher] interval, off the hour (GitHub delays :00 most)."""
    minutes = max(5, round(interval_s / 60))  # GitHub runs schedules at most every 5 minutes
    if minutes < 60 and 60 % minutes == 0:
        offset = 7 % minutes
        note = " (GitHub runs a schedule at most every 5 min)" if interval_s < 300 else ""
        return ",".join(str(m) for m in range(offset, 60, minutes)) + " * * * *", note
    hours = minutes / 60
    if hours == int(hours) and 24 % int(hours) == 0:
        return f"7 */{int(hours)} * * *" if hours > 1 else "7 * * * *", ""
    return "7,37 * * * *", f" (no cron step fits {minutes} min; this runs every 30 min)"


def _interval_text(seconds: float) -> str:
    return f"{seconds:g}s" if seconds < 60 or seconds % 60 else f"{round(seconds / 60)}m"


def _rel(cfg: Config, path: Path, root: Path) -> str:
    """`path` relative to the repository root, as the workflow sees it."""
    try:
        rel = Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()
    except ValueError:  # another drive
        rel = ".."
    if not rel.startswith(".."):
        return rel
    raise WatcherError(
        f"{cfg.path}: {path} is outside the repository {root}; the workflow can only commit "
        "files inside it (use relative paths in [watcher] and [[page]] output)"
    )


# What a path or an install requirement pasted into a workflow may hold: the YAML around it and the
# bash that runs it must read it as one word (paths are shell-quoted where bash sees them).
_SAFE_PATH = re.compile(r"[A-Za-z0-9._/+@=,~ -]+")
_SAFE_INSTALL = re.compile(r"[A-Za-z0-9._/:@+=<>!~,\[\]%#-]+(?: [A-Za-z0-9._/:@+=<>!~,\[\]%#-]+)*")


def _checked_path(cfg: Config, rel: str, what: str, *, spaces: bool = True) -> str:
    """A repository-relative path the workflow may carry, or a WatcherError naming it."""
    ok = _SAFE_PATH.fullmatch(rel) and rel == rel.strip() and not rel.startswith("-")
    if ok and (spaces or " " not in rel):
        return rel
    allowed = "letters, digits, . _ / + @ = , ~ -" + (" and spaces" if spaces else "")
    raise WatcherError(
        f"{cfg.path}: {what} {rel!r} cannot go into the workflow (it runs in YAML and bash): "
        f"use only {allowed}"
    )


def _sh(rel: str) -> str:
    """`rel` as one bash word (single-quoted when it holds a space)."""
    return shlex.quote(rel)


def checked_install(install: str) -> str:
    """A pip requirement for `pip install "..."` in the workflow: no quote, `$`, backquote,
    backslash, newline or ` #` (YAML would cut the line there); else a WatcherError."""
    if _SAFE_INSTALL.fullmatch(install) and " #" not in install:
        return install
    raise WatcherError(
        f"--install {install!r} cannot go into the workflow: a pip requirement has no quotes, "
        "$, backquotes, backslashes, newlines or ' #'"
    )


def _template(name: str) -> str:
    from watcher.publish.page import package_templates

    return (package_templates() / "github" / name).read_text(encoding="utf-8")


def _fill(text: str, values: dict[str, str]) -> str:
    return re.sub(r"@@([A-Z_]+)@@", lambda m: values[m.group(1)], text)


def _gpu_label(gpu_name: str) -> str:
    """'RTX 3090' -> 'rtx3090': a runner label for the recipe's target GPU."""
    return re.sub(r"[^a-z0-9]", "", gpu_name.lower()) or "gpu"


def watch_workflow(cfg: Config, root: Path, install: str | None = None) -> str:
    """The watch workflow for this config, run from repository `root`."""
    cron, cron_note = cron_for(cfg.settings.interval)
    perms, notes = [], []
    if cfg.notify.enabled:
        perms.append("      issues: write # [notify] enabled: the sticky comment and transitions")
        notes.append(", comment on the tracking issue")
    if cfg.smoke.backend == "github-actions":
        perms.append("      actions: write # [smoke] backend = github-actions: dispatch smoke.yml")
        notes.append(", dispatch smoke runs")
    timeout = CYCLE_MINUTES + round(cfg.settings.lock_timeout / 60)
    why = "a cycle with margin (polling, the lock wait, the site)"
    if cfg.smoke.backend == "github-actions":
        timeout = min(ACTIONS_MAX_MINUTES, timeout + round(cfg.smoke.dispatch_timeout / 60))
        why += "; plus [smoke] dispatch_timeout, while a GPU run is awaited"
    written = [(p.output, f"[page.{p.id}] output") for p in cfg.pages]
    if cfg.engines is not None and cfg.engines.glance:  # the At-a-glance table is published too
        written.append((cfg.engines.glance, "[engines] glance"))
    if cfg.tracker is not None and cfg.tracker.output != cfg.tracker.source:
        written.append((cfg.tracker.output, "[tracker] output"))
    pages = " ".join(
        _sh(_checked_path(cfg, _rel(cfg, cfg.resolve(out), root), where)) for out, where in written
    )
    values = {
        "VERSION": __version__,
        "CONFIG": _sh(_checked_path(cfg, _rel(cfg, cfg.path, root), "the config path")),
        "INTERVAL": _interval_text(cfg.settings.interval) + cron_note,
        "CRON": cron,
        "PERMISSION_NOTES": "".join(notes),
        "EXTRA_PERMISSIONS": "".join(p + "\n" for p in perms),
        "TIMEOUT": str(timeout),
        "TIMEOUT_WHY": why,
        "PYTHON": WORKFLOW_PYTHON,
        "INSTALL": checked_install(install or pinned_install()),
        "DB": _checked_path(cfg, _rel(cfg, cfg.db_path, root), "the database", spaces=False),
        "PAGES": pages or "none",
        "SITE": _checked_path(cfg, _rel(cfg, cfg.site_dir, root), "site_dir", spaces=False),
    }
    return _fill(_template("watch.yml"), values)


def runner_labels(cfg: Config) -> list[str]:
    """Self-hosted runner labels beyond self-hosted/linux: `gpu` and each target GPU's name."""
    names = sorted({_gpu_label(r.hardware.gpu_name) for r in cfg.recipes}) or ["rtx3090"]
    return ["gpu", *names]


def smoke_workflow(cfg: Config, root: Path, install: str | None = None) -> str:
    """The GPU host's smoke workflow: installs watcher into a venv, runs one recipe."""
    longest = max((r.startup_timeout for r in cfg.recipes), default=900.0)
    values = {
        "VERSION": __version__,
        "CONFIG": _sh(_checked_path(cfg, _rel(cfg, cfg.path, root), "the config path")),
        "PYTHON_MIN": ".".join(map(str, PYTHON_MIN)),
        "PYTHON_TUPLE": ", ".join(map(str, PYTHON_MIN)),
        "LABELS": ", ".join(runner_labels(cfg)),
        # Model download and engine start (startup_timeout), the probes, teardown, install.
        "TIMEOUT": str(min(ACTIONS_MAX_MINUTES * 4, round(longest / 60) + 30)),
        "INSTALL": checked_install(install or pinned_install()),
        "DATA": _checked_path(cfg, _rel(cfg, cfg.data_dir, root), "data_dir", spaces=False),
    }
    return _fill(_template("smoke.yml"), values)


def actionlint_config(cfg: Config) -> str:
    lines = "".join(f"    - {label}\n" for label in runner_labels(cfg))
    return _fill(_template("actionlint.yaml"), {"LABEL_LINES": lines.rstrip("\n")})


def write_github(
    cfg: Config, root: Path, *, smoke: bool = False, install: str | None = None
) -> Scaffold:
    """Write .github/workflows/watch.yml (and smoke.yml), and .gitignore, never overwriting."""
    out = Scaffold()
    files = {Path(".github/workflows/watch.yml"): watch_workflow(cfg, root, install)}
    if smoke:
        files[Path(".github/workflows/smoke.yml")] = smoke_workflow(cfg, root, install)
        files[Path(".github/actionlint.yaml")] = actionlint_config(cfg)
    # The workflow adds the database with `git add -f`; local runs keep data and site out of git.
    ignore = [_rel(cfg, cfg.data_dir, root) + "/", _rel(cfg, cfg.site_dir, root) + "/"]
    files[Path(".gitignore")] = (
        "# watcher: local state and the built site\n" + "\n".join(ignore) + "\n"
    )
    for rel, text in files.items():
        path = root / rel
        if path.exists() and rel == Path(".gitignore"):
            added = merge_gitignore(path, ignore)
            if added:
                out.merged[path] = added
            else:
                out.kept.append(path)
            continue
        if path.exists():
            out.kept.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        out.written.append(path)
    return out


def merge_gitignore(path: Path, needed: list[str]) -> list[str]:
    """Append the lines watcher needs to an existing .gitignore (its own lines untouched);
    a line already there in another spelling (`/data/`, `data`) counts. Returns those added."""
    text = path.read_text(encoding="utf-8")
    have = {line.strip().strip("/") for line in text.splitlines() if line.strip()}
    missing = [n for n in needed if n.strip("/") not in have]
    if missing:
        sep = "" if not text or text.endswith("\n") else "\n"
        block = "# watcher: local state and the built site\n" + "\n".join(missing) + "\n"
        path.write_text(text + sep + ("\n" if text.strip() else "") + block, encoding="utf-8")
    return missing
