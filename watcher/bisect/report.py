"""A bisect's report: the range it found, the evidence, and how it got there — as a document (for
--json, the site page, the sticky comment and the feed) and as plain text for stdout."""

from __future__ import annotations

from typing import Any

from watcher.config.model import Config
from watcher.core.text import clean_tree
from watcher.store.db import Store

AUTOMATED = (
    "This range was found automatically by watcher from smoke runs of published builds;"
    " the smoke runs are the evidence, a person decides what to do with it."
)


def _point(state: dict[str, Any], index: int, step: dict[str, Any] | None) -> dict[str, Any]:
    p = dict(state["points"][index])
    if step:
        p["engine_version"] = step.get("engine_version")
        p["installed"] = step.get("installed")
        p["runs"] = step.get("runs")
    return p


def _positions(state: dict[str, Any]) -> dict[str, int]:
    line = [state["points"][0]["sha"]] + [c["sha"] for c in state["commits"]]
    return {sha: i for i, sha in enumerate(line)}


def report(cfg: Config, store: Store, state: dict[str, Any]) -> dict[str, Any]:
    """What the bisect found, from its state (the steps stay in the state)."""
    steps = {s["index"]: s for s in state["steps"]}
    lo, hi = state["lo"], state["hi"]
    fix = state["mode"] == "find-fix"
    done = state["status"] == "done" and 0 in steps and len(state["points"]) - 1 in steps
    inside = range(lo + 1, hi)
    gone = [state["points"][i]["build"] for i in inside if state["points"][i].get("gone")]
    untested = [
        state["points"][i]["build"]
        for i in inside
        if steps.get(i, {}).get("verdict") not in ("pass", "fail")
    ]
    out: dict[str, Any] = {
        "status": state["status"],
        "message": state.get("message") or "",
        "mode": state["mode"],
        # exact: no build that still exists lies between the two ends
        "exact": done and len(untested) == len(gone),
        "builds": len(state["points"]),
        "budget": state["budget"],
        "steps_judged": sum(1 for s in state["steps"] if s["verdict"] in ("pass", "fail")),
        "runs": sum(len(s["runs"]) for s in state["steps"]),
        "automated": AUTOMATED,
        "hardware": _hardware(state),
        "skipped": [
            {"build": s["build"], "why": s["why"]}
            for s in state["steps"]
            if s["verdict"] not in ("pass", "fail")
        ],
        "untested_in_range": untested,
        "gone_in_range": gone,
        "gone": [{"build": p["build"], "why": p["gone"]} for p in state["points"] if p.get("gone")],
    }
    if not done:
        return out
    before, after = _point(state, lo, steps.get(lo)), _point(state, hi, steps.get(hi))
    out["before"], out["after"] = before, after
    out["before_word"] = "last broken" if fix else "last good"
    out["after_word"] = "first fixed" if fix else "first bad"
    out["failure"] = state.get("fail_key")
    out["compare_url"] = (
        f"https://github.com/{state['repo']}/compare/{before['sha']}...{after['sha']}"
    )
    pos = _positions(state)
    a, b = pos.get(before["sha"], 0), pos.get(after["sha"], len(pos) - 1)
    in_range = [c for c in state["commits"] if a < pos.get(c["sha"], -1) <= b]
    out["commits_in_range"] = len(in_range)
    out["flagged"] = [
        dict(c, rules=state["flagged"][c["sha"]]) for c in in_range if c["sha"] in state["flagged"]
    ]
    shas = {c["sha"] for c in in_range}
    tracked = []
    for item_id, row in store.items().items():
        merge = ((row or {}).get("details") or {}).get("merge_commit_sha")
        if merge and any(s.startswith(merge) or merge.startswith(s) for s in shas):
            number = row.get("number")
            tracked.append(
                {
                    "item": item_id,
                    "number": number,
                    "title": row.get("title"),
                    "url": row.get("url"),
                    "merge_commit_sha": merge,
                    "line": f"the {'fix' if fix else 'regression'} range contains the merge commit"
                    f" of #{number} ({item_id})",
                }
            )
    out["tracked"] = tracked
    return out


def _hardware(state: dict[str, Any]) -> str:
    """The GPUs the steps ran on (as the first step's run read them)."""
    for s in state["steps"]:
        hw = s.get("hardware") or {}
        gpus = hw.get("gpus") or []
        if gpus:
            names = ", ".join(f"{g.get('name')} ({g.get('memory_mib', '?')} MiB)" for g in gpus)
            return names + ("" if hw.get("matches_target") else " [off target]")
    return "no GPU read" if state["steps"] else "no run yet"


def summary(state: dict[str, Any]) -> str:
    """One line: the feed entry, the page's change list."""
    r = state.get("report") or {}
    if r.get("before"):
        exact = "" if r.get("exact") else " (not narrowed to one build)"
        if r.get("gone_in_range"):
            exact += f", {len(r['gone_in_range'])} between skipped as gone"
        tracked = (
            "; " + "; ".join(t["line"] for t in r.get("tracked") or []) if r.get("tracked") else ""
        )
        return (
            f"bisect {state['id']} of {state['recipe']}: {r['before_word']} {r['before']['build']},"
            f" {r['after_word']} {r['after']['build']}{exact} in {r['runs']} smoke runs"
            f"{tracked}: {r['compare_url']}"
        )
    return f"bisect {state['id']} of {state['recipe']}: {state['status']}: {state.get('message')}"


def text(state: dict[str, Any]) -> str:
    """The report as stdout shows it."""
    r = state.get("report") or {}
    lines = [f"bisect {state['id']} ({state['mode']}) of {state['recipe']}: {state['status']}"]
    if state.get("message"):
        lines.append(f"  {state['message']}")
    lines.append(
        f"  {len(state['points'])} builds from {state['points'][0]['build']} to"
        f" {state['points'][-1]['build']}; budget {state['budget']} judged steps"
        f" (ceil(log2 N) + 2); {sum(len(s['runs']) for s in state['steps'])} smoke runs"
        + (" so far" if state["status"] in ("running", "paused") else "")
    )
    for key in ("before", "after"):
        p = r.get(key)
        if p:
            made = p.get("digest") or p.get("version")
            lines.append(
                f"  {r[key + '_word']}: {p['build']} ({made}) commit {p['sha'][:12]}"
                f" from {p.get('date')}; {p.get('installed') or 'not verified'}"
            )
    if r.get("compare_url"):
        between = ""
        if r.get("gone_in_range"):
            between = (
                f"; between {r['before']['build']} and {r['after']['build']},"
                f" {', '.join(r['gone_in_range'])} skipped as gone"
            )
        lines.append(f"  range: {r['compare_url']} ({r.get('commits_in_range')} commits){between}")
    if r.get("gone"):
        lines.append(
            "  gone (no longer published, never run): " + ", ".join(g["build"] for g in r["gone"])
        )
    if r.get("failure"):
        lines.append(f"  failure bisected: {r['failure']}")
    for t in r.get("tracked") or []:
        lines.append(f"  {t['line']}: {t.get('title')}")
    for c in r.get("flagged") or []:
        lines.append(f"  flagged by {', '.join(c['rules'])}: {c['sha'][:12]} {c['subject']}")
    judged_not = [
        b for b in r.get("untested_in_range") or [] if b not in r.get("gone_in_range", [])
    ]
    if judged_not:
        lines.append(f"  not judged inside the range: {', '.join(judged_not)}")
    lines.append("  steps:")
    for n, s in enumerate(state["steps"], 1):
        logs = ", ".join(x for x in s.get("logs") or [] if x)
        lines.append(
            f"    {n}. {s['build']}: {s['verdict']} — {s['why']}"
            + (f" [log {logs}]" if logs else "")
        )
    if r.get("hardware"):
        lines.append(f"  hardware: {r['hardware']}")
    if r.get("automated"):
        lines.append(f"  {r['automated']}")
    return "\n".join(lines)


SITE_LIMIT = 50  # newest bisects with a page on the site


def _so_far(state: dict[str, Any]) -> dict[str, Any]:
    """What an unfinished bisect's page can say before it has a report: its runs so far."""
    return {"runs": sum(len(s.get("runs") or ()) for s in state.get("steps") or ())}


def site_files(store: Store, env, ctx: dict[str, Any]) -> dict[str, str]:
    """bisect/index.html and bisect/<id>.html, one page per stored bisect (newest first), its
    text cleaned by core.text's rule."""
    states = store.bisects(limit=SITE_LIMIT)
    files = {}
    for b in states:
        b = clean_tree(b)
        files[f"bisect/{b['id']}.html"] = env.get_template("site/bisect.html.j2").render(
            **ctx, root="../", b=b, r=b.get("report") or _so_far(b)
        )
    listed = [dict(clean_tree(b), summary=clean_tree(summary(b))) for b in states]
    if listed:
        files["bisect/index.html"] = env.get_template("site/bisects.html.j2").render(
            **ctx, root="../", bisects=listed
        )
    return files
