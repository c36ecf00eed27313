"""The guide's optional checks, beside the known-answer and stream probes: a tool call, a
streamed tool call, a long answer that must not loop (degeneracy), and the spec-decode
acceptance floor. Each runs only when the recipe's [recipe.checks] asks for it, is named in the
verdict, and fails with one plain line.

`run_checks` is the probe stage's hook: it runs after `probes.probe` on the same engine, adds
its failures to the probe's and returns one record per check for the result document.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from watcher.config.model import Recipe
from watcher.smoke.probes import (
    NO_THINKING,
    Overran,
    Probe,
    bounded_client,
    overran_text,
    sse_objects,
)

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city's name."}},
            "required": ["city"],
        },
    },
}
TOOL_PROMPT = "What is the weather in Paris right now? Use the get_weather tool."
LONG_PROMPT = (
    "Write a long, detailed essay on the history of the printing press, from its origins to the"
    " present day, with many specific examples. Do not repeat yourself."
)
LOOP_MIN_WORDS = 60  # a repeating tail shorter than this is not a loop worth failing on
LOOP_MAX_PERIOD = 200  # in words
LOOP_MIN_REPEATS = 3


def _check(name: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "detail": detail}


def _tool_body(p: Probe, recipe: Recipe, stream: bool) -> dict[str, Any]:
    body = {
        "model": p.model or recipe.model or "default",
        "messages": [{"role": "user", "content": TOOL_PROMPT}],
        "tools": [WEATHER_TOOL],
        "tool_choice": "auto",
        "temperature": 0,
        "max_tokens": 256,
        "chat_template_kwargs": NO_THINKING,
    }
    if stream:
        body["stream"] = True
    return body


def _judge_call(name: str | None, arguments: str) -> str | None:
    """Why a tool call is not a usable get_weather call, or None when it is."""
    if name != "get_weather":
        return f"called {name!r}, not 'get_weather'"
    try:
        args = json.loads(arguments or "")
    except ValueError:
        return f"its arguments are not JSON: {arguments[:120]!r}"
    if not isinstance(args, dict) or not args.get("city"):
        return f"its arguments name no city: {arguments[:120]!r}"
    return None


def tool_call(client: httpx.Client, p: Probe, recipe: Recipe) -> dict[str, Any]:
    """A `tools` request must come back with `tool_calls[]` naming the tool, JSON arguments."""
    r = client.post("/v1/chat/completions", json=_tool_body(p, recipe, stream=False))
    if r.status_code != 200:
        return _check("tool-call", False, f"answered HTTP {r.status_code}: {r.text[:160]}")
    choice = (r.json().get("choices") or [{}])[0]
    msg = choice.get("message") or {}
    calls = msg.get("tool_calls") or []
    if not calls:
        content = (msg.get("content") or "")[:120]
        return _check(
            "tool-call",
            False,
            f"no tool_calls[] in the answer (finish_reason {choice.get('finish_reason')!r},"
            f" content {content!r}); is the engine's tool parser on?",
        )
    fn = calls[0].get("function") or {}
    why = _judge_call(fn.get("name"), fn.get("arguments") or "")
    if why:
        return _check("tool-call", False, f"a tool call came back, but {why}")
    return _check("tool-call", True, f"get_weather({fn.get('arguments')})")


def stream_tool_call(client: httpx.Client, p: Probe, recipe: Recipe) -> dict[str, Any]:
    """The same request streamed: the deltas must carry the call, its arguments in pieces."""
    names: dict[int, str] = {}
    args: dict[int, str] = {}
    chunks = 0
    with client.stream("POST", "/v1/chat/completions", json=_tool_body(p, recipe, True)) as r:
        if r.status_code != 200:
            r.read()
            return _check("stream-tool-call", False, f"answered HTTP {r.status_code}")
        for obj in sse_objects(r):
            for choice in obj.get("choices") or []:
                for call in (choice.get("delta") or {}).get("tool_calls") or []:
                    chunks += 1
                    i = int(call.get("index", 0))
                    fn = call.get("function") or {}
                    if fn.get("name"):
                        names[i] = names.get(i, "") + fn["name"]
                    args[i] = args.get(i, "") + (fn.get("arguments") or "")
    if not names:
        return _check("stream-tool-call", False, "no tool_calls in the streamed deltas")
    why = _judge_call(names.get(0), args.get(0, ""))
    if why:
        return _check("stream-tool-call", False, f"a streamed tool call came back, but {why}")
    return _check("stream-tool-call", True, f"get_weather in {chunks} delta(s)")


_WORD = re.compile(r"\S+")


def find_loop(text: str) -> tuple[int, int, str] | None:
    """The repeating tail of a degenerate answer: (period in words, words covered, the phrase),
    or None. A tail of at least LOOP_MIN_WORDS words that repeats one phrase of up to
    LOOP_MAX_PERIOD words at least LOOP_MIN_REPEATS times is a loop."""
    words = [w.lower().strip(".,;:!?\"'()") for w in _WORD.findall(text)]
    n = len(words)
    best = None
    for period in range(1, min(LOOP_MAX_PERIOD, n // LOOP_MIN_REPEATS) + 1):
        run = 0
        i = n - 1
        while i - period >= 0 and words[i] == words[i - period]:
            run += 1
            i -= 1
        covered = run + period
        if covered >= max(LOOP_MIN_WORDS, LOOP_MIN_REPEATS * period):
            if best is None or covered > best[1]:
                best = (period, covered, " ".join(words[n - period :]))
    return best


def degeneracy(client: httpx.Client, p: Probe, recipe: Recipe, tokens: int) -> dict[str, Any]:
    """A long answer (temperature 0, `tokens` long) must not end in a loop of one phrase."""
    body = {
        "model": p.model or recipe.model or "default",
        "messages": [{"role": "user", "content": LONG_PROMPT}],
        "temperature": 0,
        "max_tokens": tokens,
        "chat_template_kwargs": NO_THINKING,
    }
    r = client.post("/v1/chat/completions", json=body)
    if r.status_code != 200:
        return _check("long-output", False, f"answered HTTP {r.status_code}: {r.text[:160]}")
    data = r.json()
    text = ((data.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
    got = (data.get("usage") or {}).get("completion_tokens") or len(_WORD.findall(text))
    loop = find_loop(text)
    if loop:
        period, covered, phrase = loop
        return _check(
            "long-output",
            False,
            f"the {got}-token answer degenerates: its last {covered} words repeat a"
            f" {period}-word phrase ({phrase[:80]!r})",
        )
    return _check("long-output", True, f"{got} tokens, no repeated loop")


def accept_floor(p: Probe, recipe: Recipe) -> dict[str, Any] | None:
    """The spec-decode acceptance floor, as a named check (the probe already failed the run
    when it is below the floor; this records it by name)."""
    floor = recipe.checks.min_accept_length
    if not recipe.spec_decode or floor is None:
        return None
    a = p.accept_length
    if a is None:  # the probe notes it; nothing to judge
        return {
            "name": "accept-floor",
            "ok": None,
            "detail": f"no accept length reported (floor {floor})",
        }
    return _check("accept-floor", a >= floor, f"accept length {a:.2f} against a floor of {floor}")


def run_checks(
    base_url: str, recipe: Recipe, p: Probe, timeout: float = 600.0, deadline: float | None = None
) -> list[dict]:
    """The recipe's optional checks on the running engine, all by `deadline` (none once the
    probes overran); failures are added to `p.failures` (one plain line each), a passing list
    to `p.notes`. Returns the records, in order."""
    c = recipe.checks
    out: list[dict[str, Any]] = []
    wanted = [
        ("tool-call", c.tool_call, lambda cl: tool_call(cl, p, recipe)),
        ("stream-tool-call", c.stream_tool_call, lambda cl: stream_tool_call(cl, p, recipe)),
        (
            "long-output",
            c.long_output_tokens is not None,
            lambda cl: degeneracy(cl, p, recipe, c.long_output_tokens or 0),
        ),
    ]
    if any(on for _, on, _ in wanted) and not p.overran:
        with bounded_client(base_url, timeout, deadline) as client:
            for name, on, fn in wanted:
                if not on:
                    continue
                try:
                    out.append(fn(client))
                except Overran as e:
                    p.overran = True
                    p.failures.append(overran_text(recipe, e))
                    break
                except httpx.HTTPError as e:
                    out.append(_check(name, False, f"request failed: {type(e).__name__}: {e}"))
                except ValueError as e:
                    out.append(_check(name, False, f"malformed answer: {e}"))
    floor = accept_floor(p, recipe)
    if floor is not None:
        out.append(floor)
    for check in out:
        if check["ok"] is False and check["name"] != "accept-floor":  # the probe failed that one
            p.failures.append(f"{check['name']} check: {check['detail']}")
    passed = [x["name"] for x in out if x["ok"]]
    if passed:
        p.notes.append("checks passed: " + ", ".join(passed))
    return out
