"""`watcher demo`: the whole loop, offline, in a fresh folder, in under a minute.

It starts the project's own fake GitHub (seeded like the real threads) and the fake engine, runs
three cycles (the world before, after an upstream change, after a smoke run), builds the site and
shows the comment it would post. Nothing leaves 127.0.0.1. The smoke run never reads this host's GPUs: a
fake engine must never validate anything, so its run is recorded as off-target.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from watcher.config.load import default_config_text, load_config
from watcher.core.clock import utcnow
from watcher.core.errors import WatcherError
from watcher.fakes.github import FakeGitHub
from watcher.fakes.scenarios import SGLANG, VLLM, load, real_threads
from watcher.github.client import GitHubClient
from watcher.judge.evaluate import evaluate
from watcher.loop.cycle import run_cycle
from watcher.smoke.hardware import GpuReading
from watcher.store.db import Store

TRACKING = ("club-3090/guide", 1)
DEMO_TOKEN = "test-token"
_RECIPES = re.compile(r"\n# -+ recipes\n.*?(?=\n# -+ pages\n)", re.S)


def demo_config(url: str) -> str:
    """The default watch list, pointed at the fake, with recipes that launch the fake engine."""
    text = default_config_text()
    engine = [
        sys.executable,
        "-m",
        "watcher.fakes.engine",
        "--port",
        "{port}",
        "--ready-delay",
        "0.5",
    ]

    def recipe(rid: str, title: str, blockers: list[str], spec: bool) -> str:
        argv = engine + (["--accept-length", "2.4"] if spec else ["--metrics-style", "none"])
        return (
            f'\n[[recipe]]\nid = "{rid}"\ntitle = "{title}"\nengine = "sglang"\nmodel = "/models/demo"\n'
            f'port = {_free_port()}\nstartup_timeout = "60s"\nstop_timeout = "5s"\n'
            f"spec_decode = {'true' if spec else 'false'}\n"
            f"blockers = [{', '.join(repr(b).replace(chr(39), chr(34)) for b in blockers)}]\n"
            f'notes = "demo: the project\'s fake engine, not SGLang"\n'
            f"command = [{', '.join(_toml_str(a) for a in argv)}]\n"
            '[recipe.hardware]\ngpu_name = "RTX 3090"\n'
            '[recipe.checks]\nexpect = "Paris"\n'
            + (["", "min_accept_length = 1.5\n"][spec])
            + f"[recipe.env]\nPYTHONPATH = {_toml_str(os.pathsep.join(sys.path))}\n"
        )

    recipes = (
        "\n# ------------------------------------------------------------------ recipes\n"
        + recipe(
            "sglang-mtp-tp1",
            "Demo: fake engine, MTP",
            ["marlin-pad", "deltanet-rollback"],
            True,
        )
        + recipe(
            "sglang-eagle-tp1",
            "Demo: fake engine, EAGLE",
            ["marlin-pad", "deltanet-rollback", "eagle3-layer-capture"],
            True,
        )
        + recipe("sglang-nospec-tp1", "Demo: fake engine, no spec-decode", ["marlin-pad"], False)
    )
    text, n = _RECIPES.subn(lambda _m: recipes, text)
    if n != 1:
        raise WatcherError("demo: cannot find the recipes section of the default watch list")
    text = text.replace(
        "[watcher]\n",
        "[watcher]\n# The demo's own fake GitHub on 127.0.0.1, gone once the demo ended: delete this\n"
        "# line to watch the real GitHub (or start from `watcher init`).\n"
        f'github_api_url = "{url}"\n',
        1,
    )
    # In the demo's "before" world SGLang's own Marlin fix has not landed either: only look at
    # SGLang commits from after the seeded ones, so the Marlin blocker starts out blocked.
    text, n = re.subn(
        r'(id = "sglang-marlin"\n(?:.*\n)*?)since = "[^"]*"',
        r'\1since = "2026-07-01T00:00:00Z"',
        text,
        count=1,
    )
    if n != 1:
        raise WatcherError("demo: cannot find the sglang-marlin item of the default watch list")
    text = re.sub(
        r"\[notify\]\nenabled = false\n",
        f'[notify]\nenabled = false\nrepo = "{TRACKING[0]}"\nissue = {TRACKING[1]}\n',
        text,
    )
    return text


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _env(**values: str):
    """The demo talks to its own fake only: GitHub URL and token point there for its duration."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_demo(folder: Path, say: Callable[[str], None]) -> dict[str, Path]:
    """Run the loop in `folder` (new or empty); return where to look."""
    from watcher.notify.send import run_notify
    from watcher.smoke.run import record_run, run_recipe

    folder = folder.resolve()
    if folder.exists() and any(folder.iterdir()):
        raise WatcherError(f"{folder} is not empty; the demo needs a fresh folder")
    folder.mkdir(parents=True, exist_ok=True)
    with FakeGitHub() as gh, _env(GITHUB_API_URL=gh.url, GITHUB_TOKEN=DEMO_TOKEN):
        real_threads(gh)
        load(gh, "sglang_code")  # the files the code items read, as they stood in April 2026
        gh.add_issue(*TRACKING, title="SGLang on RTX 3090s: status")
        # the world before: the Marlin fix is not merged yet, and SGLang's loader fix is not in
        gh.update(VLLM, 45295, state="open", merged=False, merged_at=None, closed_at=None)
        config_path = folder / "watch.toml"
        config_path.write_text(demo_config(gh.url), encoding="utf-8")
        cfg = load_config(config_path)

        say(f"fake GitHub on {gh.url}; config {config_path}")
        first = run_cycle(cfg, client=GitHubClient(gh.url), no_smoke=True)
        say(f"cycle 1: {first.summary()}; page: {_page_status(first)}")

        say(
            "upstream change: SGLang's AutoRound loader keeps packed_modules_mapping; "
            "vllm#45295 merges too (a hint: it fixes vLLM's own Marlin copy)"
        )
        load(gh, "sglang_loader_fix")
        gh.update(
            VLLM,
            45295,
            state="closed",
            merged=True,
            merged_at="2026-06-12T12:00:00Z",
            closed_at="2026-06-12T12:00:00Z",
        )
        gh.add_release(SGLANG, "v0.6.1", published_at="2026-07-20T00:00:00Z")
        second = run_cycle(cfg, client=GitHubClient(gh.url), no_smoke=True)
        say(f"cycle 2: {second.summary()}; page: {_page_status(second)}")
        for e in second.events:
            say(f"  event: {e['message']}")

        store = Store(cfg.db_path)
        try:
            now = utcnow()
            ev = evaluate(
                cfg, store.items(), store.smoke_runs(), store.statuses(), now, store.pins()
            )
            result = run_notify(cfg, store, ev, now=now, dry_run=True)
        finally:
            store.close()
        say(f"comment dry run on {TRACKING[0]}#{TRACKING[1]} (nothing posted):")
        for action in result.actions:
            say("  " + action.line(True))
        for err in result.errors:
            say(f"  error: {err}")
        recipe = cfg.recipe("sglang-nospec-tp1")
        no_gpu = GpuReading(gpus=(), source="none", error="demo: this host's GPUs are not read")
        doc = run_recipe(cfg, recipe, any_hardware=True, reading=no_gpu)
        store = Store(cfg.db_path)
        try:
            record_run(store, doc)
        finally:
            store.close()
        say(f"smoke run {doc['run_id']}: {doc['outcome']} — {doc['reason']}")

        third = run_cycle(cfg, client=GitHubClient(gh.url), no_smoke=True)
        say(f"cycle 3: {third.summary()}; page: {_page_status(third)}")

    return {
        "page": cfg.resolve(cfg.page("sglang").output),
        "site": cfg.site_dir / "index.html",
        "status": cfg.site_dir / "status.json",
        "config": config_path,
    }


def _page_status(report) -> str:
    return ", ".join(f"{p} {v['status']}" for p, v in report.pages.items())


def replay_backtest(
    cfg,
    folder: Path,
    ids: tuple[str, ...] = (),
    since: str | None = None,
    as_of: tuple[str, ...] = (),
    show_unmatched: bool = False,
) -> dict:
    """`watcher backtest --replay tests/history`: the watch list's rules over recorded history,
    offline. The record is served by the project's replaying fake GitHub on 127.0.0.1, the
    ETag cache lives in a throwaway folder (the real store is never touched), and without
    --since/--as-of the replay spans the record (from when every repository in it is recorded),
    judged at each month's end and at the cut."""
    import dataclasses
    import tempfile
    from datetime import timedelta

    from watcher.fakes.history import History
    from watcher.fakes.replay import ReplayGitHub
    from watcher.poll.backtest import run_backtest

    if not Path(folder).is_dir():
        raise WatcherError(
            f"{folder}: no such folder of recorded history. The recorded history ships only in "
            "watcher's source repository (tests/history in a clone of it, not in the installed "
            "package): run `watcher backtest --replay PATH/TO/watcher/tests/history` from a clone, "
            "or `watcher backtest` without --replay to read GitHub itself"
        )
    history = History.load(folder)
    if not history.repos:
        raise WatcherError(f"{folder}: no recorded repositories in it (<owner>__<name>.json.gz)")
    first = max(r.since for r in history.repos.values())  # every repository is recorded since
    cut = max(r.until for r in history.repos.values())
    since = since or first.strftime("%Y-%m-%d")
    if not as_of:
        dates, day = [], first.replace(day=1)
        while True:
            nxt = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
            end = nxt - timedelta(days=1)
            if end.date() >= cut.date():
                break
            if end.strftime("%Y-%m-%d") >= since:
                dates.append(end.strftime("%Y-%m-%d"))
            day = nxt
        as_of = (*dates, cut.strftime("%Y-%m-%dT%H:%M:%SZ"))
    with tempfile.TemporaryDirectory(prefix="watcher-replay-") as tmp:
        settings = dataclasses.replace(cfg.settings, data_dir=tmp)
        throwaway = dataclasses.replace(cfg, settings=settings)
        with ReplayGitHub(history=history) as gh, _env(GITHUB_API_URL=gh.url):
            with GitHubClient(gh.url, token=DEMO_TOKEN, timeout=30) as client:
                doc = run_backtest(throwaway, ids, since, as_of, show_unmatched, client=client)
    doc["replay"] = {"folder": str(folder), "recorded_until": cut.strftime("%Y-%m-%dT%H:%M:%SZ")}
    return doc
