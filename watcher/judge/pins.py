"""Is a fix in the build we run? The pin-aware reading of a merged fix, as a pure rule.

A fix merged upstream is `in-pin` when the compare API says the pinned commit is `ahead` of the
fix commit or `identical` to it (compare/{fix}...{pin}: the fix is an ancestor of the pin),
`awaiting-pin` when it says `behind` or `diverged` (merged, not yet in our build: the guide's
"🔵 Merged, awaiting propagation"), and unknown otherwise (no compare, or a pin that resolves to
no commit). A recipe whose cleared blockers' fixes are all upstream but not in its pin is not
ready to test on its pin. A pin whose build is gone is a setup problem, never a blocker.
"""

from __future__ import annotations

from typing import Any

from watcher.config.tracker import Link
from watcher.judge.audit import PinCheck

IN_PIN, AWAITING_PIN = "in-pin", "awaiting-pin"


def fix_state(compare_status: str | None) -> str | None:
    """compare/{fix}...{pin} status -> in-pin, awaiting-pin, or None (not known)."""
    if compare_status in ("ahead", "identical"):
        return IN_PIN
    if compare_status in ("behind", "diverged"):
        return AWAITING_PIN
    return None


def view(pin: dict[str, Any] | None) -> dict[str, Any] | None:
    """The stored pin with each fix's state (in-pin / awaiting-pin / None) and sentence added."""
    if not pin:
        return pin
    out = dict(pin)
    out.pop("tracked", None)  # the audit's bookkeeping (tracker_check); pages show `fixes` only
    out["fixes"] = []
    for f in pin.get("fixes") or []:
        f = {**f, "state": fix_state(f.get("compare"))}
        f["text"] = fix_phrase(f, pin)
        out["fixes"].append(f)
    out["gone"] = gone(pin)
    return out


def pin_name(pin: dict[str, Any]) -> str:
    """How a reader names the build: `v0.23.1`, `nightly-1a2b3c4`, `sha256:0123abcd…`."""
    ref = pin.get("ref") or pin.get("version") or pin.get("reference") or "?"
    return ref[:19] + "…" if ref.startswith("sha256:") else ref


def fix_phrase(fix: dict[str, Any], pin: dict[str, Any]) -> str:
    """ "fixed upstream in vllm#45295 (2026-06-30); not in our pin v0.23.1; first in v0.24.0"."""
    where = f"fixed upstream in {fix.get('ref') or fix.get('item')}"
    if fix.get("merged_at"):
        where += f" ({str(fix['merged_at'])[:10]})"
    state = fix.get("state")
    if state == IN_PIN:
        return f"{where}; in our pin {pin_name(pin)}"
    if state == AWAITING_PIN:
        text = f"{where}; not in our pin {pin_name(pin)}"
        return text + (f"; first in {fix['first_release']}" if fix.get("first_release") else "")
    return f"{where}; whether our pin {pin_name(pin)} carries it is not known ({fix.get('why') or 'no compare'})"


def gone(pin: dict[str, Any] | None) -> str | None:
    """Why no GPU run of the recipe may start (its pinned build no longer exists), or None."""
    live = (pin or {}).get("liveness") or {}
    if live.get("exists") is False:
        seen = live.get("last_seen") or "never"
        digest = live.get("last_digest") or "unknown"
        return (
            f"its pinned build {pin.get('reference')} no longer exists (404 since"
            f" {live.get('gone_since')}; last seen {seen}, last known digest {digest}):"
            " a setup problem, not a blocker: the pin needs a bump"
        )
    return None


def readiness(pin: dict[str, Any] | None, blockers: dict[str, str]) -> dict[str, Any]:
    """Whether the recipe is ready to test on its pin: `blockers` maps each of its blockers to
    its status. A blocker whose fixes (for the pinned engine) are all awaiting-pin holds it."""
    fixes = (view(pin) or {}).get("fixes") or []
    held = []
    for blocker, status in blockers.items():
        mine = [f for f in fixes if f.get("blocker") == blocker]
        if status == "fix-merged" and mine and all(f.get("state") == AWAITING_PIN for f in mine):
            held.append(blocker)
    newer = sorted(
        {
            f["first_release"]
            for f in fixes
            if f.get("state") == AWAITING_PIN and f.get("first_release")
        }
    )
    return {
        "ready_on_pin": not held and not gone(pin),
        "held_by_pin": held,
        "newer_builds": newer,
        "gone": gone(pin),
    }


def held_phrase(pin: dict[str, Any] | None, blockers: dict[str, str]) -> str | None:
    """Why a recipe whose blockers are cleared is still not ready to test on its pin, in the
    guide's words ("vllm-marlin: fixed upstream in vllm#45295 (2026-06-30); not in our pin
    v0.23.1; first in v0.24.0"), or None when nothing holds it."""
    held = readiness(pin, blockers)["held_by_pin"]
    if not held:
        return None
    fixes = (view(pin) or {}).get("fixes") or []
    return "; ".join(
        f"{b}: " + ", ".join(f["text"] for f in fixes if f.get("blocker") == b) for b in held
    )


def tracker_check(pins: dict[str, dict[str, Any]]) -> PinCheck:
    """The tracker's PinCheck from the stored pins: a merged link is in our pin when its fix is
    in the pin of every recipe whose engine lives in the fix's repository; None when no recipe
    pins that engine, one of those pins resolves to no commit, or no compare of this fix with it
    is stored (with [tracker], the pins compare every merged item of the watch list, not only
    the fixes of a recipe's own blockers: `tracked` beside `fixes`)."""

    def check(link: Link, row: dict[str, Any]) -> bool | None:
        details = row.get("details") or {}
        sha = details.get("merge_commit_sha")
        repo = (details.get("superseded_repo") or row.get("repo") or link.repo or "").lower()
        mine = [p for p in pins.values() if p.get("repo") and p["repo"].lower() == repo]
        if not sha or not mine:
            return None
        states = []
        for pin in mine:
            if not (pin.get("resolved") or {}).get("sha"):
                return None
            compared = [*(pin.get("fixes") or ()), *(pin.get("tracked") or ())]
            found = [f for f in compared if f.get("fix_sha") == sha]
            states.append(fix_state(found[0].get("compare")) if found else None)
        if AWAITING_PIN in states:
            return False
        return True if all(s == IN_PIN for s in states) else None

    return check


def recipe_view(
    pin: dict[str, Any] | None, blockers: dict[str, str], recipe: str | None = None
) -> dict[str, Any]:
    """One recipe's pin as readers see it: the stored doc with fix states, liveness, readiness
    on the pin and the bump the cycle proposes (the shape `watcher pins --json` and
    status.json's `pins` share)."""
    shown = view(pin) or {"kind": "none", "why": "not read yet (run watcher pins --check)"}
    out = {**shown, **readiness(pin, blockers)}
    out["proposal"] = proposal(out, recipe)
    return out


IMAGE_KINDS = ("tag", "digest", "nightly")  # what `watcher bump` can move (never a package)


def version_key(tag: str) -> tuple:
    """`v0.28.0` -> (0, 28, 0), `b10300` -> (10300,): the newest of several releases."""
    return tuple(
        int(p) if p.isdigit() else 0 for p in tag.lstrip("vb").replace("-", ".").split(".")
    )


def proposal(v: dict[str, Any], recipe: str | None = None) -> dict[str, Any] | None:
    """The bump a cycle proposes on its own, as `watcher bump RECIPE` would choose it: the pin
    gone with a named successor -> that successor; else fixes merged upstream and not in the pin,
    each with its first release -> the newest of those releases (it carries them all). None when
    neither (or the pin is no image). `text`: "bump proposed: v0.23.1 → v0.24.0 (brings
    vllm#45295); run: watcher bump vllm-tp2" (plain text: the page codes references itself);
    `brings`: the missing fixes it carries (none named for a gone pin: its successor is chosen
    for the fixes the pin had); `gated`: the gate has judged this very bump (its verdict then
    speaks for it, and readers are not told to run it again)."""
    if (v.get("kind") or "none") not in IMAGE_KINDS:
        return None
    awaiting = [f for f in v.get("fixes") or [] if f.get("state") == AWAITING_PIN]
    refs = [str(f.get("ref") or f.get("item")) for f in awaiting]
    if v.get("gone"):
        new = (v.get("successor") or {}).get("release")
        if not new:
            return None
        why = f"its pinned build is gone; {new} still exists with the same fixes"
        refs = []
    elif awaiting and all(f.get("first_release") for f in awaiting):
        new = max((f["first_release"] for f in awaiting), key=version_key)
        why = "brings " + ", ".join(refs)
    else:
        return None
    old = pin_name(v)
    run = f"; run: watcher bump {recipe}" if recipe else "; run watcher bump on this recipe"
    return {
        "old": old,
        "new": new,
        "brings": refs,
        "gone": bool(v.get("gone")),
        "gated": (v.get("bump") or {}).get("new") == new,
        "text": f"bump proposed: {old} → {new} ({why}){run}",
    }


def proposed_text(v: dict[str, Any]) -> str | None:
    """The proposal's sentence, when one is to be said (not once the gate has judged it)."""
    prop = v.get("proposal") or {}
    return prop["text"] if prop and not prop.get("gated") else None


def carried_by(v: dict[str, Any]) -> str:
    """ "; v0.24.0 would carry it" after a fix that is not in the pin, unless a proposal (which
    names the build) is said instead."""
    if v.get("proposal"):
        return ""
    return f"; {', '.join(v.get('newer_builds') or []) or 'a newer build'} would carry it"


def format_text(views: dict[str, dict[str, Any]]) -> str:
    """`watcher pins`: one block per recipe."""
    out = []
    for recipe, v in views.items():
        kind = v.get("kind") or "none"
        head = f"{recipe}  {v.get('reference') or '(no pin)'}"
        out.append(head + (f"  ({kind}, from {v['origin']})" if v.get("origin") else ""))
        res = v.get("resolved") or {}
        if kind == "none":
            out.append(f"  pin      none: {v.get('why')}")
        elif res.get("sha"):
            line = f"  commit   {res['sha'][:12]} ({res.get('how')})"
            out.append(line + (f"; stale: {res['error']}" if res.get("error") else ""))
        else:
            out.append(f"  commit   not resolved: {res.get('why') or 'not read yet'}")
        live = v.get("liveness") or {}
        if kind != "none":
            out.append(f"  exists   {_exists(live)}")
        for f in v.get("fixes") or []:
            out.append(f"  fix      {f['blocker']}: {f['text']}")
        if v.get("held_by_pin"):
            out.append(
                f"  ready    not on its pin: {', '.join(v['held_by_pin'])} fixed upstream, not in"
                f" {pin_name(v)}" + carried_by(v)
            )
        if successor_phrase(v) and not v.get("proposal"):
            out.append(f"  next     {successor_phrase(v)}")
        if proposed_text(v):
            out.append(f"  propose  {proposed_text(v)}")
        if (v.get("bump") or {}).get("text"):
            out.append(f"  bump     {v['bump']['text']} ({str(v['bump'].get('at'))[:10]})")
    return "\n".join(out)


def _exists(live: dict[str, Any]) -> str:
    if not live.get("checked_at"):
        return "not checked yet"
    stale = f" (stale: {live['error']})" if live.get("error") else ""
    if live.get("exists") is True:
        return f"yes, {live.get('last_digest') or 'digest unknown'}, checked {live['checked_at']}{stale}"
    if live.get("exists") is False:
        return (
            f"GONE since {live.get('gone_since')}; last seen {live.get('last_seen') or 'never'},"
            f" last known digest {live.get('last_digest') or 'unknown'}{stale}"
        )
    return f"unknown{stale}"


def reader_lines(v: dict[str, Any]) -> list[str]:
    """What a page says under a recipe about the build it runs (a recipe_view): the build
    first, then what is known of it."""
    out = []
    if (v.get("kind") or "none") != "none" and v.get("reference"):
        sha = (v.get("resolved") or {}).get("sha")
        out.append(f"Runs {v['reference']}" + (f" (commit {sha[:12]})." if sha else "."))
    if v.get("gone"):
        live = v.get("liveness") or {}
        out.append(
            f"Its pinned build {v.get('reference')} is no longer published (gone since"
            f" {str(live.get('gone_since'))[:10]}; last seen {str(live.get('last_seen'))[:10]}):"
            " the pin needs a bump before it can be tested."
        )
    out += [f"{f['text'][0].upper()}{f['text'][1:]}." for f in v.get("fixes") or []]
    prop, said = v.get("proposal"), proposed_text(v)
    if v.get("held_by_pin") and not v.get("gone"):
        newer = ", ".join(v.get("newer_builds") or []) or "a newer build"
        out.append(
            f"Not ready to test on its pin {pin_name(v)}"
            + (f"; {said}." if said else "." if prop else f": {newer} would carry the fix.")
        )
    elif said:
        out.append(said[0].upper() + said[1:] + ".")
    nxt = successor_phrase(v)
    if nxt and not prop:
        out.append(nxt[0].upper() + nxt[1:] + ".")
    if (v.get("bump") or {}).get("text"):
        b = v["bump"]
        out.append(f"Pin-bump gate ({str(b.get('at'))[:10]}): {b['text']}.")
    return out


def successor_phrase(v: dict[str, Any]) -> str | None:
    """For a gone pin: "the newest build that still exists with the same fixes: v0.28.0
    (vllm/vllm-openai:v0.28.0)", or why none is named; None for a live pin."""
    if not v.get("gone"):
        return None
    nxt = v.get("successor") or {}
    if nxt.get("release"):
        return f"the newest build that still exists with the same fixes: {nxt['release']} ({nxt['image']})"
    return f"no newer build with the same fixes is named: {nxt.get('why') or 'not looked for yet'}"


def short_line(v: dict[str, Any]) -> str:
    """One line per recipe for the matrix: the build, whether the fixes are in it, gone, and the
    bump gate's verdict ("v0.27.1 · 1 fix not in pin · bump ready → v0.28.0")."""
    if (v.get("kind") or "none") == "none":
        return "pin unknown"
    parts = [pin_name(v)]
    states = [f.get("state") for f in v.get("fixes") or []]
    if AWAITING_PIN in states:
        n = states.count(AWAITING_PIN)
        parts.append(f"{n} fix{'es' if n > 1 else ''} not in pin")
    elif states and all(s == IN_PIN for s in states):
        parts.append("fixes in pin")
    if v.get("gone"):
        nxt = (v.get("successor") or {}).get("release")
        parts.append("GONE" + (f", next {nxt}" if nxt else ""))
    b = v.get("bump") or {}
    if b.get("state"):
        parts.append(f"bump {b['state']} → {b.get('new')}")
    return " · ".join(parts)
