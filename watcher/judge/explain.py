"""`watcher explain`: the chain of evidence behind a status, so every claim can be traced.

page -> recipes -> blockers -> items (title, state, superseding PR, release, matching commits or
lines of code, warnings) and hints -> latest smoke runs (outcome, signature, hardware, date) ->
overrides, with links. Built from the store only.
"""

from __future__ import annotations

from typing import Any

from watcher.config.model import Config
from watcher.core.errors import WatcherError
from watcher.judge.evaluate import Evaluation, latest_target_runs
from watcher.judge.pins import carried_by, pin_name, proposed_text, recipe_view, successor_phrase
from watcher.judge.views import item_view


def _runs_for(runs: list[dict[str, Any]], recipe_id: str, limit: int = 3) -> list[dict[str, Any]]:
    out = []
    for r in runs:
        if r.get("recipe") == recipe_id:
            hw = r.get("hardware") or {}
            out.append(
                {
                    "run_id": r.get("run_id"),
                    "outcome": r.get("outcome"),
                    "signature": r.get("signature"),
                    "gpus": [g.get("name") for g in hw.get("gpus", [])],
                    "matches_target": hw.get("matches_target"),
                    "started_at": r.get("started_at"),
                    "reason": r.get("reason"),
                }
            )
        if len(out) >= limit:
            break
    return out


def explain_item(cfg: Config, item_id: str, items: dict[str, dict]) -> dict[str, Any]:
    v = item_view(cfg, item_id, items.get(item_id))
    v.pop("details", None)
    v["type"] = "item"
    v["blockers"] = [b.id for b in cfg.blockers if item_id in b.items]
    v["context_for"] = [b.id for b in cfg.blockers if item_id in b.watch]
    return v


def _pin(cfg: Config, recipe_id: str, ev: Evaluation, pins: dict | None) -> dict[str, Any]:
    statuses = {
        b: ev.blockers[b].status for b in cfg.recipe(recipe_id).blockers if b in ev.blockers
    }
    return recipe_view((pins or {}).get(recipe_id), statuses)


def explain_blocker(
    cfg: Config,
    blocker_id: str,
    items: dict[str, dict],
    ev: Evaluation,
    runs: list[dict[str, Any]],
    pins: dict[str, dict] | None = None,
) -> dict[str, Any]:
    b = cfg.blocker(blocker_id)
    st = ev.blockers[blocker_id]
    recipes = [r.id for r in cfg.recipes if blocker_id in r.blockers]
    return {
        "type": "blocker",
        "id": b.id,
        "title": b.title,
        "status": st.status,
        "reason": st.reason,
        "rule": b.rule,
        "signatures": list(b.signatures),
        "fails_at": b.fails_at,
        "override": st.override,
        "items": [explain_item(cfg, i, items) for i in b.items],
        "context": [explain_item(cfg, i, items) for i in b.watch],
        "hints": [dict(h, **{"detail": explain_item(cfg, h["item"], items)}) for h in st.hints],
        "recipes": recipes,
        "smoke_runs": {r: _runs_for(runs, r) for r in recipes},
        # is its fix in the build each recipe runs? (fixes in the pinned engine's repository)
        "in_pins": {
            r: [
                f["text"] for f in _pin(cfg, r, ev, pins).get("fixes") or [] if f["blocker"] == b.id
            ]
            for r in recipes
        },
    }


def explain(
    cfg: Config,
    target: str | None,
    items: dict[str, dict],
    ev: Evaluation,
    runs: list[dict[str, Any]],
    triggers: dict[str, dict[str, Any]] | None = None,
    pins: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The chain behind `target` (a page, blocker or item id; default: every page).

    `triggers`: smoke tests due but not answered yet, with the host's own words (the page only
    says "waiting for an RTX 3090 to test on")."""
    page_ids = {p.id for p in cfg.pages}
    if target is None or target in page_ids:
        pages = [p for p in cfg.pages if target in (None, p.id)]
        tested = latest_target_runs(runs)
        return {
            "type": "pages",
            "pages": [
                {
                    "type": "page",
                    "id": p.id,
                    "title": p.title,
                    "output": p.output,
                    "status": ev.pages[p.id].status,
                    "reason": ev.pages[p.id].reason,
                    "parked": ev.pages[p.id].parked,
                    "override": ev.pages[p.id].override,
                    "comparison": ev.pages[p.id].comparison,
                    "recipes": [
                        {
                            "id": r,
                            "blockers": list(cfg.recipe(r).blockers),
                            "smoke_runs": _runs_for(runs, r),
                            "pending": (triggers or {}).get(r),
                            "first_run": _first_run(cfg, r, tested),
                            "pin": _pin(cfg, r, ev, pins),
                        }
                        for r in p.recipes
                    ],
                    "blockers": [
                        explain_blocker(cfg, b, items, ev, runs, pins) for b in p.blockers
                    ],
                }
                for p in pages
            ],
        }
    if target in {b.id for b in cfg.blockers}:
        return explain_blocker(cfg, target, items, ev, runs, pins)
    if target in {i.id for i in cfg.items}:
        return explain_item(cfg, target, items)
    known = ", ".join(sorted(page_ids | {b.id for b in cfg.blockers} | {i.id for i in cfg.items}))
    raise WatcherError(f"nothing called {target!r}; known: {known}")


def _item_line(i: dict[str, Any]) -> str:
    ref = f"{i['repo']}#{i['number']}" if i.get("number") else f"{i['repo']} ({i['kind']})"
    state = i["state"] + (" [stale]" if i["stale"] else "")
    if i.get("superseded_by"):
        state += f", superseded by #{i['superseded_by']} ({i.get('superseded_state')})"
    if i.get("in_release"):
        state += f", first in {i['in_release']}"
    if i.get("snoozed_until"):
        state += f", snoozed until {i['snoozed_until']}"
    title = i.get("title") or "(never read)"
    label = f"  [tracked as: {i['label']}]" if i.get("label") else ""
    return f"{i['id']}: {ref} “{title}” — {state}{label}\n      {i['url']}"


def _evidence_lines(i: dict[str, Any], indent: str, limit: int = 5) -> list[str]:
    """The matching commits or lines of code an item's state rests on, then its warnings."""
    ev, out = i.get("evidence") or {}, []
    if i["kind"] == "commits" and ev.get("matches"):
        out.append(f"{indent}{ev['match_count']} matching commit(s), newest first:")
        out += [
            f"{indent}  {m['sha'][:10]} {(m.get('date') or '')[:10]} {m['subject']}  {m['url']}"
            for m in ev["matches"][:limit]
        ]
    if i["kind"] == "code" and ev.get("ref"):
        out.append(f"{indent}{i['summary']} (commit {(ev.get('sha') or '')[:10]})")
        if ev.get("not_found"):
            out.append(f"{indent}  not found: {', '.join(ev['not_found'])}")
        out += [
            f"{indent}  {'still there' if ln.get('rule') == 'absent' else 'found'} at "
            f"{ln['path']}:{ln['line']}: {ln['text']}  {ln['url']}"
            for ln in ev.get("lines", [])[:limit]
        ]
    out += [f"{indent}WARNING: {w}" for w in i.get("warnings") or []]
    return out


def _run_lines(runs: list[dict[str, Any]], indent: str) -> list[str]:
    if not runs:
        return [f"{indent}no smoke runs yet"]
    return [
        f"{indent}{r['started_at'] or '?'} {r['outcome']}"
        + (f" ({r['signature']})" if r.get("signature") else "")
        + f" on {', '.join(r['gpus']) or 'no GPU'}"
        + ("" if r.get("matches_target") else " [off-target: never validates]")
        + f" — {r['run_id']}"
        + (f"\n{indent}  reason: {r['reason']}" if r.get("reason") else "")
        for r in runs
    ]


def _first_run(cfg: Config, recipe_id: str, tested: dict[str, Any]) -> str | None:
    """Why no cycle starts this recipe yet: never tested, its first run the maintainer's."""
    if recipe_id in tested or not cfg.recipe(recipe_id).first_run_manual:
        return None
    return f'never tested on target hardware; waits for `watcher smoke {recipe_id}` (first_run = "manual")'


def _pending_lines(t: dict[str, Any] | None, indent: str) -> list[str]:
    if not t:
        return []
    if t["state"] == "dispatched":
        head = (
            f"{indent}pending: dispatched {t.get('dispatched_at') or '?'} as {t.get('run_id')}"
            f" (Actions run {t.get('actions_run_id') or 'not found yet'}), not collected yet"
        )
    else:
        head = (
            f"{indent}pending: waiting since {t.get('since') or '?'}"
            f" ({t.get('attempts') or 0} tries) for a host that can run it"
        )
    out = [head, f"{indent}  because: {'; '.join(t.get('reasons') or []) or '?'}"]
    if t.get("note"):
        out.append(f"{indent}  last note: {t['note']}")
    return out


def _pin_lines(v: dict[str, Any], indent: str) -> list[str]:
    if not v.get("reference"):
        return [f"{indent}pin: none ({v.get('why')})"]
    res = v.get("resolved") or {}
    commit = (
        f"commit {res['sha'][:12]} ({res.get('how')})"
        if res.get("sha")
        else f"no commit: {res.get('why') or 'not read yet'}"
    )
    out = [f"{indent}pin: {v['reference']} — {commit}"]
    if v.get("gone"):
        out.append(f"{indent}  GONE: {v['gone']}")
    if v.get("held_by_pin"):
        out.append(
            f"{indent}  not ready on its pin {pin_name(v)}: {', '.join(v['held_by_pin'])} fixed"
            f" upstream only" + carried_by(v)
        )
    if successor_phrase(v) and not v.get("proposal"):
        out.append(f"{indent}  next: {successor_phrase(v)}")
    if proposed_text(v):
        out.append(f"{indent}  {proposed_text(v)}")
    if (v.get("bump") or {}).get("text"):
        out.append(
            f"{indent}  pin-bump gate ({str(v['bump'].get('at'))[:10]}): {v['bump']['text']}"
        )
    return out


def format_text(doc: dict[str, Any]) -> str:
    lines: list[str] = []

    def blocker(b: dict[str, Any], indent: str) -> None:
        lines.append(f"{indent}blocker {b['id']} “{b['title']}”: {b['status']} — {b['reason']}")
        if b.get("override"):
            o = b["override"]
            lines.append(
                f"{indent}  OVERRIDE by maintainer: {o['status']} — {o['reason']}"
                + (f" (until {o['until']})" if o.get("until") else "")
            )
        lines.append(f"{indent}  clears when {b['rule']} of:")
        for i in b["items"]:
            lines.append(f"{indent}    {_item_line(i)}")
            lines.extend(_evidence_lines(i, indent + "      "))
        if b["context"]:
            lines.append(f"{indent}  context only (never clears it):")
            for i in b["context"]:
                lines.append(f"{indent}    {_item_line(i)}")
                lines.extend(_evidence_lines(i, indent + "      "))
        if b.get("hints"):
            lines.append(f"{indent}  hints (shown for information, never clear it):")
            for h in b["hints"]:
                lines.append(f"{indent}    {h['item']}: {h['text']}")
                lines.append(f"{indent}      {h['detail']['url']}")
        for recipe, runs in b["smoke_runs"].items():
            lines.append(
                f"{indent}  latest smoke runs of {recipe} (signatures: {', '.join(b['signatures']) or 'none'}):"
            )
            lines.extend(_run_lines(runs, indent + "    "))
        for recipe, texts in (b.get("in_pins") or {}).items():
            lines.extend(f"{indent}  in {recipe}'s pin: {t}" for t in texts)

    if doc["type"] == "pages":
        for p in doc["pages"]:
            lines.append(f"page {p['id']} ({p['output']}): {p['status']} — {p['reason']}")
            if p.get("override"):
                o = p["override"]
                lines.append(
                    f"  OVERRIDE by maintainer: {o['status']} — {o['reason']}"
                    + (f" (since {o['since']})" if o.get("since") else "")
                    + (f" (until {o['until']})" if o.get("until") else "")
                )
                if o.get("evidence"):
                    e = o["evidence"]
                    lines.append(f"  watcher's own evidence: {e['status']} — {e['reason']}")
            c = p.get("comparison")
            if c and c.get("speed_ratio") is not None:
                lines.append(
                    f"  speed vs baseline {c['baseline']}: {c['decode_tokens_per_s']} vs"
                    f" {c['baseline_decode_tokens_per_s']} decode tokens/s = {c['speed_ratio']}x"
                    f" (range {c['speed_ratio_range'][0]}-{c['speed_ratio_range'][1]}, floor"
                    f" {c['floor']}x) on {c['hardware']}, {c['date']}: {c['verdict']}"
                )
            for r in p["recipes"]:
                lines.append(f"  recipe {r['id']} needs {', '.join(r['blockers']) or 'nothing'}")
                if r.get("first_run"):
                    lines.append(f"    first run: {r['first_run']}")
                lines.extend(_pending_lines(r.get("pending"), "    "))
                lines.extend(_pin_lines(r.get("pin") or {}, "    "))
                lines.extend(_run_lines(r["smoke_runs"], "    "))
            for b in p["blockers"]:
                blocker(b, "  ")
    elif doc["type"] == "blocker":
        blocker(doc, "")
    else:
        lines.append(_item_line(doc))
        lines.extend(_evidence_lines(doc, "  ", limit=20))
        if doc.get("error"):
            lines.append(f"  last error: {doc['error']}")
        lines.append(
            f"  clears: {', '.join(doc['blockers']) or 'nothing'}; context for: "
            f"{', '.join(doc['context_for']) or 'nothing'}"
        )
        lines.append(
            f"  checked {doc.get('checked_at') or 'never'}, last changed {doc.get('changed_at') or 'never'}"
        )
    return "\n".join(lines)
