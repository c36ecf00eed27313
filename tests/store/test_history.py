"""Item history kept as spans while observations arrive, and the bounded reads of the site.

The reference is the old read path: fold every observation (`site.state_spans`), decode every
smoke run, filter every event in Python. The new one must give the same answers and the same site.
"""

from __future__ import annotations

import json
import random
import sqlite3
from datetime import timedelta

import sqlite_utils
from kits.site_seed import make_config, seed

from watcher.judge.evaluate import latest_target_runs
from watcher.publish import site as site_module
from watcher.publish.site import render_site, state_spans
from watcher.store.db import Store
from watcher.store.schema import migrations

OLD_INSERT = (
    "INSERT INTO observations (item_id, cycle_id, observed_at, state, title, fingerprint, data,"
    " error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def random_observations(n: int, seed_: int = 7):
    """Interleaved items; repeats, errors, fingerprint-only changes, null data and odd values."""
    rnd = random.Random(seed_)
    for i in range(n):
        item = rnd.choice(["a", "b", "c"])
        error = "HTTP 502" if rnd.random() < 0.1 else None
        state = None if error else rnd.choice(["open", "open", "merged", None])
        fp = None if error else rnd.choice(["f1", "f1", "f2"])
        data = rnd.choice(
            [None, {}, {"superseded_by": 7, "superseded_state": "merged"}, {"in_release": "v1"}]
        )
        title = rnd.choice(["T", "T", "T2", None])
        yield (
            item,
            i,
            f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
            state,
            title,
            fp,
            data,
            error,
        )


def reference(store: Store, item: str, limit: int) -> list[dict]:
    return state_spans(store.observations(item))[:limit]


def test_existing_database_is_backfilled_then_kept_incrementally(tmp_path):
    path = tmp_path / "watcher.db"
    conn = sqlite3.connect(path, isolation_level=None)
    db = sqlite_utils.Database(conn)
    migrations.apply(db, stop_before="m040_state_spans")  # a database from before the spans
    rows = list(random_observations(600))
    for item, cycle, at, state, title, fp, data, error in rows[:400]:
        db.execute(OLD_INSERT, (item, cycle, at, state, title, fp, json.dumps(data), error))
    conn.close()

    store = Store(path)  # migrates: folds the 400 stored observations
    try:
        for item in "abc":
            assert store.state_spans(item, 1000) == reference(store, item, 1000)
            assert len(reference(store, item, 1000)) > 20
        for item, cycle, at, state, title, fp, data, error in rows[400:]:
            store.add_observation(item, cycle, at, state, title, fp, data, error)
        for item in "abc":
            assert store.state_spans(item, 1000) == reference(store, item, 1000)
            assert store.state_spans(item, 5) == reference(store, item, 5)
        assert store.state_spans("nothing", 10) == []
    finally:
        store.close()


def test_bounded_reads_answer_like_the_full_ones(tmp_path):
    cfg = make_config(tmp_path)
    seed(cfg)
    store = Store(cfg.db_path)
    try:
        runs = store.smoke_runs()
        assert len(runs) > 3
        mine = {r["recipe"]: r for r in store.evaluation_runs()}
        assert mine == latest_target_runs(runs)
        assert store.count_smoke_runs() == len(runs)
        events = store.events()
        subjects = {e["subject"] for e in events[::2]}
        for lo, hi, limit in ((0, None, None), (2, len(events) - 1, 3), (0, 5, 30)):
            want = [e for e in store.events(after=lo, upto=hi) if e["subject"] in subjects]
            assert store.events(lo, hi, limit, subjects) == want[:limit]
    finally:
        store.close()


def _old_reads(monkeypatch):
    """The read path as it was: every observation folded, every run decoded, events filtered."""
    monkeypatch.setattr(Store, "state_spans", lambda self, i, limit: reference(self, i, limit))
    monkeypatch.setattr(Store, "evaluation_runs", lambda self: self.smoke_runs())
    monkeypatch.setattr(Store, "count_smoke_runs", lambda self: len(self.smoke_runs()))
    full_events = Store.events

    def events(self, after=0, upto=None, limit=None, subjects=None):
        rows = full_events(self, after, upto)
        rows = [e for e in rows if subjects is None or e["subject"] in subjects]
        return rows[:limit] if limit else rows

    monkeypatch.setattr(Store, "events", events)


def test_site_is_the_same_as_with_the_old_reads(tmp_path, monkeypatch):
    cfg = make_config(tmp_path)
    last = seed(cfg, hostile=True)
    store = Store(cfg.db_path)
    try:  # more history than an item page shows, so the limit matters
        for n in range(40):
            at = (last + timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
            state = "open" if n % 3 else None
            store.add_observation(
                "vllm-40361",
                None,
                at,
                state,
                f"title {n % 2}",
                state,
                {"in_release": None},
                None if state else "HTTP 502",
            )
    finally:
        store.close()
    monkeypatch.setattr(site_module, "HISTORY_LIMIT", 7)
    now = last + timedelta(hours=1)
    store = Store(cfg.db_path)
    try:
        new = render_site(cfg, store, now=now)
        with monkeypatch.context() as m:
            _old_reads(m)
            old = render_site(cfg, store, now=now)
    finally:
        store.close()
    assert sorted(new) == sorted(old)
    for name in new:
        assert new[name] == old[name], name
    assert new["item/vllm-40361.html"].count("<tr>") >= 7


def test_item_page_shows_the_newest_spans_and_counts_the_older_ones(tmp_path):
    """What a page shows is bounded by HISTORY_LIMIT, not by the database's age."""
    cfg = make_config(tmp_path)
    last = seed(cfg)
    limit = site_module.HISTORY_LIMIT
    store = Store(cfg.db_path)
    try:
        for n in range(limit + 12):  # an error every other check: every observation is a span
            at = (last + timedelta(minutes=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
            error = None if n % 2 else "HTTP 502"
            store.add_observation(
                "vllm-40361", None, at, None if error else "open", "t", "f", {}, error
            )
        total = len(store.state_spans("vllm-40361", 10_000))
        assert total > limit
        pages = render_site(cfg, store, now=last + timedelta(hours=1))
    finally:
        store.close()
    page = pages["item/vllm-40361.html"]
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert body.count("<tr>") == limit
    assert f"The newest {limit} spans are shown; {total - limit} older spans are kept" in page
    assert "WHERE item_id = 'vllm-40361' ORDER BY id DESC" in page
    others = [p for name, p in pages.items() if name.startswith("item/") and "40361" not in name]
    assert others and not any("older spans are kept" in p for p in others)
