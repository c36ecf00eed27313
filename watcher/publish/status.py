"""status.json: the contract other tools read, written beside the site by the cycle.

Its upstream text (titles, reasons, evidence, smoke-run text) is made one line and bounded by
core.text's rule; links are kept only when they are http(s).
"""

from __future__ import annotations

from typing import Any

from watcher.config.model import Config
from watcher.core.clock import parse_iso
from watcher.core.text import one_line, safe_url
from watcher.judge.evaluate import Evaluation
from watcher.judge.fresh import freshness
from watcher.judge.pins import recipe_view
from watcher.judge.views import item_view
from watcher.publish import prose

# upstream text in status.json, and how much of each is kept (the page keeps as much or less)
UPSTREAM_FIELDS = {
    "title": 300,
    "mislabel": 300,
    "error": 500,
    "moved_to": 500,
    "in_release": 120,
    "state": 120,
}


def status_document(
    cfg: Config,
    items: dict[str, dict],
    ev: Evaluation,
    cycle: dict[str, Any] | None,
    runs: list[dict[str, Any]],
    generated_at: str,
    *,
    attempt: dict[str, Any] | None = None,
    triggers: dict[str, dict[str, Any]] | None = None,
    pins: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The contract other tools read (site/status.json).

    `runs.last_successful_read` (the newest item read without error) is kept apart from
    `runs.last_attempt` (when GitHub was last asked, and whether every read failed); the
    heartbeat (`stale_at`) counts from the last successful read, so a cycle that reads nothing
    never looks like a fresh check.
    """
    blockers = []
    for b in cfg.blockers:
        st = ev.blockers[b.id]
        blockers.append(
            {
                "id": b.id,
                "title": b.title,
                "status": st.status,
                "reason": _plain(st.reason, 500),
                "stale": st.stale,
                "items": list(b.items),
                "watch": list(b.watch),
                "rule": b.rule,
                "signatures": list(b.signatures),
                "evidence": list(st.evidence),
                "override": st.override,
                "hints": [dict(h) for h in st.hints],
                "hints_trigger_smoke": b.hints_trigger_smoke,
            }
        )
    last_read = max((r["checked_at"] for r in items.values() if r.get("checked_at")), default=None)
    # before the first good read there is one state, with its why, on every view
    not_checked = None if last_read or runs else prose.unread_reason(items, attempt)
    pages = [
        {
            "id": p.id,
            "not_checked_yet": not_checked,
            "title": p.title,
            "status": ev.pages[p.id].status,
            "reason": _plain(ev.pages[p.id].reason, 500),
            "output": p.output,
            "blockers": list(p.blockers),
            "recipes": list(p.recipes),
            "parked": ev.pages[p.id].parked,
            "override": ev.pages[p.id].override,
            "comparison": ev.pages[p.id].comparison,
        }
        for p in cfg.pages
    ]
    views = [item_view(cfg, i.id, items.get(i.id)) for i in cfg.items]
    for v in views:
        v.pop("details")
        for key, limit in UPSTREAM_FIELDS.items():
            v[key] = _plain(v.get(key), limit)
        # evidence lines, warnings and the summary carry upstream text too (file lines, commit
        # subjects, paths): made plain and bounded like titles, links kept only when safe
        v["summary"] = _plain(v.get("summary"), 500)
        v["warnings"] = [_plain(w, 500) for w in v.get("warnings") or []]
        v["evidence"] = _plain_tree(v.get("evidence"))
        if safe_url(v["url"]) == "#":
            v["url"] = cfg.item(v["id"]).html_url
    last = cycle or {}
    return {
        "generated_at": generated_at,
        "pages": pages,
        "blockers": blockers,
        "items": views,
        "pins": pin_views(cfg, ev, pins or {}),
        "runs": {
            "last_cycle": {
                k: last.get(k)
                for k in (
                    "id",
                    "started_at",
                    "finished_at",
                    "mode",
                    "items",
                    "changes",
                    "requests",
                    "not_modified",
                    "errors",
                    "duration_s",
                    "rate_remaining",
                    "rate_limit",
                )
            }
            if last
            else None,
            "last_checked": last_read,
            "last_successful_read": last_read,
            "last_attempt": dict(attempt) if attempt else None,
            "interval_s": cfg.settings.interval,
            # Heartbeat contract for readers of a static copy (the site): when now is past
            # stale_at, checks have stopped (nothing was read for stale_after x interval).
            "stale_after_s": cfg.settings.stale_after * cfg.settings.interval,
            "stale_at": freshness(cfg, last_read, parse_iso(generated_at)).stale_at,
            "pending_smoke": [
                {
                    k: t.get(k)
                    for k in (
                        "recipe",
                        "state",
                        "reasons",
                        "since",
                        "run_id",
                        "actions_run_id",
                        "note",
                        "attempts",
                    )
                }
                for t in (triggers or {}).values()
            ],
            "smoke": [
                {
                    k: r.get(k)
                    for k in (
                        "run_id",
                        "recipe",
                        "outcome",
                        "signature",
                        "blockers_reproduced",
                        "reason",
                        "hardware",
                        "engine_version",
                        "metrics",
                        "started_at",
                        "finished_at",
                    )
                }
                for r in (_shown_run(r) for r in runs[:20])
            ],
        },
    }


def pin_views(
    cfg: Config, ev: Evaluation, pins: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """recipe -> its pin as `watcher pins --json` shows it (watcher.judge.pins), registry and
    upstream text made plain; the registry's ETag is watcher's own bookkeeping and left out."""
    out = {}
    for r in cfg.recipes:
        statuses = {b: ev.blockers[b].status for b in r.blockers if b in ev.blockers}
        view = recipe_view(pins.get(r.id), statuses, r.id)
        view["liveness"] = {k: v for k, v in (view.get("liveness") or {}).items() if k != "etag"}
        out[r.id] = _plain_tree(view)
    return out


def _plain(text: Any, limit: int) -> str | None:
    return None if text is None else one_line(text, limit)


def _plain_tree(value: Any, key: str = "") -> Any:
    """Every string of an evidence structure made plain (500 characters); URLs kept if safe."""
    if isinstance(value, dict):
        return {k: _plain_tree(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_tree(v, key) for v in value]
    if isinstance(value, str):
        if key == "url" or key.endswith("_url"):
            return value if safe_url(value) != "#" else None
        return one_line(value, 500)
    return value


def _shown_run(run: dict[str, Any]) -> dict[str, Any]:
    """A smoke run for status.json: the text it carries from engines and runners made plain."""
    run = dict(run)
    for key in ("reason", "engine_version", "signature"):
        run[key] = _plain(run.get(key), 500 if key == "reason" else 120)
    return run
