"""The `watcher` command line. Data goes to stdout; progress and logs to stderr.

Why one file of ~700 lines: it is the only module that imports click, one command per verb with
its help text and example; the work itself lives in the stage modules.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import sqlite3  # stdlib, ~5 ms: the CLI turns database errors into one line
import sys
from pathlib import Path

import click

from watcher import __version__
from watcher.config.load import default_config_text, load_config
from watcher.config.model import Config
from watcher.core.errors import ConfigError, WatcherError
from watcher.core.text import drop_unsafe

log = logging.getLogger("watcher")
CONFIG_HELP = "Path to watch.toml (paths inside it are relative to its folder)."


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * verbose if verbose else logging.INFO
    logging.basicConfig(
        level=max(level, logging.DEBUG),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
        force=True,  # `-v` after the command raises the level set by the group
    )
    logging.getLogger("httpx").setLevel(logging.WARNING if verbose < 2 else logging.DEBUG)
    # APScheduler logs every job start and end at INFO; serve logs its own line per cycle.
    logging.getLogger("apscheduler").setLevel(logging.WARNING if verbose < 2 else logging.DEBUG)


def _config(path: str) -> Config:
    cfg = load_config(Path(path))
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta["watcher.config"] = cfg  # shared by every context: the error handler names files
    return cfg


_DISK_HINTS = {
    errno.ENOSPC: "the disk is full: free some space and run it again",
    errno.EDQUOT: "the disk quota is used up: free some space and run it again",
    errno.EROFS: "the file system is read-only: point data_dir/site_dir at a writable folder",
    errno.EACCES: "permission denied: check who owns the data and site folders",
    errno.EPERM: "permission denied: check who owns the data and site folders",
}


def _disk_error(e: OSError) -> str:
    where = f"{e.filename}: " if e.filename else ""
    hint = _DISK_HINTS.get(e.errno or 0, "")
    return f"{where}{e.strerror or e}" + (f" ({hint})" if hint else "")


def _database_error(e: sqlite3.Error, cfg: Config | None) -> str:
    db = cfg.db_path if cfg is not None else "the database"
    text = str(e)
    if "full" in text:
        hint = "the disk is full: free some space and run it again"
    elif "readonly" in text or "read-only" in text or "unable to open" in text:
        hint = "the data folder is not writable: check its permissions and file system"
    else:
        hint = "the file may be damaged: restore it from a backup, or move it away to start afresh"
    return f"{db}: {text} ({hint})"


# Escape sequences (CSI, OSC such as hyperlinks and title changes, two-byte ESC): the terminal's
# own step on top of core.text's rule, so upstream titles cannot drive the reader's terminal.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")


def terminal_safe(text: str) -> str:
    """Text as it may be printed to a terminal: no escape sequences, no unsafe characters."""
    return drop_unsafe(_ESCAPES.sub("", text))


def _more_verbose(ctx: click.Context, _param, value: int) -> None:
    """`watcher check-now -v` works like `watcher -v check-now`; both add up."""
    if value and not ctx.resilient_parsing:
        root = ctx.find_root()
        root.meta["watcher.verbose"] = root.meta.get("watcher.verbose", 0) + value
        _setup_logging(root.meta["watcher.verbose"])


class _Command(click.Command):
    """Every subcommand also takes -v/--verbose (after its name)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.params.append(
            click.Option(
                ["-v", "--verbose"],
                count=True,
                expose_value=False,
                callback=_more_verbose,
                help="More log output on stderr (-vv for HTTP); same as before the command.",
            )
        )


def _complete_ids(kinds: tuple[str, ...]):
    """Shell completion of ids from the config named by --config (or ./watch.toml)."""

    def complete(ctx: click.Context, _param, incomplete: str) -> list[str]:
        try:
            cfg = load_config(Path(ctx.params.get("config_path") or "watch.toml"))
        except (WatcherError, OSError):
            return []
        ids = [o.id for kind in kinds for o in getattr(cfg, kind)]
        return [i for i in ids if i.startswith(incomplete)]

    return complete


class _Group(click.Group):
    """Turns WatcherError — and disk, database and permission failures — into one line and an
    exit code, never a traceback."""

    command_class = _Command

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except WatcherError as e:
            click.echo(f"Error: {e}", err=True)
            ctx.exit(e.exit_code)
        except sqlite3.Error as e:
            click.echo(f"Error: {_database_error(e, ctx.meta.get('watcher.config'))}", err=True)
            ctx.exit(1)
        except OSError as e:
            click.echo(f"Error: {_disk_error(e)}", err=True)
            ctx.exit(1)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="watcher")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for HTTP).")
@click.pass_context
def cli(ctx: click.Context, verbose: int) -> None:
    """watcher: watch upstream blockers, smoke-test the recipe, publish the truth.

    Start with `watcher init`, then `watcher check-now`.
    """
    ctx.meta["watcher.verbose"] = verbose
    _setup_logging(verbose)


@cli.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--github",
    is_flag=True,
    help="Also write .github/workflows/watch.yml (cron, Pages deploy, a pinned watcher).",
)
@click.option(
    "--smoke",
    is_flag=True,
    help="With --github: also the GPU host's .github/workflows/smoke.yml.",
)
@click.option(
    "--install",
    metavar="REQUIREMENT",
    help="With --github: what the workflows pip-install (default: this version's git tag).",
)
@click.option(
    "--scan-composes",
    "scan",
    metavar="FOLDER",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Only print [[recipe]] tables proposed for every compose file under FOLDER.",
)
@click.option(
    "--all",
    "include_all",
    is_flag=True,
    help="With --scan-composes: also propose deprecated and archived composes, marked.",
)
@click.option(
    "--adopt",
    "adopt",
    metavar="PAGE",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Take over a hand-kept page (its prose kept as fragments; the diff is shown), or make"
    " the upstream tracker (docs/UPSTREAM.md) the watch list.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="With --adopt PAGE: print the diff of watch.toml and of the page, and write nothing.",
)
def init(
    directory: Path,
    github: bool,
    smoke: bool,
    install: str | None,
    scan: Path | None,
    include_all: bool,
    adopt: Path | None,
    dry_run: bool,
) -> None:
    """Write the default watch list (watch.toml) and its prose fragments into DIRECTORY.

    Never overwrites an existing file: existing files are left as they are and named. Without
    --github an existing watch.toml is an error; with --github (DIRECTORY is the guide's
    repository) the workflows are derived from the watch.toml found or written there.
    A page that watcher did not write is never overwritten by a cycle: --adopt PAGE keeps its
    hand-written sections as fragments, shown where they stood (a page that says "Status
    (2026-05-21): PARKED" is parked in watch.toml with that date; blocked, experimental or
    validated with a date becomes that page's [page.override]), prints what changes (a
    unified diff of watch.toml and the page), then takes it over; with --dry-run it only prints.
    --adopt on the guide's upstream tracker (a file no [[page]] writes, with a Status table linking
    to GitHub) appends an [[item]] for each new issue and pull link and [tracker] to watch.toml;
    the tracker itself is only read, and each cycle writes its audited copy. --adopt on the
    engines README (a table under "At a glance") keeps it byte for byte as [engines] hand, from
    which each cycle rebuilds its table.

    With --scan-composes FOLDER nothing is written: recipes proposed for every live compose file
    under FOLDER (read as Compose interpolates it; engine from the guide's engine folder or the
    image; notes on what could not be told) are printed, their paths relative to DIRECTORY, for
    you to read and append to watch.toml. Deprecated and archived composes are listed, not
    proposed, unless --all.

    Example: watcher init --github ~/src/my-guide

    Example: watcher init --github --adopt docs/engines/SGLANG.md ~/src/my-guide

    Example: watcher init --adopt docs/engines/SGLANG.md --dry-run ~/src/my-guide

    Example: watcher init --adopt docs/UPSTREAM.md ~/src/my-guide

    Example: watcher init --scan-composes models/ >> watch.toml
    """
    if include_all and scan is None:
        raise click.UsageError("--all goes with --scan-composes")
    if scan is not None:
        if github or smoke or install:
            raise click.UsageError("--scan-composes only prints; it goes without --github")
        from watcher.onboard.shelf import proposals_toml, scan_composes

        shelf = scan_composes(scan, directory, include_all=include_all)
        click.echo(proposals_toml(shelf), nl=False)
        left = f"; {len(shelf.skipped)} not proposed (listed)" if shelf.skipped else ""
        click.echo(f"{len(shelf.proposals)} recipe(s) proposed from {scan}{left}", err=True)
        return
    if (smoke or install) and not github:
        raise click.UsageError("--smoke and --install go with --github")
    if dry_run:
        if not adopt or github:
            raise click.UsageError("--dry-run goes with --adopt PAGE (and without --github)")
        page = adopt if adopt.is_absolute() or adopt.exists() else directory / adopt
        _adopt(directory / "watch.toml", page, dry_run=True)
        return
    if install:
        from watcher.onboard.scaffold import install_problem

        problem = install_problem(install)
        if problem:
            raise click.BadParameter(f"{install!r}: {problem}", param_hint="--install")
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "watch.toml"
    if target.exists() and not github and not adopt:
        raise WatcherError(f"{target} already exists; not overwriting it")
    if target.exists():
        click.echo(f"kept {target} (exists)", err=True)
    else:
        target.write_text(default_config_text(), encoding="utf-8")
        click.echo(str(target))
    from watcher.publish.page import package_templates

    # Hand-written prose fragments, for the maintainer to edit; existing files are never touched.
    for page_dir in sorted((package_templates() / "fragments").iterdir()):
        for src in sorted(page_dir.glob("*.md")):
            dest = directory / "fragments" / page_dir.name / src.name
            if not dest.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(src.read_bytes())
                click.echo(str(dest))
    if adopt:
        _adopt(target, adopt if adopt.is_absolute() or adopt.exists() else directory / adopt)
    if github:
        from watcher.onboard.scaffold import write_github

        done = write_github(_config(str(target)), directory, smoke=smoke, install=install)
        for path in done.written:
            click.echo(str(path))
        for path in done.kept:
            click.echo(f"kept {path} (exists; not overwriting it)", err=True)
        for path, lines in done.merged.items():
            click.echo(f"added {', '.join(lines)} to {path} (its other lines kept)", err=True)
        if install:
            _install_not_applied(install, [p for p in done.kept if p.suffix == ".yml"])
        click.echo(
            "Next: watcher doctor && watcher check-now (with GITHUB_TOKEN set), commit these "
            "files, then Settings → Pages → Source: GitHub Actions and Actions → watch → Run "
            "workflow (README: Use it in your guide)",
            err=True,
        )
        return
    click.echo(
        "Next: watcher validate --config "
        + str(target)
        + " && watcher check-now --config "
        + str(target),
        err=True,
    )


def _install_not_applied(install: str, kept: list[Path]) -> None:
    """`--install` asked for a workflow that already exists: it was not applied; say how."""
    import re

    stale = []
    for path in kept:
        now = re.findall(r'pip install (?:-q )?"([^"]*)"', path.read_text(encoding="utf-8"))
        if now and install not in now:
            stale.append(f"{path} still installs {now[0]!r}")
    if stale:
        raise WatcherError(
            f"--install {install!r} was not applied: "
            + "; ".join(stale)
            + f'. To apply it, change the `pip install "…"` line there to `pip install "{install}"`'
            " (or remove the file and run `watcher init --github --install … .` again)"
        )


def _adopt(config: Path, page: Path, dry_run: bool = False) -> None:
    from watcher.config.load import parse_config
    from watcher.onboard.adopt import adopt_page, writes_page
    from watcher.onboard.adopt_glance import adopt_glance, is_glance
    from watcher.onboard.adopt_glance import describe as describe_glance
    from watcher.onboard.adopt_tracker import adopt_tracker, describe, is_tracker

    text = None
    if config.exists():
        cfg = _config(str(config))
    else:  # --dry-run on a guide with no watch.toml yet: the one init would write
        text = default_config_text()
        cfg = parse_config(text, config)
    if page.is_file() and not writes_page(cfg, page) and is_glance(page):  # the engines README
        for line in describe_glance(adopt_glance(cfg, page, dry_run=dry_run)):
            click.echo(line, err=True)
        return
    if page.is_file() and not writes_page(cfg, page) and is_tracker(page):
        if dry_run:
            raise click.UsageError("--dry-run adopts a page, not the upstream tracker")
        for line in describe(adopt_tracker(cfg, page)):
            click.echo(line, err=True)
        return
    done = adopt_page(cfg, page, dry_run=dry_run, config_text=text)
    if done.already:
        click.echo(f"{page} is already written by watcher; nothing to adopt", err=True)
        return
    if done.diff:
        click.echo(done.diff)
    verb = "would keep" if dry_run else "kept"
    for path in done.fragments:
        click.echo(f"{verb} the hand-written prose in {path}", err=True)
    for path in done.edited:
        click.echo(
            f"left {path} as it is (edited since; the hand page's text not written)", err=True
        )
    if done.parked and done.status:
        click.echo(
            f"{'would park' if dry_run else 'parked'} page in {config.name} since"
            f" {done.status.since}, as the hand-kept page says: {done.status.reason}",
            err=True,
        )
    elif done.overridden and done.status:
        click.echo(
            f"{'would set' if dry_run else 'set'} the page's status to {done.status.word} in"
            f" {config.name} ([page.override]) since {done.status.since}, as the hand-kept page"
            f" says: {done.status.reason}; watcher's own evidence is shown beside it where it"
            " differs",
            err=True,
        )
    elif done.unrecorded and done.status:
        click.echo(
            f"the page says {done.status.word} since {done.status.since}, but it is made by"
            " [engines], which has no [page.park] or [page.override] to record that in: its"
            " paragraph is shown while watcher's evidence says the same (or nothing yet)",
            err=True,
        )
    elif done.status and done.status.word != "parked":
        click.echo(
            f"the page says {done.status.word} since {done.status.since}: that paragraph is shown"
            " while watcher's evidence says the same (or nothing yet), its own sentence after",
            err=True,
        )
    if done.title:
        click.echo(
            f"the title {done.title!r} is the line under watcher's headline now (a title that"
            " names a status, only while the page has that status)",
            err=True,
        )
    if dry_run:
        click.echo(
            f"dry run: nothing written ({done.added} lines added, {done.removed} removed)", err=True
        )
        return
    click.echo(
        f"took over {done.path}: {done.added} lines added, {done.removed} removed (diff above);"
        " from now on each cycle regenerates it",
        err=True,
    )


@cli.command()
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option(
    "--online",
    is_flag=True,
    help="Also read GitHub: does every item exist (issue, PR, repository, ref, watched paths)?",
)
def validate(config_path: str, online: bool) -> None:
    """Check watch.toml without polling anything (with --online: every item on GitHub).

    Exits 2 with the file, table and key named when something is wrong; with --online, exits 1
    when an item does not exist on GitHub (a typo'd repository, number or ref), a watched path no
    longer exists (a rule gone blind; declare paths gone on purpose in `retired_paths`), or a
    repository cannot be read.

    Example: watcher validate --config watch.toml --online
    """
    from watcher.onboard.doctor import quantization_checks

    cfg = _config(config_path)
    click.echo(
        f"{cfg.path}: OK — {len(cfg.items)} items, {len(cfg.blockers)} blockers, "
        f"{len(cfg.recipes)} recipes, {len(cfg.pages)} pages"
    )
    from watcher.poll.textmatch import slow_pattern

    for item in cfg.items:
        for pattern in (item.pattern, *item.terms, *item.present, *item.absent):
            sentence = slow_pattern(pattern) if pattern else None
            if sentence:
                click.echo(f"warning: [item.{item.id}] {sentence}", err=True)
    for check in quantization_checks(cfg):  # a recipe premise the model folder contradicts
        click.echo(f"warning: {check.name}: {check.detail}\n  fix: {check.fix}", err=True)
    from watcher.config.gates import unexercised

    for sentence in unexercised(cfg):  # a blocker behind a flag none of its recipes passes
        click.echo(f"warning: {sentence}", err=True)
    if not online:
        return
    from watcher.github.client import GitHubClient
    from watcher.poll.poller import check_paths

    with GitHubClient(
        cfg.settings.github_api_url,
        timeout=cfg.settings.timeout,
        max_rate_limit_wait=cfg.settings.max_rate_limit_wait,
        user_agent=cfg.settings.user_agent,
    ) as client:
        problems, checked = check_paths(client, list(cfg.items))
        requests = client.stats.requests
    for item_id, sentence in problems:
        click.echo(f"{cfg.path}: [[item]] {item_id}: {sentence}")
    verdict = f"{len(problems)} problem(s)" if problems else "all exist"
    click.echo(f"online: {checked} item(s) checked, {verdict} ({requests} requests)")
    if problems:
        sys.exit(1)


@cli.command("check-now")
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option("--dry-run", is_flag=True, help="Poll, but write nothing; print what would change.")
@click.option("--offline", is_flag=True, help="Do not ask GitHub; render from the stored state.")
@click.option("--no-smoke", is_flag=True, help="Never start or dispatch a smoke run in this cycle.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the status document (status.json) to stdout."
)
def check_now(
    config_path: str, dry_run: bool, offline: bool, no_smoke: bool, as_json: bool
) -> None:
    """Run one cycle now: poll GitHub, evaluate the blockers, regenerate the pages.

    When GitHub cannot be reached the pages are rendered from the last known state (items marked
    stale), a warning goes to stderr, and the exit code is still 0. When GitHub refused every
    read with 401/403 (a wrong or expired token) the pages are still rendered, and it exits 1
    with the fix. When the site folder cannot be written (a read-only mount, a file in the way)
    the pages are still written, and it exits 1 naming the folder. When another cycle (`serve`,
    another check-now) holds the data folder's lock for longer than [watcher] lock_timeout, it
    exits 75 and names the holder. Ctrl-C stops it at once (exit 130) with one line saying what
    the database kept.

    Example: GITHUB_TOKEN=... watcher check-now --config watch.toml
    """
    from watcher.loop.cycle import run_cycle
    from watcher.loop.schedule import locked_cycle

    cfg = _config(config_path)
    try:
        if dry_run:
            # No lock: a dry run writes nothing and works on an SQLite backup of the database,
            # which is a consistent snapshot even while another cycle is writing (WAL).
            report = run_cycle(cfg, offline=offline, dry_run=True, no_smoke=no_smoke)
        else:
            report = locked_cycle(cfg, "check-now", offline=offline, no_smoke=no_smoke)
    except KeyboardInterrupt as e:
        _interrupted(getattr(e, "kept", None))
    if report.offline_note:
        click.echo(f"warning: {report.offline_note}", err=True)
    if report.item_errors and report.offline_note and report.mode != "offline":
        from datetime import UTC, datetime

        from watcher.core.token import github_token
        from watcher.loop.cycle import rate_limited

        limited = rate_limited(
            list(report.item_errors.values()), bool(github_token()), datetime.now(UTC)
        )
        click.echo(
            f"warning: all {len(report.item_errors)} items kept their last known state; "
            + (limited or "run `watcher check-now` again once GitHub is reachable"),
            err=True,
        )
    else:
        for item_id, err in sorted(report.item_errors.items()):
            click.echo(
                f"warning: {item_id}: {err} (kept its last known state, marked stale)", err=True
            )
    log.info(report.summary())
    if as_json:
        click.echo(json.dumps(report.status, indent=2, sort_keys=True, ensure_ascii=False))
    elif dry_run:
        _print_dry_run(report)
    if (as_json or dry_run) and report.token_rejected:
        raise WatcherError(report.token_rejected)
    if as_json or dry_run:
        return
    refused = []
    for page_id, p in report.pages.items():
        if p.get("refused"):
            refused.append(p["refused"])
            click.echo(f"error: {page_id}: {p['refused']}", err=True)
            continue
        verb = "wrote" if p["written"] else "unchanged"
        shown = next(
            (
                "not checked yet"
                for d in (report.status or {}).get("pages", [])
                if d.get("id") == page_id and d.get("not_checked_yet")
            ),
            p["status"],
        )
        click.echo(f"{page_id}: {shown} — {verb} {p['path']}")
    tracker = report.tracker or {}
    if tracker.get("error"):
        click.echo(f"error: tracker: {tracker['error']}", err=True)
    elif tracker:
        verb = "wrote" if tracker["written"] else "unchanged"
        click.echo(
            f"tracker: {tracker['rows']} rows, {tracker['disagree']} disagree with GitHub"
            f" — {verb} {tracker['path']}"
        )
    for run in report.smoke_runs:
        click.echo(f"smoke {run['run_id']}: {run['outcome']} — {run.get('reason') or ''}")
    if not report.site_error:  # status.json is part of the site: never claimed when not written
        click.echo(f"status: {cfg.site_dir / 'status.json'}")
        click.echo(f"site: {cfg.site_dir / 'index.html'}")
    if report.token_rejected:
        raise WatcherError(report.token_rejected)
    _first_read_not_found(cfg, report)
    if refused:
        raise WatcherError(f"{len(refused)} page(s) not written (each says why above)")
    if tracker.get("error"):
        raise WatcherError(f"the audited tracker was not written: {tracker['error']}")
    if report.site_error:
        raise WatcherError(
            f"status site and status.json not written ([watcher] site_dir): {report.site_error};"
            " the previous site stays, the cycle's data is kept"
        )


def _first_read_not_found(cfg, report) -> None:
    """A 404 on an item never read before is a typo in watch.toml, not an outage: exit 2."""
    from watcher.poll.poller import not_found_problem

    never = {v["id"] for v in (report.status or {}).get("items", []) if not v.get("title")}
    bad = [
        f"{cfg.path}: [[item]] {item_id}: {not_found_problem(cfg.item(item_id))}"
        for item_id, err in sorted(report.item_errors.items())
        if item_id in never and str(err).startswith("HTTP 404")
    ]
    if bad:
        raise ConfigError(
            "\n".join(bad) + "\n(never read: GitHub has no such thing; fix the key, then"
            " `watcher validate --online`)"
        )


def _interrupted(kept: str | None) -> None:
    """Ctrl-C: one line on what was kept, exit 130 at once.

    By now the cycle has unwound: its transaction rolled back or committed, the store closed, the
    lock released. Only reads still in flight remain, in worker threads that a normal exit would
    wait for (up to `timeout`); their answers are dropped anyway, so exit without waiting.
    """
    line = kept or "Interrupted before the cycle began: nothing was read or changed."
    click.echo(line, err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)


def _print_dry_run(report) -> None:
    click.echo("dry run: nothing was written")
    if not report.events:
        click.echo("no changes")
    for e in report.events:
        click.echo(f"would record: {e['message']}")
    for page_id, p in report.pages.items():
        path = Path(p["path"])
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old == p["text"]:
            click.echo(f"{page_id}: {path} would not change")
        else:
            click.echo(
                f"{page_id}: {path} would be {'created' if old is None else 'updated'} ({p['status']})"
            )
    t = report.tracker or {}
    if t.get("error"):
        click.echo(f"tracker: {t['error']}")
    elif t:
        path = Path(t["path"])
        old = path.read_text(encoding="utf-8") if path.exists() else None
        verb = "would not change" if old == t["text"] else "would be written"
        click.echo(f"tracker: {path} {verb} ({t['rows']} rows, {t['disagree']} disagree)")


@cli.command()
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option("--once", is_flag=True, help="Run one cycle (under the lock) and exit.")
def serve(config_path: str, once: bool) -> None:
    """Run the check-now cycle on a schedule until SIGTERM or Ctrl-C.

    The first cycle runs at once, then one every [watcher] interval plus up to jitter. Cycles
    never overlap (the data folder's lock is shared with check-now); a stop signal lets the
    running cycle finish, then exits 0. One log line per cycle goes to stderr.

    Example: GITHUB_TOKEN=... watcher -v serve --config watch.toml
    """
    from watcher.loop.schedule import serve as run_service

    cfg = _config(config_path)
    sys.exit(run_service(cfg, once=once))


@cli.command()
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the stored statuses as JSON.")
def status(config_path: str, as_json: bool) -> None:
    """Show pages, blockers and items from the store, without polling.

    Says how long ago the last check finished, when GitHub was last read successfully and when
    it was last asked (apart, as in status.json), and whether `serve` runs; warns on stderr when
    no check finished for more than [watcher] stale_after x interval (checks have stopped), and
    when the last attempt read nothing.

    Example: watcher status
    """
    from watcher.core.clock import utcnow
    from watcher.judge.evaluate import evaluate
    from watcher.judge.views import item_view
    from watcher.loop.schedule import HEARTBEAT, freshness, freshness_lines, read_lines
    from watcher.publish.context import last_attempt, last_checked_at
    from watcher.store.db import Store

    cfg = _config(config_path)
    store = Store(cfg.db_path)
    try:
        now = utcnow()
        items = store.items()
        ev = evaluate(cfg, items, store.evaluation_runs(), store.statuses(), now, store.pins())
        last = store.last_finished_cycle(polled_only=True)
        fresh = freshness(cfg, last, store.heartbeat(HEARTBEAT), now)
        last_read, attempt = last_checked_at(store, items), last_attempt(store)
    finally:
        store.close()
    if as_json:
        click.echo(
            json.dumps(
                {
                    "last_checked": (last or {}).get("finished_at"),
                    # as in status.json: a cycle that read nothing is an attempt, not a read
                    "last_successful_read": last_read,
                    "last_attempt": attempt,
                    "freshness": fresh,
                    "pages": {
                        k: {"status": v.status, "reason": v.reason, "comparison": v.comparison}
                        for k, v in ev.pages.items()
                    },
                    "blockers": {
                        k: {"status": v.status, "reason": v.reason} for k, v in ev.blockers.items()
                    },
                    "items": [item_view(cfg, i.id, items.get(i.id)) for i in cfg.items],
                },
                indent=2,
                sort_keys=True,
            )
        )
        return
    lines, warnings = freshness_lines(fresh)
    more_lines, more_warnings = read_lines(last_read, attempt, now)
    lines, warnings = lines[:1] + more_lines + lines[1:], warnings + more_warnings
    for line in lines:
        click.echo(terminal_safe(line))
    for warning in warnings:
        click.echo(f"warning: {terminal_safe(warning)}", err=True)
    rows = [("PAGE", "STATUS", "REASON")] + [(p, v.status, v.reason) for p, v in ev.pages.items()]
    rows += [("BLOCKER", "STATUS", "REASON")] + [
        (b, v.status, v.reason) for b, v in ev.blockers.items()
    ]
    rows += [("ITEM", "STATE", "TITLE")]
    for i in cfg.items:
        v = item_view(cfg, i.id, items.get(i.id))
        state = v["state"] + (" (stale)" if v["stale"] else "")
        if v["superseded_by"]:
            state += f", superseded by #{v['superseded_by']}"
        if v["in_release"]:
            state += f", in {v['in_release']}"
        rows.append((i.id, state, (v["title"] or "")[:70]))
    widths = [min(max(len(r[c]) for r in rows), 40) for c in range(2)]
    for r in rows:
        if r[0].isupper():
            click.echo("")
        click.echo(terminal_safe(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}"))


@cli.command()
@click.argument(
    "target", required=False, shell_complete=_complete_ids(("pages", "blockers", "items"))
)
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the chain as JSON.")
def explain(target: str | None, config_path: str, as_json: bool) -> None:
    """Print the chain behind a status: page → recipes → blockers → items → smoke runs → overrides.

    TARGET is a page, blocker or item id (default: every page). Reads the store only.

    Example: watcher explain marlin-pad
    """
    from watcher.core.clock import utcnow
    from watcher.judge.evaluate import evaluate
    from watcher.judge.explain import explain as build
    from watcher.judge.explain import format_text
    from watcher.store.db import Store

    cfg = _config(config_path)
    store = Store(cfg.db_path)
    try:
        items, runs = store.items(), store.smoke_runs(limit=200)
        pins = store.pins()
        ev = evaluate(cfg, items, runs, store.statuses(), utcnow(), pins)
        triggers = store.triggers()
    finally:
        store.close()
    doc = build(cfg, target, items, ev, runs, triggers, pins)
    click.echo(
        json.dumps(doc, indent=2, sort_keys=True) if as_json else terminal_safe(format_text(doc))
    )


@cli.command("build-site")
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
def build_site_command(config_path: str) -> None:
    """Rebuild the static status site from the database, without polling.

    Writes index.html, one HTML page per generated document, item histories, feed.xml,
    badge/<page>.svg and status.json into the site folder ([watcher] site_dir), swapped in at once.
    Every check-now builds it too.

    Example: watcher build-site --config watch.toml
    """
    from watcher.publish.site import build_site

    cfg = _config(config_path)
    report = build_site(cfg)
    log.info(
        "site built: %d files, %.1f KiB in %.2f s",
        len(report.files),
        report.bytes / 1024,
        report.duration_s,
    )
    click.echo(str(report.path / "index.html"))


@cli.command()
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Read the issue's comments, write nothing; say what would change.",
)
@click.option("--show-body", is_flag=True, help="Also print each body that would be written.")
@click.option("--json", "as_json", is_flag=True, help="Print the actions (with bodies) as JSON.")
def comment(config_path: str, dry_run: bool, show_body: bool, as_json: bool) -> None:
    """Update the tracking issue: a sticky status comment per page, one comment per transition.

    Works from the stored state (run `watcher check-now` first; with [notify] enabled, every
    cycle does this too). With --dry-run, or while [notify] enabled = false, nothing is written
    to GitHub or the database: it prints what would be created or edited, and why. Reading the
    issue's comments needs GITHUB_TOKEN. Exits 1 when a comment could not be written (it is
    retried on the next run).

    Example: GITHUB_TOKEN=... watcher comment --dry-run --show-body
    """
    from watcher.core.clock import utcnow
    from watcher.judge.evaluate import evaluate
    from watcher.notify.send import run_notify
    from watcher.store.db import Store

    cfg = _config(config_path)
    from contextlib import nullcontext

    from watcher.loop.lock import cycle_lock

    # Writing comments shares the cycle's lock: a cycle and `comment` never post the same event.
    writes = cfg.notify.enabled and not dry_run
    with (
        cycle_lock(cfg.data_dir, cfg.settings.lock_timeout, "comment") if writes else nullcontext()
    ):
        store = Store(cfg.db_path)
        try:
            now = utcnow()
            ev = evaluate(
                cfg, store.items(), store.evaluation_runs(), store.statuses(), now, store.pins()
            )
            result = run_notify(cfg, store, ev, now=now, dry_run=dry_run)
        finally:
            store.close()
    if as_json:
        click.echo(json.dumps(result.as_dict(bodies=True), indent=2, ensure_ascii=False))
    else:
        where = f"{result.repo}#{result.issue}" if result.repo and result.issue else "no issue"
        if result.dry_run:
            why = "--dry-run" if cfg.notify.enabled else "[notify] enabled = false"
            click.echo(f"dry run ({why}): nothing is written; target {where}")
        else:
            click.echo(f"target {where}: {result.writes} write(s)")
        if result.note:
            click.echo(f"note: {result.note}")
        for action in result.actions:
            click.echo(action.line(result.dry_run))
            if show_body and action.body and action.what in ("create", "edit", "post"):
                click.echo("    " + action.body.rstrip("\n").replace("\n", "\n    "))
        if result.paused_until:
            click.echo(f"writes paused until {result.paused_until} (GitHub rate limit)")
    for err in result.errors:
        click.echo(f"error: {err}", err=True)
    if result.errors and not result.dry_run:
        sys.exit(1)


@cli.command()
@click.argument("recipe_id", shell_complete=_complete_ids(("recipes",)))
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the result document to stdout.")
@click.option(
    "--any-hardware",
    is_flag=True,
    help="Run even without the target GPU; the result is marked off-target and validates nothing.",
)
@click.option("--run-id", help="Use this run id (the GitHub Actions workflow passes its own).")
@click.option(
    "--build",
    metavar="BUILD",
    help="Run this engine build (image:tag or requirement) instead of the recipe's own (a bisect"
    " step dispatched to Actions).",
)
def smoke(
    config_path: str, recipe_id: str, as_json: bool, any_hardware: bool, run_id, build
) -> None:
    """Smoke-test one recipe on this host: launch, probe, tear down, classify, store the result.

    Exits 0 when the run passed, 1 when it did not (failed, timeout, error, skipped), 2 for a
    usage or config error. The log goes to <data_dir>/smoke/<run_id>.log.

    Example: watcher smoke sglang-nospec-tp1 --config watch.toml --json
    """
    from watcher.smoke.run import recipe_or_error, record_run, run_recipe
    from watcher.store.db import Store

    cfg = _config(config_path)
    recipe = recipe_or_error(cfg, recipe_id)
    if run_id is not None and not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$", run_id):
        raise click.UsageError(f"--run-id {run_id!r}: use letters, digits, '.', '_' or '-'")
    if build:
        from watcher.bisect.search import recipe_for

        recipe = recipe_for(recipe, build)
    doc = run_recipe(cfg, recipe, any_hardware=any_hardware, run_id=run_id)
    if build:  # an old build: never this recipe's verdict, here or where the result is collected
        doc["bisect"] = {"build": build}
    stored = True
    try:  # the verdict is printed even if the database is busy (a long cycle holds its lock)
        store = Store(cfg.db_path)
        try:
            record_run(store, doc)
        finally:
            store.close()
    except (WatcherError, sqlite3.Error) as e:
        stored = False
        click.echo(f"warning: the result was not stored in {cfg.db_path}: {e}", err=True)
    if as_json:
        click.echo(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        click.echo(f"{doc['run_id']}: {doc['outcome']} — {doc['reason']}")
        if doc.get("log_path"):
            click.echo(f"log: {doc['log_path']}")
    sys.exit(0 if doc["outcome"] == "passed" and stored else 1)


@cli.command()
@click.argument("recipe_id", required=False, shell_complete=_complete_ids(("recipes",)))
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option("--good", help="The build that passed (a tag or commit of the engine's repo).")
@click.option("--bad", help="The build that fails (with --find-fix: the older, broken one).")
@click.option("--find-fix", is_flag=True, help="Find the first build that fixed --bad's failure.")
@click.option(
    "--dry-run", is_flag=True, help="Build and check the grid; run nothing, store nothing."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the bisect (state and report) as JSON."
)
@click.option("--repeat", type=click.IntRange(1, 20), help="Runs per build ([bisect] repeat).")
@click.option("--resume", "resume_id", metavar="ID", help="Go on with a stopped bisect.")
def bisect(
    recipe_id: str | None,
    config_path: str,
    good: str | None,
    bad: str | None,
    find_fix: bool,
    dry_run: bool,
    as_json: bool,
    repeat: int | None,
    resume_id: str | None,
) -> None:
    """Find the engine build that broke RECIPE (or, with --find-fix, fixed it), in the fewest runs.

    The builds between --good and --bad come from [recipe.source] and GitHub (tags or commits
    through the compare API); each is checked to exist before any run. Both ends are confirmed,
    then the range is halved, skipping builds that cannot be judged; at most ceil(log2 N) + 2
    judged steps, each counted against smoke.max_runs_per_day. A stopped bisect is stored and
    resumes with --resume ID (the command is printed). On the github-actions backend each step
    is one dispatched run that check-now cycles collect. Exits 0 when the range was found.

    Example: watcher bisect sglang-nospec-tp1 --good v0.5.2 --bad v0.5.4
    """
    from watcher.bisect import search as bs
    from watcher.bisect.report import text
    from watcher.smoke.run import recipe_or_error
    from watcher.store.db import Store

    cfg = _config(config_path)
    if resume_id and (recipe_id or good or bad or find_fix):
        raise click.UsageError("--resume ID goes alone (the bisect remembers the rest)")
    if not resume_id and not (recipe_id and good and bad):
        raise click.UsageError("give RECIPE --good REF --bad REF, or --resume ID")
    store = Store(cfg.db_path)
    try:
        if resume_id:
            state = store.bisect(resume_id)
            if state is None:
                raise WatcherError(f"no bisect {resume_id!r} in {cfg.db_path}")
            if state["status"] not in bs.UNFINISHED:
                raise WatcherError(f"bisect {resume_id} is {state['status']}: nothing to resume")
            recipe_or_error(cfg, state["recipe"])
            if repeat:
                state["repeat"] = repeat
        else:
            recipe = recipe_or_error(cfg, recipe_id)
            mode = "find-fix" if find_fix else "regression"
            state = None if dry_run else bs.unfinished(store, recipe.id, good, bad, mode)
            if state is not None:
                click.echo(f"resuming bisect {state['id']} (stopped: {state['message']})", err=True)
            else:
                state = bs.plan(cfg, store, recipe, good, bad, find_fix=find_fix, repeat=repeat)
        if dry_run:
            if as_json:
                click.echo(json.dumps(state, indent=2, sort_keys=True, ensure_ascii=False))
            else:
                gone = sum(1 for p in state["points"] if p.get("gone"))
                present = f"{gone} gone (skipped, never run)" if gone else "all present"
                click.echo(
                    f"{len(state['points'])} builds, {present}; budget {state['budget']} judged"
                    f" steps x {state['repeat']} run(s); nothing run (--dry-run)"
                )
                for p in state["points"]:
                    made = f"gone: {p['gone']}" if p.get("gone") else p.get("digest") or ""
                    click.echo(
                        f"  {p['index'] + 1:>3}. {p['build']}  {p['sha'][:12]}  {p['date']}  {made}"
                    )
                if state["candidate"]:
                    c = state["candidate"]
                    click.echo(f"  tried first: around build {c['index'] + 1} ({c['why']})")
            return
        import signal

        def stop(signum, _frame):  # SIGTERM stops it like Ctrl-C: the state is kept
            raise SystemExit(128 + signum)

        old_term = signal.signal(signal.SIGTERM, stop)
        try:
            state = bs.advance(cfg, store, state, progress=lambda m: click.echo(m, err=True))
        except (KeyboardInterrupt, SystemExit):
            click.echo(f"stopped; resume with: {bs.resume_command(cfg, state)}", err=True)
            raise
        finally:
            signal.signal(signal.SIGTERM, old_term)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(state, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        click.echo(terminal_safe(text(state)))
    if state["status"] not in bs.UNFINISHED:
        from watcher.publish.site import build_site

        try:  # the bisect's own page; the result is stored whatever happens here
            site = build_site(cfg)
            click.echo(f"site: {site.path / 'bisect' / (state['id'] + '.html')}", err=True)
        except (WatcherError, OSError) as e:
            click.echo(f"warning: the site was not rebuilt: {e}", err=True)
    if state["status"] in bs.UNFINISHED:
        click.echo(f"resume with: {bs.resume_command(cfg, state)}", err=True)
    sys.exit(0 if state["status"] == "done" and (state.get("report") or {}).get("exact") else 1)


@cli.command()
@click.argument("item_ids", nargs=-1, metavar="[ITEM]...")
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option(
    "--since",
    help="Read commit streams from this date (2026-01-01); required unless --replay.",
)
@click.option(
    "--as-of",
    "as_of",
    multiple=True,
    help="Judge the rules as of this date (repeatable; default: now).",
)
@click.option("--show-unmatched", is_flag=True, help="Also list the commits the rules ignored.")
@click.option("--json", "as_json", is_flag=True, help="Print the replay as JSON.")
@click.option(
    "--replay",
    metavar="FOLDER",
    type=click.Path(file_okay=False, path_type=Path),
    help="Offline: replay over recorded history (tests/history), not GitHub.",
)
def backtest(
    item_ids: tuple[str, ...],
    config_path: str,
    since: str | None,
    as_of: tuple[str, ...],
    show_unmatched: bool,
    as_json: bool,
    replay: Path | None,
) -> None:
    """Replay commit and code items over history before trusting them.

    For each date: the commits from --since up to it that each rule matches (and, with
    --show-unmatched, those in its paths it ignored), and each code item's state at that date's
    branch tip or newest release. Uses the same reads and matching as a cycle, conditional
    requests through the store's cache, and says how many requests it spent.

    With --replay FOLDER it needs no network: the recorded history (this repository ships
    tests/history) is served by a local replay of GitHub, and without --since/--as-of every
    month's end of the record is judged. Progress goes to stderr.

    Example: watcher backtest sglang-gdn --since 2026-01-01 --as-of 2026-03-01 --as-of 2026-04-30

    Example: watcher backtest --replay tests/history
    """
    from watcher.poll.backtest import format_report, run_backtest

    cfg = _config(config_path)
    if replay is not None:
        from watcher.onboard.demo import replay_backtest

        doc = replay_backtest(cfg, replay, item_ids, since, as_of, show_unmatched)
    elif not since:
        raise click.UsageError("--since is required (or --replay FOLDER for recorded history)")
    else:
        doc = run_backtest(cfg, item_ids, since, as_of, show_unmatched)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(format_report(doc, show_unmatched))


@cli.command()
@click.argument(
    "directory", default="watcher-demo", type=click.Path(file_okay=False, path_type=Path)
)
def demo(directory: Path) -> None:
    """Run the whole loop offline in a fresh DIRECTORY, then say where to look.

    Starts the project's own fake GitHub (seeded like the real upstream threads) and fake engine,
    runs three cycles (before and after an upstream change, then after a smoke run, which is
    off-target: a fake engine validates nothing) and builds the site. Nothing leaves 127.0.0.1.

    Example: watcher demo /tmp/watcher-demo
    """
    from watcher.onboard.demo import run_demo

    where = run_demo(directory, say=lambda line: click.echo(line, err=True))
    click.echo(f"page:   {where['page']}")
    click.echo(f"site:   {where['site']}")
    click.echo(f"status: {where['status']}")
    click.echo(f"config: {where['config']}  (try: watcher explain --config {where['config']})")


@cli.command()
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option(
    "--gpu",
    is_flag=True,
    help="Also check the smoke host: GPUs, docker's NVIDIA runtime, models, ports, disk.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def doctor(config_path: str, gpu: bool, as_json: bool) -> None:
    """Check that this host can run watcher: one line per check, one fix per failed line.

    Config valid; GitHub reachable; GITHUB_TOKEN accepted (and its rate limit); the notify issue
    exists and the token may comment (when [notify] is enabled); once a store exists, each item
    not read yet, or whose repo or number changed since its last good read, read now as the next
    cycle would (a typo fails with the key to fix); the site folder, each page's folder and the
    data folder take a file, as the cycle writes them;
    the Python version. With --gpu, for the smoke host: NVML or nvidia-smi sees each recipe's
    target GPU, docker runs with the NVIDIA runtime (docker recipes), the model path exists,
    each recipe's port is free, disk space for logs. Exits 0 only when every check passes.

    Example: GITHUB_TOKEN=... watcher doctor --gpu
    """
    from watcher.onboard.doctor import as_json as checks_json
    from watcher.onboard.doctor import run_doctor

    checks = run_doctor(Path(config_path), gpu=gpu)
    failed = [c for c in checks if not c.ok]
    if as_json:
        click.echo(json.dumps(checks_json(checks), indent=2, ensure_ascii=False))
    else:
        for c in checks:
            click.echo(c.line())
        click.echo(
            f"{len(failed)} of {len(checks)} checks failed" if failed else "all checks passed"
        )
    sys.exit(1 if failed else 0)


@cli.command("db-changed")
@click.argument("old", type=click.Path(exists=True, dir_okay=False))
@click.argument("new", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--every",
    default=None,
    metavar="DURATION",
    help="Also say yes when OLD's last cycle is this much older than NEW's (e.g. 6h).",
)
def db_changed(old: str, new: str, every: str | None) -> None:
    """Is NEW (this cycle's data/watcher.db) worth committing over OLD (the committed one)?

    Exit 0, printing why, when the state changed (or --every has passed); exit 1 when only
    per-cycle bookkeeping changed. The GitHub Actions workflow calls it before committing.

    Example: watcher db-changed --every 6h committed.db data/watcher.db
    """
    from watcher.config.reader import parse_duration
    from watcher.onboard.dbchanged import decide

    try:
        every_s = parse_duration(every) if every is not None else None
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--every") from None
    try:
        worth, why = decide(old, new, every_s)
    except sqlite3.Error as e:
        err = WatcherError(f"{old} or {new}: not a readable watcher database: {e}")
        err.exit_code = 2  # 1 means "quiet": a broken file must not read as one
        raise err from None
    click.echo(why)
    sys.exit(0 if worth else 1)


def main() -> None:
    from watcher.core.token import hold

    hold()  # GITHUB_TOKEN leaves this process's environment (engines could read it there)
    cli(prog_name="watcher")


# ------------------------------------------------------------------ watcher pins (issue 30)


@cli.command()
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option("--check", is_flag=True, help="Resolve every pin and check it still exists, now.")
@click.option("--json", "as_json", is_flag=True, help="Print the pins as JSON.")
def pins(config_path: str, check: bool, as_json: bool) -> None:
    """List each recipe's pin: the build it runs, the commit that resolves to (and how), whether
    the build still exists, and which tracked fixes it carries or lacks.

    Without --check it reads the store (what the last cycle saw; liveness is checked on
    [smoke] pin_check_every, daily by default). --check asks GitHub and the registries now:
    about 3 requests per image on Docker Hub or GHCR (a 401, the pull token, the HEAD).

    Example: watcher pins --check
    """
    from watcher.core.clock import utcnow
    from watcher.github.client import open_client
    from watcher.judge.evaluate import evaluate
    from watcher.judge.pins import format_text, recipe_view
    from watcher.poll.pins import refresh_pins
    from watcher.store.db import Store

    cfg = _config(config_path)
    store = Store(cfg.db_path)
    try:
        now = utcnow()
        if check:
            with open_client(cfg) as client:
                refresh_pins(cfg, store, client, now, check=True)
        stored = store.pins()
        ev = evaluate(cfg, store.items(), store.evaluation_runs(), store.statuses(), now, stored)
    finally:
        store.close()
    views = {
        r.id: recipe_view(
            stored.get(r.id),
            {b: ev.blockers[b].status for b in r.blockers if b in ev.blockers},
            r.id,
        )
        for r in cfg.recipes
    }
    click.echo(
        json.dumps(views, indent=2, sort_keys=True)
        if as_json
        else terminal_safe(format_text(views))
    )


# ------------------------------------------------------------------ watcher bump (issue 30)


@cli.command()
@click.argument("recipe_id", shell_complete=_complete_ids(("recipes",)))
@click.option("--config", "config_path", default="watch.toml", show_default=True, help=CONFIG_HELP)
@click.option("--to", "to", metavar="BUILD", help="The build to move to (a release tag or image).")
@click.option("--dry-run", is_flag=True, help="Show the proposal and the launches; run nothing.")
@click.option(
    "--floor",
    type=click.FloatRange(0.01, 10.0),
    default=0.95,
    show_default=True,
    help="Decode speed of the new build at least this many times the old pin's.",
)
@click.option(
    "--rounds", type=click.IntRange(1, 10), default=2, show_default=True, help="Launches of each."
)
def bump(recipe_id: str, config_path: str, to, dry_run: bool, floor: float, rounds: int) -> None:
    """Propose moving RECIPE's pin to a newer build and, on this host, run the pin-bump gate.

    Without --to the new build is the newest release carrying a tracked fix the pin lacks, or,
    for a pin that is gone, the newest live release descending from it. The gate runs the recipe
    on the old pin and the new build, interleaved, 2 x --rounds launches counted against
    smoke.max_runs_per_day; the old pin is the baseline. The compose files are never edited.
    Exits 0 when the bump is ready, 1 otherwise.

    Example: watcher bump vllm-marlin --to v0.28.0 --dry-run
    """
    from watcher.bisect import bump as gate
    from watcher.bisect.search import runs_left_today
    from watcher.core.clock import utcnow
    from watcher.github.client import open_client
    from watcher.poll.registry import Registry
    from watcher.smoke.run import recipe_or_error
    from watcher.store.db import Store

    cfg = _config(config_path)
    recipe = recipe_or_error(cfg, recipe_id)
    store = Store(cfg.db_path)
    try:
        with open_client(cfg) as client, Registry() as registry:
            prop = gate.propose(cfg, store, recipe, client, registry, to)
        click.echo(terminal_safe(gate.proposal_text(prop)))
        plan = gate.plan(prop, floor, rounds)
        if dry_run:
            click.echo(
                f"would run {plan['launches']} launches, floor {floor}×; nothing run (--dry-run)"
            )
            for i, side, image in plan["order"]:
                click.echo(f"  round {i}: {side:<3} {image}")
            return
        if cfg.smoke.backend != "local":
            raise WatcherError("the gate runs on the GPU host itself (smoke.backend = local)")
        out = gate.run_gate(
            cfg, store, recipe, prop, floor=floor, rounds=rounds,
            left=runs_left_today(cfg, store, utcnow()),
            progress=lambda m: click.echo(m, err=True),
        )  # fmt: skip
    finally:
        store.close()
    click.echo(terminal_safe(out["text"]))
    from watcher.publish.site import build_site

    try:  # the verdict is stored whatever happens here; pages follow on the next cycle
        build_site(cfg)
    except (WatcherError, OSError) as e:
        click.echo(f"warning: the site was not rebuilt: {e}", err=True)
    sys.exit(0 if out["state"] == "ready" else 1)
