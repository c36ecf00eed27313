"""The pin-bump gate: whether a recipe may move from its pinned engine build to a newer one.

A bump is proposed when a newer release carries a tracked fix the pin lacks, or the pinned build
is gone: the old and new build, the fixes it brings, the commits in between (one compare). On a
host where smoke runs are allowed the gate runs the same recipe on both builds, on the same rig,
interleaved (old new, new old, ...), with the old pin as the baseline of the relative verdict
(floor 0.95: the guide's "within 5%" of decode speed) and the recipe's own checks. The new build
runs through the image swapped in the launch (a compose override file, or the `docker run`
argument): the guide's compose files are never edited; a maintainer applies the bump. It lives
here beside bisect because, like a bisect step, it runs builds that are not the recipe's own:
its runs are stored marked `bisect`, counted against the daily budget, never a recipe's verdict.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from watcher.config.model import Config, Recipe
from watcher.config.pins import Pin, recipe_pin
from watcher.config.recipes import COMPARED_CHECKS
from watcher.core.clock import iso, utcnow
from watcher.core.errors import GitHubError, WatcherError
from watcher.judge.compare import BELOW, CLEARS
from watcher.judge.pins import AWAITING_PIN, pin_name, version_key, view
from watcher.poll.pins import compare_fixes, tag_candidates, tag_commit
from watcher.poll.registry import Registry
from watcher.poll.successor import image_for, successor
from watcher.smoke.session import Session, with_comparison
from watcher.store.db import Store

DEFAULT_FLOOR = 0.95
DEFAULT_ROUNDS = 2
MAX_COMMITS_SHOWN = 20


def propose(
    cfg: Config, store: Store, recipe: Recipe, client, registry: Registry, to: str | None = None
) -> dict[str, Any]:
    """The bump of `recipe`'s pin to `to` (a release tag or a full image reference), or to the
    newest build that carries its awaiting fixes (or, gone, the pin's successor). Raises
    WatcherError when there is nothing to move from or to."""
    pin = recipe_pin(recipe)
    stored = view(store.pins().get(recipe.id)) or {}
    if stored.get("reference") != pin.reference:  # read before the recipe changed: not this pin
        stored = {}
    if pin.kind not in ("tag", "digest", "nightly"):
        raise WatcherError(f"{recipe.id}: its pin is not an image ({pin.why or pin.kind}): no bump")
    old_sha = (stored.get("resolved") or {}).get("sha") or ""
    fixes = stored.get("fixes") or []
    awaiting = [f for f in fixes if f.get("state") == AWAITING_PIN]
    spent = 0
    if to:
        release = to.rsplit(":", 1)[-1] if ("/" in to or ":" in to) else to
        image = to if ("/" in to or ":" in to) else image_for(pin, to)
        why = "asked for (--to)"
    elif stored.get("gone"):
        nxt = stored.get("successor") or {}
        if not nxt.get("release") and old_sha:
            nxt = successor(pin, old_sha, client, registry)
            spent += nxt.get("requests") or 0
        if not nxt.get("release"):
            raise WatcherError(f"{recipe.id}: its pin is gone and {nxt.get('why')}; give --to")
        release, image, why = nxt["release"], nxt["image"], "the pinned build is gone"
    elif awaiting and all(f.get("first_release") for f in awaiting):
        release = max((f["first_release"] for f in awaiting), key=version_key)
        image, why = image_for(pin, release), "a newer release carries a tracked fix"
    else:
        raise WatcherError(
            f"{recipe.id}: no newer build is known to carry a tracked fix and its pin still"
            " exists (run `watcher pins --check`, or give --to BUILD)"
        )
    new_sha = None
    for tag in tag_candidates(release) if pin.repo else []:  # `server-cuda-b10300` -> `b10300`
        spent += 1
        new_sha = tag_commit(client, pin.repo, tag)
        if new_sha:
            break
    brings = [dict(f) for f in awaiting]
    if new_sha and brings:
        compare_fixes(client, pin.repo, new_sha, brings, [])
        spent += len(brings)
    return {
        "recipe": recipe.id,
        "old": pin_name(stored) if stored else pin.ref,
        "old_image": pin.reference,
        "old_sha": old_sha,
        "new": release,
        "new_image": image,
        "new_sha": new_sha or "",
        "why": why,
        "brings": [
            {k: f.get(k) for k in ("blocker", "ref", "merged_at", "text")}
            for f in brings
            if f.get("compare") in ("ahead", "identical")
        ],
        "lacks": [f.get("ref") for f in brings if f.get("compare") not in ("ahead", "identical")],
        "commits": _between(client, pin, old_sha, new_sha),
        "requests": spent + (1 if old_sha and new_sha else 0),
    }


def _between(client, pin: Pin, old: str, new: str | None) -> dict[str, Any]:
    """The commits from the old pin to the new build (one compare), or why not known."""
    if not (old and new and pin.repo):
        return {"why": "one of the builds resolves to no commit"}
    try:
        data = client.get_json(f"/repos/{pin.repo}/compare/{old}...{new}")
    except GitHubError as e:
        return {"why": f"compare failed: {e}"}
    shown = [
        {
            "sha": c.get("sha", "")[:12],
            "title": ((c.get("commit") or {}).get("message") or "").split("\n")[0][:120],
        }
        for c in (data.get("commits") or [])[-MAX_COMMITS_SHOWN:]
    ]
    return {
        "status": data.get("status"),
        "ahead_by": data.get("ahead_by"),
        "behind_by": data.get("behind_by"),
        "shown": shown,
        "url": data.get("html_url"),
    }


def build_recipe(recipe: Recipe, image: str, old_image: str) -> Recipe:
    """`recipe` running `image`: a compose service through an override file, a `docker run`
    argv with its image argument swapped. Comparison defaults apply (10 x 256 tokens) unless
    the recipe sets its own repeats or length. Alone: no baseline of its own."""
    checks = recipe.checks
    if (checks.repeats, checks.decode_tokens) == (3, 128):
        checks = replace(
            checks, repeats=COMPARED_CHECKS.repeats, decode_tokens=COMPARED_CHECKS.decode_tokens
        )
    common = dict(
        checks=checks, baseline=None, min_speed_vs_baseline=None, max_ttft_vs_baseline=None
    )
    if recipe.compose:
        return replace(recipe, image_override=image if image != old_image else "", **common)
    if old_image not in recipe.command:
        raise WatcherError(f"{recipe.id}: its command does not name the image {old_image}")
    command = tuple(image if a == old_image else a for a in recipe.command)
    return replace(recipe, command=command, **common)


def plan(prop: dict[str, Any], floor: float, rounds: int) -> dict[str, Any]:
    """What the gate would run: the launches in order and their count."""
    order = []
    for i in range(rounds):
        pair = [("old", prop["old_image"]), ("new", prop["new_image"])]
        order += [(i + 1, side, img) for side, img in (pair if i % 2 == 0 else pair[::-1])]
    return {"floor": floor, "rounds": rounds, "launches": 2 * rounds, "order": order}


def run_gate(
    cfg: Config,
    store: Store,
    recipe: Recipe,
    prop: dict[str, Any],
    *,
    floor: float = DEFAULT_FLOOR,
    rounds: int = DEFAULT_ROUNDS,
    left: int,
    progress=lambda _m: None,
    launch=None,
) -> dict[str, Any]:
    """Run the gate (2 x rounds launches, each stored and counted) and store its verdict on the
    recipe's pin. -> the verdict document. `left`: launches the daily budget still allows;
    `launch(cfg, recipe, run_id=...)` -> SmokeResult runs one (smoke.run.run_result)."""
    from watcher.smoke.run import new_run_id, record_run, run_result

    launch = launch or run_result

    if 2 * rounds > left:
        raise WatcherError(
            f"the gate needs {2 * rounds} launches and smoke.max_runs_per_day leaves {left} today"
        )
    old_r = replace(
        build_recipe(recipe, prop["old_image"], prop["old_image"]), title=f"the pin {prop['old']}"
    )
    new_r = replace(
        build_recipe(recipe, prop["new_image"], prop["old_image"]), min_speed_vs_baseline=floor
    )
    gate_id = f"bump-{recipe.id}-{iso(utcnow())}"
    mine, theirs = [], []
    for i, r in Session(old_r, rounds, [new_r]).order():
        side = "old" if r is old_r else "new"
        image = prop["old_image"] if side == "old" else prop["new_image"]
        progress(f"round {i + 1}: {side} {image}")
        res = launch(cfg, r, run_id=new_run_id(recipe.id))
        if res.outcome == "skipped":  # no target GPU here: nothing was judged
            raise WatcherError(f"the gate did not run: {res.reason}")
        res.extra["bisect"] = {"bump": gate_id, "build": image, "side": side}
        record_run(store, res)
        (theirs if side == "old" else mine).append(res)
    last = with_comparison(new_r, old_r, mine, theirs)
    out = verdict(prop, last.comparison or {}, mine, theirs)
    out.update(id=gate_id, at=iso(utcnow()), run_ids=[r.run_id for r in theirs + mine])
    doc = store.pins().get(recipe.id)
    if doc is not None:
        doc["bump"] = out
        store.put_pin(recipe.id, doc, out["at"])
    return out


def verdict(prop: dict[str, Any], c: dict[str, Any], mine: list, theirs: list) -> dict[str, Any]:
    """The gate's verdict and its sentence: "bump ready: v0.27.1 → v0.28.0 decodes at 0.99×
    (84 vs 85 tokens/s), all checks pass", or what failed."""
    move = f"{prop['old']} → {prop['new']}"
    failed_new = [r for r in mine if not r.passed]
    failed_old = [r for r in theirs if not r.passed]
    speed = ""
    if c.get("speed_ratio") is not None:
        speed = (
            f"decodes at {c['speed_ratio']:.2f}× ({c['decode_tokens_per_s']:.0f} vs"
            f" {c['baseline_decode_tokens_per_s']:.0f} tokens/s)"
        )
    if failed_new:
        state = "not ready"
        text = f"bump not ready: {move}: the new build failed: {failed_new[-1].reason}"
    elif failed_old:
        state = "not judged"
        text = f"bump not judged: {move}: the old pin failed on this rig: {failed_old[-1].reason}"
    elif c.get("verdict") == CLEARS:
        state, text = "ready", f"bump ready: {move} {speed}, all checks pass"
    elif c.get("verdict") == BELOW:
        state = "not ready"
        text = f"bump not ready: {move} {speed}, below the floor {c.get('floor')}×"
    else:
        state = "not judged"
        text = f"bump not judged: {move} {speed or ''}: insufficient data ({c.get('why')})"
    return {
        "state": state,
        "text": " ".join(text.split()),
        "old": prop["old"],
        "new": prop["new"],
        "new_image": prop["new_image"],
        "comparison": {k: v for k, v in c.items() if not isinstance(v, list) or k == "interval"},
    }


def proposal_text(prop: dict[str, Any]) -> str:
    """`watcher bump` without a GPU or with --dry-run: the proposal, for a maintainer."""
    lines = [
        f"{prop['recipe']}: bump {prop['old']} → {prop['new']} ({prop['why']})",
        f"  old      {prop['old_image']}  {prop['old_sha'][:12] or '(commit unknown)'}",
        f"  new      {prop['new_image']}  {prop['new_sha'][:12] or '(commit unknown)'}",
    ]
    for f in prop["brings"]:
        lines.append(f"  brings   {f['blocker']}: {f['ref']} (merged {str(f['merged_at'])[:10]})")
    for ref in prop["lacks"]:
        lines.append(f"  lacks    {ref} (not in {prop['new']} either)")
    c = prop["commits"]
    if c.get("ahead_by") is not None:
        lines.append(f"  commits  {c['ahead_by']} between them ({c.get('status')})")
        lines += [f"           {x['sha']} {x['title']}" for x in c.get("shown") or []]
    else:
        lines.append(f"  commits  not known: {c.get('why')}")
    return "\n".join(lines)
