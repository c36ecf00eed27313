"""The evidence matrix: recipes (engine, model, quant, spec method) × rigs, every cell made from
stored smoke runs and nothing else.

A rig is named the way the hardware gate names it ("2× RTX 3090"): a recipe's target, or the
GPUs a run saw. A cell holds one entry per host that ran the recipe on that rig: the verdict,
decode tokens/s, accept length, the date and the evidence (run id, engine build or image
digest, host label). A failing entry names its blocker; a pass older than `validation_max_age`
reads `stale, last passed <date>`; a cell nobody ran says so; two hosts that disagree are
flagged. Pure: the same runs and `now` give the same matrix.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from watcher.config.model import Config, Hardware, Recipe
from watcher.core.clock import iso, parse_iso, utcnow
from watcher.judge.pins import short_line, view
from watcher.smoke.hardware import name_matches
from watcher.store.smokerun import SmokeResult

VERDICTS = ("passed", "failed", "timeout")  # what a cell is made of; errors and skips are not tests
MARKS = {
    "passed": "✅",
    "stale": "🕰️",
    "failed": "❌",
    "timeout": "❌",
    "untested": "⬜",
    "not-for-rig": "➖",
    "disagree": "⚠️",
}
_GPU_PREFIX = re.compile(r"^(NVIDIA\s+)?(GeForce\s+)?", re.I)


def _dict(value: Any) -> dict[str, Any]:
    """Stored run documents come from remote artifacts too: anything may be the wrong shape."""
    return value if isinstance(value, dict) else {}


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return float(value) if abs(value) != float("inf") else None


def _when(text: Any) -> datetime | None:
    try:
        return parse_iso(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _text(value: Any) -> str | None:
    return str(value)[:200] if value not in (None, "") else None


def short_gpu(name: str) -> str:
    """'NVIDIA GeForce RTX 3090' -> 'RTX 3090' (the hardware gate's words)."""
    return _GPU_PREFIX.sub("", name.strip()) or name


def target_rig(hw: Hardware) -> str:
    return f"{hw.gpu_count}× {hw.gpu_name}"


def run_rig(run: dict[str, Any]) -> str:
    """The rig a run saw: its GPUs by name and count ('2× RTX 3090'), or 'no GPU'."""
    gpus = _dict(run.get("hardware")).get("gpus") or []
    gpus = gpus if isinstance(gpus, list) else []
    counts: dict[str, int] = {}
    for g in gpus:
        if isinstance(g, dict) and g.get("name"):
            name = short_gpu(str(g["name"]))
            counts[name] = counts.get(name, 0) + 1
    if not counts:
        return "no GPU"
    return " + ".join(f"{n}× {name}" for name, n in sorted(counts.items()))


def _parse_rig(rig: str) -> list[tuple[int, str]]:
    out = []
    for part in rig.split(" + "):
        m = re.match(r"^(\d+)× (.+)$", part)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return out


def fits(recipe: Recipe, rig: str) -> bool:
    """Could the recipe's hardware gate pass on this rig (enough GPUs of its name)?"""
    hw = recipe.hardware
    have = sum(n for n, name in _parse_rig(rig) if name_matches(hw.gpu_name, name))
    return have >= hw.gpu_count


def anchor(run_id: str) -> str:
    """An HTML id for a run's evidence (run ids from artifacts are not trusted to be tidy)."""
    return "run-" + re.sub(r"[^A-Za-z0-9_.-]", "-", str(run_id))[:120]


def host_of(run: dict[str, Any]) -> str:
    return str(run.get("host") or _dict(run.get("dispatch")).get("runner") or "unlabelled host")


def _blocker_words(cfg: Config, run: dict[str, Any]) -> str:
    """What a failing run names: its blockers' titles, else its signature, else its reason."""
    titles = []
    reproduced = run.get("blockers_reproduced")
    for b in reproduced if isinstance(reproduced, list) else []:
        try:
            titles.append(cfg.blocker(b).title)
        except KeyError:
            titles.append(str(b))
    if titles:
        return "; ".join(titles)
    if run.get("signature"):
        return f"failure signature {run['signature']}"
    reason = str(run.get("reason") or run.get("outcome") or "failed")
    return reason.split(". ")[0][:160]


def _entry(
    cfg: Config, host: str, runs: list[dict[str, Any]], now: datetime, site_url: str | None
) -> dict[str, Any]:
    """One host's say on one cell: its newest verdict, and its newest pass."""
    latest = runs[0]
    run = SmokeResult.from_record(latest)
    passed = next((r for r in runs if r.get("outcome") == "passed"), None)
    at = latest.get("finished_at") or latest.get("started_at")
    at = at if isinstance(at, str) else None
    when = _when(at)
    state = latest["outcome"]
    text = ""
    if state == "passed":
        age = (now - when).total_seconds() if when else None
        if age is not None and age > cfg.smoke.validation_max_age:
            state = "stale"
            text = f"stale, last passed {(at or '')[:10]}"
        else:
            text = "passed"
    else:
        text = ("hang: " if state == "timeout" else "") + _blocker_words(cfg, latest)
    image = _dict(latest.get("image"))
    checks = latest.get("checks") if isinstance(latest.get("checks"), list) else []
    checks = [c for c in checks if isinstance(c, dict)]
    run_id = str(latest.get("run_id"))
    return {
        "host": host,
        "run_id": run_id,
        "anchor": anchor(run_id),
        "href": f"{site_url.rstrip('/')}/matrix.html#{anchor(run_id)}" if site_url else None,
        "outcome": latest["outcome"],
        "state": state,
        "mark": MARKS[state],
        "text": text,
        "at": at,
        "date": (at or "")[:10],
        "decode_tokens_per_s": _num(run.metrics.decode_tokens_per_s),
        "accept_length": _num(run.metrics.accept_length),
        "build": _text(latest.get("engine_version")),
        "image": _text(image.get("ref")),
        "digest": _text(image.get("digest")),
        "off_target": not run.matches_target,
        "last_passed": str(passed.get("finished_at") or "")[:10] if passed else None,
        "failed_checks": [c["name"] for c in checks if c.get("ok") is False],
        "reason": str(latest.get("reason") or ""),
        "log_path": latest.get("log_path"),
        "runs": len(runs),
    }


def _cell(cfg: Config, recipe: Recipe, rig: str, runs, now, site_url) -> dict[str, Any]:
    by_host: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by_host.setdefault(host_of(r), []).append(r)
    entries = [_entry(cfg, h, rs, now, site_url) for h, rs in sorted(by_host.items())]
    if not entries:
        if fits(recipe, rig) or rig == target_rig(recipe.hardware):
            return {"state": "untested", "mark": MARKS["untested"], "text": "never tested",
                    "entries": [], "disagree": False}  # fmt: skip
        return {
            "state": "not-for-rig",
            "mark": MARKS["not-for-rig"],
            "text": f"needs {target_rig(recipe.hardware)}",
            "entries": [],
            "disagree": False,
        }
    verdicts = {e["state"] in ("passed", "stale") for e in entries}
    disagree = len(verdicts) > 1
    state = "disagree" if disagree else entries[0]["state"]
    if not disagree and len(entries) > 1:
        state = "stale" if all(e["state"] == "stale" for e in entries) else entries[0]["state"]
    text = "rigs disagree" if disagree else entries[0]["text"]
    return {
        "state": state,
        "mark": MARKS[state],
        "text": text,
        "entries": entries,
        "disagree": disagree,
    }


def spec_label(recipe: Recipe) -> str:
    if recipe.spec_method:
        return recipe.spec_method
    return "spec decode" if recipe.spec_decode else "none"


def build_matrix(
    cfg: Config,
    runs: list[dict[str, Any]],
    *,
    recipes: list[str] | tuple[str, ...] | None = None,
    now: datetime | None = None,
    pins: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The matrix from stored runs (newest first, as `Store.smoke_runs` gives them). A run of a
    build that is not the recipe's own (a bisect step, a bump gate's) is never a cell. `pins`
    (the stored pins) adds each row's build line: pin, fixes in it or not, gone, bump verdict."""
    now = now or utcnow()
    chosen = [cfg.recipe(r) for r in recipes] if recipes else list(cfg.recipes)
    ids = {r.id for r in chosen}
    tested = [
        r
        for r in runs
        if r.get("recipe") in ids and r.get("outcome") in VERDICTS and not r.get("bisect")
    ]
    tested.sort(key=lambda r: str(r.get("finished_at") or r.get("started_at") or ""), reverse=True)
    by_cell: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in tested:  # newest first within each cell
        by_cell.setdefault((r["recipe"], run_rig(r)), []).append(r)
    rigs = {target_rig(r.hardware) for r in chosen} | {rig for _, rig in by_cell}
    rig_list = sorted(rigs, key=lambda s: (s == "no GPU", [(n, g) for n, g in _parse_rig(s)]))
    site_url = cfg.site.url
    rows = []
    for recipe in chosen:
        cells = {
            rig: _cell(cfg, recipe, rig, by_cell.get((recipe.id, rig), []), now, site_url)
            for rig in rig_list
        }
        rows.append(
            {
                "recipe": recipe.id,
                "title": recipe.title or recipe.id,
                "engine": recipe.engine,
                "model": recipe.model.rstrip("/").rsplit("/", 1)[-1] or recipe.id,
                "quant": recipe.quant or "—",
                "spec_method": spec_label(recipe),
                "target": target_rig(recipe.hardware),
                "source": recipe.compose or "command",
                "cells": cells,
                "pin_line": short_line(view(pins[recipe.id]))
                if recipe.id in (pins or {})
                else None,
                "ran": _ran(cells),
            }
        )
    evidence = [e for row in rows for c in row["cells"].values() for e in c["entries"]]
    evidence.sort(key=lambda e: e["at"] or "", reverse=True)
    return {
        "generated_at": iso(now),
        "validation_max_age_s": cfg.smoke.validation_max_age,
        "rigs": rig_list,
        "rows": rows,
        "evidence": evidence,
        "disagreements": [
            {"recipe": row["recipe"], "rig": rig}
            for row in rows
            for rig, c in row["cells"].items()
            if c["disagree"]
        ],
        "refused": [
            {
                "run_id": str(r.get("run_id")),
                "recipe": r.get("recipe"),
                "at": r.get("finished_at") if isinstance(r.get("finished_at"), str) else None,
                "reason": str(r.get("reason") or ""),
                "actions_run_url": r.get("actions_run_url"),
            }
            for r in runs
            if r.get("refused") and r.get("recipe") in ids
        ],
    }


def _ran(cells: dict[str, dict[str, Any]]) -> str | None:
    """The engine build the newest run of the row ran: its image by digest, else by tag."""
    entries = sorted(
        (e for c in cells.values() for e in c["entries"]), key=lambda e: e["at"] or "", reverse=True
    )
    for e in entries:
        if e["image"] or e["digest"]:
            ref = e["image"] or ""
            return f"{ref.split('@')[0]}@{e['digest'].rsplit('@', 1)[-1]}" if e["digest"] else ref
    return None


def cell_summary(entry: dict[str, Any], with_state: bool = True) -> str:
    """One entry in words for a table cell: 'passed · 85.1 tok/s · AL 2.31 · 2026-11-30'
    (without `with_state`, a bare 'passed' is left to the pill beside it)."""
    parts = [entry["text"]] if with_state or entry["text"] != entry["state"] else []
    if entry["decode_tokens_per_s"] is not None:
        parts.append(f"{entry['decode_tokens_per_s']:.1f} tok/s")
    if entry["accept_length"] is not None:
        parts.append(f"AL {entry['accept_length']:.2f}")
    if entry["state"] != "stale" and entry["date"]:
        parts.append(entry["date"])
    if entry["last_passed"] and entry["state"] in ("failed", "timeout"):
        parts.append(f"last passed {entry['last_passed']}")
    if entry["failed_checks"]:
        parts.append("failed checks: " + ", ".join(entry["failed_checks"]))
    if entry["off_target"]:
        parts.append("off-target, never validates")
    return " · ".join(parts)
