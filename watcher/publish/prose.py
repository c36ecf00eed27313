"""Sentences for the guide's readers: what the page says, without watcher's insides.

The page speaks to people deciding whether to run a recipe. Config ids (`marlin-pad`), run ids,
raw exceptions, API URLs and CLI hints stay on the site, in status.json and in `watcher explain`;
here every blocker is named by its title, every item by its label or GitHub's title, every run by
its date and GPU. Pure functions of stored data, so the same data reads the same.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from watcher.config.model import Config, Hardware
from watcher.config.signatures import all_signatures
from watcher.core.clock import parse_iso
from watcher.judge.views import mislabel, project_name
from watcher.store.smokerun import SmokeResult

# A blocker whose items cannot be read now keeps its last status; the reader is told so, short.
STALE_WORDS = "can't check right now"
# What a status means, as a reader would say it.
BLOCKER_WORDS = {
    "blocked": "waiting for an upstream fix",
    "reproduces": "still fails",
    "fix-merged": "fix landed, not yet tested",
    "verified": "fixed and tested",
}
PAGE_WORDS = {
    "blocked": "blocked",
    "ready-to-test": "ready to test",
    "validated": "validated",
    "regressed": "regressed",
    "parked": "parked",
    "untested": "not tested yet",
    "unknown": "not checked yet",
}
STATE_WORDS = {
    "matched": "matching commits found",
    "no-match": "no matching commits",
    "not_planned": "closed as not planned",
    "completed": "closed as completed",
    "present": "fix found in the code",
    "absent": "fix not in the code",
    "file-missing": "checked files missing",
    "unreadable": "can't read the checked files",
    "closed-by-author": "closed by its author (nothing merged)",
    "none": "no release yet",
}
OUTCOME_WORDS = {
    "passed": "passed",
    "failed": "failed",
    "timeout": "timed out",
    "error": "could not run",
    "skipped": "not run",
}
KIND_NAMES = {"commits": "commits", "releases": "releases", "code": "code"}
STAGE_WORDS = {"launch": "at startup", "ready": "after it started", "passed": ""}


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def article(noun: str) -> str:
    """'an RTX 3090', 'a 3090', 'an A10': by sound, as far as names of GPUs go."""
    first = noun.strip()[:1]
    vowel = first.lower() in "aeiou" or (
        first.isupper() and noun.strip()[:2].isupper() and first in "AEFHILMNORSX"
    )
    return f"{'an' if vowel else 'a'} {noun.strip()}"


def gpu_phrase(hw: Hardware) -> str:
    """'an RTX 3090', 'two RTX 3090s'."""
    if hw.gpu_count <= 1:
        return article(hw.gpu_name)
    words = {2: "two", 3: "three", 4: "four"}
    return f"{words.get(hw.gpu_count, str(hw.gpu_count))} {hw.gpu_name}s"


def day(stamp: Any) -> str:
    return stamp[:10] if isinstance(stamp, str) else ""


def days_between(since: str | None, until: str | None) -> int | None:
    a, b = parse_iso(since) if since else None, parse_iso(until) if until else None
    if not a or not b:
        return None
    return max(0, (b - a).days)


def reader_when(stamp: str | None) -> str:
    """'2026-11-23 12:00 UTC' (the minute is enough for a reader)."""
    return f"{stamp[:16].replace('T', ' ')} UTC" if stamp else "never"


def headline(
    status: str,
    *,
    since: str | None,
    now: str | None,
    open_blockers: int,
    validated_run: dict[str, Any] | None = None,
    gpu: str = "the target GPU",
    parked: dict[str, Any] | None = None,
    held_by_pin: bool = False,
    override: dict[str, Any] | None = None,
) -> str:
    """The page's one-line answer: 'blocked for 47 days on 2 upstream fixes'. `held_by_pin`: a
    recipe's fixes have landed upstream but not in the build it runs. `override`: the status is
    the maintainers' word, said as theirs, with what watcher saw where that differs."""
    days = days_between(since, now)
    for_days = f" for {plural(days, 'day')}" if days else ""
    if override:
        said = f"{PAGE_WORDS.get(status, status)}{for_days}, as the maintainers say"
        if status == "validated":
            when = f" on {day(validated_run.get('started_at'))}" if validated_run else ""
            said = f"validated on {gpu}{when}, as the maintainers say"
        seen = (override.get("evidence") or {}).get("status")
        return said + (f"; watcher saw {PAGE_WORDS.get(seen, seen)}" if seen else "")
    if status == "blocked" and held_by_pin and not open_blockers:
        return f"blocked{for_days}: its upstream fixes have landed, not yet in the build it runs"
    if status == "blocked":
        return f"blocked{for_days} on {plural(open_blockers, 'upstream fix', 'upstream fixes')}"
    if status == "ready-to-test":
        if open_blockers:  # one recipe is clear; another still waits (e.g. spec-decode)
            still = plural(open_blockers, "upstream fix", "upstream fixes")
            return (
                f"ready to test{for_days}: one recipe's fixes have landed, not yet tested on"
                f" {gpu}; the others still wait on {still}"
            )
        return f"ready to test{for_days}: the upstream fixes have landed, not yet tested on {gpu}"
    if status == "validated":
        when = f" on {day(validated_run.get('started_at'))}" if validated_run else ""
        return f"validated on {gpu}{when}"
    if status == "regressed":
        return f"regressed{for_days}: it was validated, and the latest test on {gpu} failed"
    if status == "parked" and (parked or {}).get("by") == "floor":
        return f"parked{for_days}: it runs on {gpu}, but slower than the validated path"
    if status == "parked":
        return f"parked by the maintainers{for_days}"
    if status == "untested":
        return f"not tested yet on {gpu}: nothing blocks it, and no smoke run has tried it"
    return PAGE_WORDS.get(status, status)


def signature_phrase(cfg: Config, signature: str | None) -> str | None:
    """A failure signature's description (its id stays on the site)."""
    if not signature:
        return None
    for s in all_signatures(tuple(cfg.signatures)):
        if s.id == signature:
            return s.description or None
    return None


def item_name(view: dict[str, Any]) -> str:
    """How the page names an item: its label, else GitHub's title, else project and number."""
    if view.get("label"):
        return view["label"]
    if view.get("title"):
        return view["title"]
    number = f" #{view['number']}" if view.get("number") else ""
    return f"{project_name(view['repo'])}{number}"


def blocker_sentence(cfg: Config, b: dict[str, Any], run: dict[str, Any] | None, gpu: str) -> str:
    """Why a blocker has its status, for a reader: names, dates and GPUs, never ids."""
    status = b["status"]
    if b.get("stale") and not b.get("override"):
        if status == "blocked":  # never "waiting for a fix" on the ground of an unread file
            return STALE_WORDS
        return f"{STALE_WORDS}; last known: {BLOCKER_WORDS.get(status, status)}"
    if b.get("override"):
        o = b["override"]
        until = f" until {o['until']}" if o.get("until") else ""
        return f"set by the maintainers{until}: {o['reason']}"
    if status == "reproduces" and run:
        what = signature_phrase(cfg, run.get("signature")) or "the same failure"
        return f"still fails on {gpu} (tested {day(run.get('started_at'))}): {what}"
    if status == "verified" and run:
        return (
            f"fixed: a test on {gpu} on {day(run.get('started_at'))} got past the point"
            " where it used to fail"
        )
    items = b["items"]
    fixed = [i for i in items if i.get("satisfied")]
    if status in ("fix-merged", "verified"):  # which fix: the watch list says, once
        where = " and ".join(dict.fromkeys(project_name(i["repo"]) for i in fixed)) or "upstream"
        return f"a fix has landed in {where}; not yet tested on {gpu}"
    waiting = [i for i in items if not i.get("satisfied")]
    names = []
    for i in waiting:
        name = project_name(i["repo"])
        if name not in names:
            names.append(name)
    if not names:
        return "waiting for an upstream fix"
    joiner = " and " if b.get("rule") == "all" else " or "
    if b.get("rule") == "all" and len(waiting) > 1:
        return f"waiting for fixes in {joiner.join(names)}"
    return f"waiting for a fix in {joiner.join(names)}"


def run_sentence(
    cfg: Config, run: dict[str, Any] | None, gpu: str, said: dict[str, str] | None = None
) -> str | None:
    """'Last tested on 2026-11-23 on an RTX 3090: failed at startup (Marlin int4 kernel …).'"""
    if not run:
        return None
    hw = run.get("hardware") if isinstance(run.get("hardware"), dict) else {}
    gpus = [g["name"] for g in hw.get("gpus") or [] if isinstance(g, dict) and g.get("name")]
    on = article(gpus[0]) if gpus else "an unreported GPU"
    outcome = run.get("outcome") or "unknown"
    words = OUTCOME_WORDS.get(outcome, outcome)
    if outcome in ("failed", "timeout"):
        words += " " + STAGE_WORDS.get(run.get("stage_reached") or "launch", "")
    words = words.strip()
    signature = run.get("signature")
    if signature and signature in (said or {}):  # the page already describes this failure
        what = f"see {said[signature]}"
    else:
        what = signature_phrase(cfg, signature)
    off = "" if hw.get("matches_target") else f" (not {gpu}: it proves nothing here)"
    tail = f": {what}" if what else ""
    if SmokeResult.from_record(run).setup_problem:  # the engine never started: no verdict
        return (
            f"Last tried on {day(run.get('started_at'))} on {on}: not launched, a setup problem"
            " on the test host (it says nothing about the engine)."
        )
    return f"Last tested on {day(run.get('started_at'))} on {on}{off}: {words}{tail}."


def untested_sentence(gpu: str) -> str:
    """A recipe nothing blocks and no run has tried: proposed, not judged."""
    return f"Not tested yet on {gpu}: nothing blocks it, and no smoke run has tried it."


def waiting_sentence(trigger: dict[str, Any] | None, gpu: str, backend: str) -> str | None:
    """A pending smoke test in a reader's words (the host's own error stays in `explain`)."""
    if not trigger:
        return None
    since = f" since {day(trigger.get('since'))}" if trigger.get("since") else ""
    if trigger.get("state") == "dispatched":
        return f"A test on {gpu} has been requested{since} and is running or queued."
    if backend == "github-actions":
        return f"A test is due{since}, waiting for its turn on {gpu}."
    return f"A test is due{since}, waiting for {gpu} to test on."


def event_sentence(cfg: Config, e: dict[str, Any], titles: dict[str, str] | None = None) -> str:
    """One line of 'What changed', named by titles and labels; a label GitHub's title
    disagrees with (`titles`: item id -> its stored title) says what GitHub calls it."""
    kind, subject, old, new = e.get("kind"), e.get("subject"), e.get("old"), e.get("new")
    if kind == "item":
        try:
            item = cfg.item(subject)
        except KeyError:
            return str(e.get("message") or "")
        name = item.label or (
            f"{project_name(item.repo)} #{item.number}"
            if item.number
            else f"{project_name(item.repo)} {KIND_NAMES.get(item.kind, item.kind)}"
        )
        other = mislabel(item.label, (titles or {}).get(item.id)) if item.number else None
        if other:
            name += f" (GitHub: “{other}”)"
        new_w = STATE_WORDS.get(new or "", new or "unknown")
        if not old:
            return f"{name}: first read, {new_w}"
        return f"{name}: {STATE_WORDS.get(old, old)} → {new_w}"
    if kind == "blocker":
        title = next((b.title for b in cfg.blockers if b.id == subject), subject)
        new_w = BLOCKER_WORDS.get(new or "", new)
        return (
            f"{title}: {BLOCKER_WORDS.get(old or '', old)} → {new_w}"
            if old
            else f"{title}: {new_w}"
        )
    if kind == "page":
        title = next((p.title for p in cfg.pages if p.id == subject), subject)
        new_w = PAGE_WORDS.get(new or "", new)
        return (
            f"{title} page: {PAGE_WORDS.get(old or '', old)} → {new_w}"
            if old
            else f"{title} page: {new_w}"
        )
    if kind == "smoke":
        recipe = next((r for r in cfg.recipes if r.id == subject), None)
        title = (recipe.title or recipe.id) if recipe else subject
        target = (e.get("data") or {}).get("matches_target")
        where = "" if target or target is None else " (not on the target GPU)"
        return f"Test of {title}: {OUTCOME_WORDS.get(new or '', new)}{where}"
    if kind == "bisect":  # "bisect <run id> of <recipe>: <what it found>" -> the recipe's title
        recipe = next((r for r in cfg.recipes if r.id == subject), None)
        title = (recipe.title or recipe.id) if recipe else subject
        found = str(e.get("message") or "").partition(": ")[2] or new
        return f"Bisect of {title}: {found}"
    return str(e.get("message") or "")


def reader_changes(
    cfg: Config, changes: list[dict[str, Any]], titles: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """'What changed', for a reader: the first check said once, then only changes of status.

    First reads (an item, blocker or page seen for the first time) fold into one "first check"
    line; an item event whose state did not change (new evidence, a new title) is left to the
    site and `explain`.
    """
    firsts = [
        e for e in changes if e.get("kind") in ("item", "blocker", "page") and not e.get("old")
    ]
    out: list[dict[str, Any]] = []
    if firsts:
        items = sum(1 for e in firsts if e.get("kind") == "item")
        pages = [e for e in firsts if e.get("kind") == "page"]
        shown = (
            f"; the page starts as {PAGE_WORDS.get(pages[-1].get('new') or '', pages[-1].get('new'))}"
            if pages
            else ""
        )
        out.append(
            {
                "at": min(e.get("at") or "" for e in firsts) or None,
                "text": f"First check: {plural(items, 'tracked item')} read{shown}",
            }
        )
    for e in changes:
        if e in firsts:
            continue
        if e.get("kind") == "item" and e.get("old") == e.get("new"):
            continue
        out.append({"at": e.get("at"), "text": event_sentence(cfg, e, titles)})
    return out


HTTP_WHY = {
    401: "GitHub did not accept the token",
    403: "GitHub refused the requests (token or rate limit)",
    404: "GitHub has no such repository, issue or pull request for some items (a configuration error)",
    429: "GitHub's rate limit was reached",
}


def unread_reason(items: dict[str, dict], attempt: dict[str, Any] | None) -> str:
    """Why nothing has been read yet, in a sentence: the one 'not checked yet' state's why."""

    if not attempt or not attempt.get("at"):
        return "No check has read GitHub yet"
    codes = []
    for row in items.values():
        m = re.match(r"HTTP (\d{3})", str(row.get("error") or ""))
        codes.append(int(m.group(1)) if m else None)
    when = reader_when(attempt["at"])
    common = max(set(codes), key=codes.count) if codes else None
    if common in HTTP_WHY:
        return f"{HTTP_WHY[common]} on the first check ({when})"
    return f"The first check ({when}) could not reach GitHub"


def attention_line(
    views: list[dict[str, Any]], last_checked: str | None, never_read: bool
) -> str | None:
    """At most one plain line for readers when a check behind the page needs its maintainer
    (an item not re-read, a rule gone blind); the details go to the maintainer's views."""
    if never_read:
        return None
    needing = [v for v in views if v.get("warnings") or (v.get("stale") and v.get("title"))]
    if not needing:
        return None
    read = [v["checked_at"] for v in views if v.get("checked_at")]
    fully = min(read) if read else last_checked
    who = "One of the checks" if len(needing) == 1 else f"{len(needing)} of the checks"
    verb = "needs" if len(needing) == 1 else "need"
    return f"{who} behind this page {verb} attention; last fully checked {reader_when(fully)}."


def now_of(*stamps: str | None) -> str | None:
    """The newest of some stored times (the page's 'now', so the same data reads the same)."""
    known = [s for s in stamps if s]
    return max(known, key=lambda s: parse_iso(s) or datetime.min) if known else None


def thread_state(view: dict[str, Any]) -> str:
    """A tracked thread's state in a few words, for its one line on a page: "open", "merged,
    first in v0.24.0", "not fixed yet", "newest match on 2026-06-20". Where it was
    read, at which commit, and what else it said belong to the site and `watcher explain`."""
    kind, state = view.get("kind"), view.get("state")
    if not state or state == "unknown" or (view.get("stale") and not view.get("title")):
        return "not read yet"
    release = view.get("in_release")
    if kind == "pull":
        first = f"first in {release}" if release else "in no release yet"
        if state == "merged":
            return f"merged, {first}"
        if state == "closed" and view.get("superseded_by"):
            how = view.get("superseded_state") or "open"
            other = (view.get("details") or {}).get("superseded_repo") or ""
            same = not other or other.lower() == str(view.get("repo") or "").lower()
            by = f"{'' if same else other}#{str(view['superseded_by']).lstrip('#')}"
            return f"closed; fixed by {by}, {first}" if how == "merged" else f"closed; {by} {how}"
        return "closed, not merged" if state == "closed" else state
    if kind == "commits":
        if state != "matched":
            return "no match yet"
        details = view.get("details") or {}
        newest = details.get("newest") or (details.get("commits") or [{}])[0]
        date = str(newest.get("date") or "")[:10]
        return f"newest match on {date}" if date else "matching commits"
    if kind == "code":
        return {"present": "fixed", "absent": "not fixed yet"}.get(state, "can't be read")
    if kind == "releases":
        return "no release yet" if state == "none" else f"latest: {state}"
    if kind == "commit" and state == "committed":
        return f"committed, first in {release}" if release else "committed, in no release yet"
    return STATE_WORDS.get(state, state.replace("_", " "))


def titled(cfg: Config, text: str | None) -> str:
    """A maintainer's sentence (a status reason, an event message) with each config id it names
    (a page, recipe, blocker or item) replaced by what readers call it: "blocked: “SGLang, TP=1,
    MTP spec-decode (NEXTN)” by “Marlin crash at load: …” (reproduces)". Ids stay in
    status.json and `watcher explain`; signature and run ids stay too (the site shows them)."""
    names: dict[str, str] = {}
    for item in cfg.items:
        names[item.id] = item.label or item.id
    for r in cfg.recipes:
        names[r.id] = r.title or r.id
    for b in cfg.blockers:
        names[b.id] = b.title
    for p in cfg.pages:
        names[p.id] = p.title
    names = {k: v for k, v in names.items() if v and v != k}
    if not text or not names:
        return text or ""
    ids = sorted(names, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w/.-])(" + "|".join(map(re.escape, ids)) + r")(?![\w-]|\.\w)")

    def name(m: re.Match[str]) -> str:
        shown = names[m.group(1)]
        return f"“{shown}”" if " " in shown else shown

    return pattern.sub(name, text)
