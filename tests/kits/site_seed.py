"""A realistic database for the status-site tests: real cycles, real Store inserts.

Not a test module: test_site.py and test_site_browser.py import it.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from watcher.config.load import load_config
from watcher.config.model import Config
from watcher.core.clock import iso
from watcher.loop.cycle import run_cycle
from watcher.store.db import Store

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
HOSTILE = (
    '<script>alert("title")</script><img src=x onerror=alert(1)> '
    "[click me](javascript:alert(2)) \x07bell\x1b[31m"
)


def make_config(tmp_path: Path) -> Config:
    shutil.copy(REPO / "watch.toml", tmp_path / "watch.toml")
    return load_config(tmp_path / "watch.toml")


def _item(cfg: Config, item_id: str, at: str, **row) -> dict | None:
    try:
        item = cfg.item(item_id)
    except KeyError:  # a trimmed watch list (the reader page's length test): not seeded
        return None
    base = {
        "id": item.id,
        "repo": item.repo,
        "kind": item.kind,
        "number": item.number,
        "label": item.label,
        "title": None,
        "state": None,
        "url": f"https://github.com/{item.repo}"
        + (f"/issues/{item.number}" if item.number else ""),
        "superseded_by": None,
        "superseded_state": None,
        "in_release": None,
        "details": {},
        "fingerprint": f"{item_id}-{row.get('state')}",
        "stale": False,
        "error": None,
        "moved_to": None,
        "checked_at": at,
        "changed_at": at,
        "updated_at": at,
    }
    base.update(row)
    return base


def smoke_doc(n: int, recipe: str, started: datetime, **over) -> dict:
    doc = {
        "run_id": f"run-{n:04d}",
        "recipe": recipe,
        "outcome": "failed",
        "signature": "marlin-tile-n",
        "blockers_reproduced": ["marlin-pad"],
        "reason": "server died at startup: size_n = 96 is not divisible by tile_n_size = 64",
        "hardware": {
            "gpus": [
                {
                    "name": "NVIDIA GeForce RTX 3090",
                    "memory_mib": 24576,
                    "compute_capability": "8.6",
                }
            ],
            "matches_target": True,
        },
        "engine_version": "sglang 0.5.6",
        "metrics": {
            "startup_s": 80.0 + n,
            "ttft_s": 0.4,
            "decode_tokens_per_s": 30.0 + 2 * n,
            "accept_length": 1.6 + 0.1 * n if recipe == "sglang-eagle-tp1" else None,
        },
        "log_path": f"data/runs/run-{n:04d}.log",
        "started_at": iso(started),
        "finished_at": iso(started + timedelta(minutes=9)),
        "stage_reached": "launch",
        "excerpt": "RuntimeError: size_n = 96 is not divisible by tile_n_size = 64",
    }
    doc.update(over)
    return doc


def seed(cfg: Config, hostile: bool = False) -> datetime:
    """Two offline cycles around a week of stored history. Returns the last cycle's time."""
    run_cycle(cfg, offline=True, now=T0)
    store = Store(cfg.db_path)
    try:
        with store.transaction():
            history = [
                (T0 + timedelta(days=1), "open", None),
                (T0 + timedelta(days=2), None, "HTTP 502 from GitHub"),
                (T0 + timedelta(days=3), "closed", None),
            ]
            for at, state, error in history:
                store.add_observation(
                    "vllm-40361",
                    None,
                    iso(at),
                    state,
                    "[Kernel] Marlin: pad size_n to tile_n",
                    None if error else f"fp-{state}",
                    {"superseded_by": 45295 if state == "closed" else None},
                    error,
                )
            checked = iso(T0 + timedelta(days=3))
            title = HOSTILE if hostile else "[RFC]: DeltaNet KV rollback for speculative decoding"
            rows = [
                _item(
                    cfg,
                    "vllm-40361",
                    checked,
                    title="[Kernel] Marlin: pad size_n to tile_n",
                    state="closed",
                    superseded_by=45295,
                    superseded_state="merged",
                    in_release="v0.24.0",
                ),
                _item(
                    cfg,
                    "vllm-39931",
                    checked,
                    title="[Quant] TurboQuant KV cache compression",
                    state="merged",
                ),
                _item(cfg, "vllm-40124", checked, title=title, state="open"),
                _item(
                    cfg,
                    "fla-rollback",
                    checked,
                    title="fla-org/flash-linear-attention commits",
                    state="no-match",
                    stale=True,
                    error="HTTP 503 from GitHub (kept the last known state)",
                ),
                _item(
                    cfg,
                    "sglang-marlin",
                    checked,
                    title="sgl-project/sglang commits",
                    state="matched",
                    details={
                        "matched": 1,
                        "commits": [
                            {
                                "sha": "0123456789abcdef0123",
                                "date": checked,
                                "subject": HOSTILE if hostile else "Pad Marlin size_n to tile_n",
                                "url": "javascript:alert(3)"
                                if hostile
                                else "https://github.com/sgl-project/sglang/commit/0123456789",
                            }
                        ],
                    },
                ),
                _item(
                    cfg, "sglang-gdn", checked, title="sgl-project/sglang commits", state="no-match"
                ),
                _item(cfg, "sglang-releases", checked, title="v0.5.6", state="v0.5.6"),
            ]
            for row in rows:
                if row:
                    store.upsert_item(row)
            store.add_event(
                checked,
                None,
                "item",
                "vllm-40124",
                None,
                "open",
                f"now tracking vllm-project/vllm#40124 “{title}”: open",
            )
            for n in range(6):
                recipe = "sglang-eagle-tp1" if n % 2 else "sglang-nospec-tp1"
                over = {}
                if hostile and n == 5:
                    over = {"reason": HOSTILE, "excerpt": HOSTILE + "\n</code></pre><b>x</b>"}
                store.add_smoke_run(smoke_doc(n, recipe, T0 + timedelta(hours=12 * n), **over))
            store.add_smoke_run(
                smoke_doc(
                    6,
                    "sglang-nospec-tp1",
                    T0 + timedelta(days=3, hours=1),
                    outcome="passed",
                    signature=None,
                    blockers_reproduced=[],
                    reason="all checks passed",
                    stage_reached="passed",
                    hardware={
                        "gpus": [
                            {
                                "name": "NVIDIA H200",
                                "memory_mib": 143771,
                                "compute_capability": "9.0",
                            }
                        ],
                        "matches_target": False,
                    },
                    excerpt="",
                )
            )
    finally:
        store.close()
    last = T0 + timedelta(days=3, hours=2)
    run_cycle(cfg, offline=True, now=last)
    return last
