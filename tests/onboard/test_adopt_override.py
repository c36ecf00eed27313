"""A hand-kept page that says blocked, experimental or validated with a date is adopted as a
maintainer's `[page.override]`: the first generated page says that status as the maintainers'
word, and once watcher's own evidence differs, every view says both (the page, the site,
status.json, `explain` and the sticky comment)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from watcher.cli import cli
from watcher.config.load import load_config, parse_config
from watcher.core.errors import ConfigError
from watcher.judge.evaluate import evaluate
from watcher.notify.plan import Bodies
from watcher.onboard.adopt import with_override
from watcher.onboard.adopt_plan import hand_status
from watcher.store.db import Store

PAGE = "docs/engines/ENGINE.md"
HAND = """# Engine — two cards, validated

The engine runs the dual-card recipe of this guide.

**Status (2026-06-02): VALIDATED** on 2× RTX 3090 at 41 tok/s decode with v0.5.12. Use TP=2.

## What we ship

- `models/qwen/engine/compose/dual/awq/eagle3.yml`, pinned to v0.5.12.
"""
CONFIG = """[watcher]
data_dir = "data"
site_dir = "site"

[[item]]
id = "fix-pr"
repo = "up/engine"
kind = "pull"
number = 5
label = "the loader fix"

[[blocker]]
id = "crash"
title = "Crash on load"
items = ["fix-pr"]
signatures = ["marlin-tile-n"]

[[signature]]
id = "marlin-tile-n"
pattern = "size_n = \\\\d+ is not divisible"

[[recipe]]
id = "r1"
engine = "sglang"
command = ["python", "-m", "engine", "--port", "{port}"]
blockers = ["crash"]

[[page]]
id = "eng"
title = "Engine"
output = "docs/engines/ENGINE.md"
fragments = "fragments/eng"
blockers = ["crash"]
recipes = ["r1"]
"""


def invoke(args, root: Path, monkeypatch):
    monkeypatch.chdir(root)
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def guide(tmp_path: Path, hand: str = HAND) -> Path:
    (tmp_path / "watch.toml").write_text(CONFIG, encoding="utf-8")
    page = tmp_path / PAGE
    page.parent.mkdir(parents=True)
    page.write_text(hand, encoding="utf-8")
    return page


def add_failed_run(cfg) -> None:
    store = Store(cfg.db_path)
    try:
        store.add_smoke_run(
            {
                "run_id": "run-1",
                "recipe": "r1",
                "outcome": "failed",
                "signature": "marlin-tile-n",
                "stage_reached": "launch",
                "reason": "crashed at load",
                "hardware": {"matches_target": True, "gpus": [{"name": "NVIDIA GeForce RTX 3090"}]},
                "started_at": "2026-11-30T11:00:00Z",
                "finished_at": "2026-11-30T11:00:30Z",
                "excerpt": "ValueError: size_n = 96 is not divisible by tile_n_size = 64",
            }
        )
    finally:
        store.close()


@pytest.mark.parametrize(
    ("said", "status", "headline"),
    [
        ("VALIDATED", "validated", "validated on an RTX 3090, as the maintainers say"),
        ("Experimental", "ready-to-test", "ready to test, as the maintainers say"),
        ("blocked", "blocked", "blocked, as the maintainers say"),
    ],
)
def test_the_pages_own_dated_status_is_the_first_generated_pages(
    tmp_path, monkeypatch, said, status, headline
):
    page = guide(tmp_path, HAND.replace("VALIDATED", said))
    r = invoke(["init", "--adopt", PAGE, "."], tmp_path, monkeypatch)
    assert r.exit_code == 0, r.output
    assert f"set the page's status to {status} in watch.toml ([page.override])" in r.stderr
    o = load_config(tmp_path / "watch.toml").pages[0].override
    assert (o.status, o.since) == (status, date(2026, 6, 2))
    assert o.reason == "on 2× RTX 3090 at 41 tok/s decode with v0.5.12"
    new = page.read_text(encoding="utf-8")
    assert new.startswith(f"# Engine — {headline}")  # nothing read yet: no "watcher saw"
    assert "🗣️ Set by the maintainers since 2026-06-02" in new
    assert f"**Status (2026-06-02): {said}** on 2× RTX 3090" in new  # the hand paragraph, kept
    assert "watcher saw" not in new and "Watcher's own evidence" not in new
    r = invoke(["check-now", "--offline"], tmp_path, monkeypatch)
    status_json = json.loads((tmp_path / "site" / "status.json").read_text())
    (shown,) = status_json["pages"]
    assert shown["status"] == status and shown["override"]["since"] == "2026-06-02"
    assert shown["override"]["by"] == "maintainer"
    # adopting again changes nothing: the override is there already
    r = invoke(["init", "--adopt", PAGE, "--dry-run", "."], tmp_path, monkeypatch)
    assert "already written by watcher" in r.stderr


def test_when_watchers_evidence_differs_every_view_says_both(tmp_path, monkeypatch):
    page = guide(tmp_path)
    assert invoke(["init", "--adopt", PAGE, "."], tmp_path, monkeypatch).exit_code == 0
    cfg = load_config(tmp_path / "watch.toml")
    add_failed_run(cfg)  # on target hardware, after the maintainers validated it: regressed
    invoke(["check-now", "--offline"], tmp_path, monkeypatch)
    new = page.read_text(encoding="utf-8")
    assert new.startswith(
        "# Engine — validated on an RTX 3090, as the maintainers say; watcher saw regressed"
    )
    assert "Watcher's own evidence says **regressed**: was validated; r1 now failed" in new
    assert "**Status (2026-06-02): VALIDATED**" in new  # the maintainers' paragraph stays
    assert "Crash on load" in new  # the blocker and its evidence stay on the page
    site = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "as the maintainers say; watcher saw regressed" in site
    assert 'Validated since <time datetime="2026-06-02">' in site  # the maintainers' day
    (shown,) = json.loads((tmp_path / "site" / "status.json").read_text())["pages"]
    assert shown["status"] == "validated"
    assert shown["override"]["evidence"]["status"] == "regressed"
    assert "watcher's evidence says regressed: was validated; r1 now failed" in shown["reason"]
    r = invoke(["explain", "eng"], tmp_path, monkeypatch)
    assert "OVERRIDE by maintainer: validated — on 2× RTX 3090" in r.output
    assert (
        "watcher's own evidence: regressed — was validated; r1 now failed (marlin-tile-n)"
        in r.output
    )
    doc = json.loads(invoke(["explain", "eng", "--json"], tmp_path, monkeypatch).output)
    assert doc["pages"][0]["override"]["evidence"]["status"] == "regressed"
    store = Store(cfg.db_path)
    try:
        items, runs, statuses = store.items(), store.smoke_runs(limit=200), store.statuses()
    finally:
        store.close()
    from watcher.core.clock import utcnow

    ev = evaluate(cfg, items, runs, statuses, utcnow(), {})
    body = Bodies(cfg, ev, items, runs, statuses).status(cfg.pages[0])
    assert "## Engine: validated alternative, as the maintainers say; watcher saw regressed" in body
    assert "🗣️ Set by the maintainers since 2026-06-02: **validated**" in body
    assert "**validated** since 2026-06-02 —" in body  # the status line says the maintainers' day
    assert "Watcher's own evidence says **regressed**" in body


def test_an_expired_override_gives_the_page_back_to_the_evidence(tmp_path, monkeypatch):
    guide(tmp_path)
    text = (
        CONFIG + '\n[page.override]\nstatus = "validated"\nreason = "by hand"\nuntil = 2026-01-01\n'
    )
    (tmp_path / "watch.toml").write_text(text, encoding="utf-8")
    cfg = load_config(tmp_path / "watch.toml")
    add_failed_run(cfg)
    store = Store(cfg.db_path)
    try:
        ev = evaluate(cfg, store.items(), store.smoke_runs(limit=200), {}, utcnow_(), {})
    finally:
        store.close()
    assert ev.pages["eng"].status == "blocked" and ev.pages["eng"].override is None
    assert "reproduces" in ev.pages["eng"].reason


def utcnow_():
    from datetime import UTC, datetime

    return datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_override_key_errors_name_the_key_and_the_file(tmp_path):
    path = tmp_path / "watch.toml"
    bad = CONFIG + '\n[page.override]\nstatus = "parked"\nreason = "x"\n'
    with pytest.raises(ConfigError, match=r"watch.toml: \[page\[0\].override\] key 'status'"):
        parse_config(bad, path)
    both = (
        CONFIG
        + '\n[page.park]\nreason = "x"\n\n[page.override]\nstatus = "validated"\nreason = "y"\n'
    )
    with pytest.raises(ConfigError, match=r"cannot stand beside \[page.park\]"):
        parse_config(both, path)
    with pytest.raises(ConfigError, match=r"override\] key 'reason': is required"):
        parse_config(CONFIG + '\n[page.override]\nstatus = "blocked"\n', path)


def test_with_override_places_the_table_under_its_page_and_keeps_every_other_line(tmp_path):
    st = hand_status("**Status (2026-06-02): VALIDATED** on two cards. More words.")
    assert st is not None and st.word == "validated"
    text = CONFIG + "\n[notify]\nenabled = false  # kept\n"
    new = with_override(text, "eng", st, tmp_path / "watch.toml")
    assert new.startswith(text.split("\n[notify]")[0])
    assert new.endswith("\n[notify]\nenabled = false  # kept\n")
    o = parse_config(new, tmp_path / "watch.toml").pages[0].override
    assert (o.status, o.reason, o.since) == ("validated", "on two cards", date(2026, 6, 2))


def test_the_hand_h1_stays_under_the_headline_while_the_status_agrees(tmp_path, monkeypatch):
    page = guide(tmp_path)
    r = invoke(["init", "--adopt", PAGE, "."], tmp_path, monkeypatch)
    assert "the title 'Engine — two cards, validated' is the line under" in r.stderr
    assert (tmp_path / "fragments" / "eng" / "title-validated.md").is_file()
    lines = page.read_text(encoding="utf-8").splitlines()
    assert (
        lines[0].startswith("# Engine — validated")
        and lines[2] == "*Engine — two cards, validated*"
    )
    # the maintainers drop their override; watcher's evidence says blocked: a title that says
    # validated would contradict the headline, so it is not shown (its fragment stays)
    config = tmp_path / "watch.toml"
    config.write_text(config.read_text().split("\n[page.override]")[0] + "\n")
    add_failed_run(load_config(config))
    invoke(["check-now", "--offline"], tmp_path, monkeypatch)
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Engine — blocked") and "two cards, validated*" not in text
    assert (tmp_path / "fragments" / "eng" / "title-validated.md").is_file()
    # a title that names no status is always shown
    (tmp_path / "fragments" / "eng" / "title.md").write_text("Engine — our main road\n")
    invoke(["check-now", "--offline"], tmp_path, monkeypatch)
    assert page.read_text(encoding="utf-8").splitlines()[2] == "*Engine — our main road*"


def test_dry_run_shows_the_override_and_writes_nothing(tmp_path, monkeypatch):
    page = guide(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    r = invoke(["init", "--adopt", PAGE, "--dry-run", "."], tmp_path, monkeypatch)
    assert r.exit_code == 0, r.output
    assert "would set the page's status to validated in watch.toml ([page.override])" in r.stderr
    assert "+[page.override]  # the hand-kept page's own status" in r.output
    assert '+status = "validated"' in r.output and "+since = 2026-06-02" in r.output
    assert "+# Engine — validated on an RTX 3090, as the maintainers say" in r.output
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before and page.read_text(encoding="utf-8") == HAND
