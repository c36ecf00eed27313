"""Is the engine up, and does it work: the port check, readiness polling, the HTTP probes.

Before launch, the port must be free. While it starts, `wait_ready` polls the ready path and
watches the log for a known failure; a 200 counts once a generation answers too (vLLM's /health
says 200 while its first request can still fail). Once ready, `probe` asks /v1/models, a
temperature-0 known answer, repeated streamed completions after a warm-up (TTFT and decode
tokens/s from the engine's usage count, timed by its own /metrics clocks when it keeps them) and
the spec-decode accept length over that window.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from watcher.config.model import Recipe
from watcher.smoke.launch import RunProcesses
from watcher.store.smokerun import SmokeResult

if TYPE_CHECKING:
    from watcher.smoke.log import LogPump

DECODE_PROMPT = "Count upward from one in English words, one word per number, without stopping."
DECODE_TOKENS = 128
SPEC_BROKEN_BELOW = 1.1  # an accept length this close to 1.0 means no draft token is ever kept
# Thinking models (Qwen3) would spend a short max_tokens inside <think>; templates that do not
# know the flag ignore it.
NO_THINKING = {"enable_thinking": False}
PORT_IN_USE = "port-in-use"  # the built-in signature for a port another process holds


# ---------------------------------------------------------------- the port


def port_taken(port: int) -> str | None:
    """Why `port` cannot be the engine's (something answers or listens there), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        if s.connect_ex(("127.0.0.1", port)) == 0:
            return f"something already answers on 127.0.0.1:{port}"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError as e:
            return f"port {port} cannot be bound: {e.strerror or e}"
    return None


def refuse_taken_port(result: SmokeResult, port: int, whose: str, fix: str) -> bool:
    """Before a launch: when `port` is taken, mark `result` as a port-in-use error (the engine is
    never started) and say so. `whose` names the port ("the recipe serves on"), `fix` the cure."""
    taken = port_taken(port)
    if not taken:
        return False
    result.outcome, result.signature = "error", PORT_IN_USE
    result.reason = f"not launched: {taken}; another process holds the port {whose} ({fix})"
    return True


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on `port` (any address), from /proc/net/tcp{,6}."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                out.add(cols[9])
    return out


def _socket_inodes(pids) -> set[str]:
    out = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    out.add(link[8:-1])
    return out


def served_by(port: int, procs: RunProcesses) -> bool | None:
    """Is the server listening on `port` one of this run's processes? None when /proc can't say."""
    listening = _listening_inodes(port)
    if not listening:
        return None
    return bool(listening & _socket_inodes(pid for pid, _ in procs.pids()))


# ---------------------------------------------------------------- probes


@dataclass
class Probe:
    """What the probes measured and which checks failed."""

    model: str | None = None
    answer: str | None = None
    ttft_s: float | None = None
    decode_tokens_per_s: float | None = None
    accept_length: float | None = None
    engine_version: str | None = None
    decode: dict[str, float | int] | None = None  # spread over the repeats
    ttft: dict[str, float | int] | None = None
    decode_tokens: int | None = None  # tokens per timed generation (the engine's count)
    timing_source: str | None = None  # engine (its own /metrics clocks) or client
    decode_samples: list[float] = field(default_factory=list)  # tokens/s of each repeat
    ttft_samples: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    overran: bool = False  # the probes and checks ran past `probe_timeout`


def _models(client: httpx.Client, p: Probe, fallback: str) -> None:
    r = client.get("/v1/models")
    if r.status_code != 200:
        p.failures.append(f"GET /v1/models answered HTTP {r.status_code}")
        p.model = fallback or None
        return
    data = r.json().get("data") or []
    p.model = data[0].get("id") if data else (fallback or None)
    if not data:
        p.failures.append("GET /v1/models listed no model")


def completion_tokens(obj: dict[str, Any]) -> int | None:
    """The engine's own count of generated tokens (`usage.completion_tokens`), if it gave one."""
    n = (obj.get("usage") or {}).get("completion_tokens")
    return int(n) if isinstance(n, int | float) and not isinstance(n, bool) else None


def _known_answer(client: httpx.Client, p: Probe, recipe: Recipe) -> None:
    body = {
        "model": p.model or recipe.model or "default",
        "messages": [{"role": "user", "content": recipe.checks.prompt}],
        "temperature": 0,
        "max_tokens": recipe.checks.max_tokens,
        "chat_template_kwargs": NO_THINKING,
    }
    r = client.post("/v1/chat/completions", json=body)
    if r.status_code != 200:
        p.failures.append(f"chat completion answered HTTP {r.status_code}: {r.text[:200]}")
        return
    obj = r.json()
    msg = (obj.get("choices") or [{}])[0].get("message") or {}
    content = msg.get("content") or ""
    p.answer = content.strip()
    tokens = completion_tokens(obj)
    if (tokens if tokens is not None else len(content)) < 1:
        p.failures.append("known-answer check: the engine generated no token")
    elif recipe.checks.expect and recipe.checks.expect.lower() not in p.answer.lower():
        p.failures.append(
            f"known-answer check: expected {recipe.checks.expect!r}, got {p.answer[:120]!r}"
        )


@dataclass
class Timing:
    """One streamed generation: time to first token, decode rate over the whole generation."""

    ttft_s: float
    tokens: int
    decode_s: float  # from the first chunk with text to the end of the stream
    first_tokens: int = 1  # tokens in that first chunk (the engine's count when it streams usage)

    @property
    def tokens_per_s(self) -> float | None:
        decoded = self.tokens - self.first_tokens
        if decoded < 1 or self.decode_s <= 0:
            return None
        return decoded / self.decode_s


def stream_once(client: httpx.Client, model: str, max_tokens: int = DECODE_TOKENS) -> Timing:
    """One temperature-0 streamed chat completion of `max_tokens` tokens (EOS ignored).

    Real engines send several tokens per chunk, so the tokens come from the engine's usage
    figure, never from the number of chunks, and decode is timed from the first chunk to the
    end of the stream (the tokens after that first chunk over that span), never between the
    first and last chunk that carries text.
    Raises ProbeError when the engine answers badly.
    """
    body = {
        "model": model,
        "messages": [{"role": "user", "content": DECODE_PROMPT}],
        "temperature": 0,
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "chat_template_kwargs": NO_THINKING,
        "stream": True,
        # vLLM also puts the running count in every chunk: the first chunk's share is known
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    sent = time.monotonic()
    first = None
    first_tokens = 1
    chunks, usage_tokens = 0, None
    with client.stream("POST", "/v1/chat/completions", json=body) as r:
        if r.status_code != 200:
            r.read()
            raise ProbeError(f"streamed completion answered HTTP {r.status_code}: {r.text[:200]}")
        for obj in sse_objects(r):
            running = completion_tokens(obj)
            usage_tokens = running or usage_tokens
            for choice in obj.get("choices") or []:
                text = (choice.get("delta") or {}).get("content") or choice.get("text")
                if text:
                    if first is None:
                        first = time.monotonic()
                        first_tokens = running or 1
                    chunks += 1
    end = time.monotonic()
    if first is None:
        raise ProbeError("streamed completion produced no tokens")
    if usage_tokens is None:
        raise ProbeError(
            "streamed completion reported no usage (stream_options.include_usage): "
            f"{chunks} chunks cannot say how many tokens came"
        )
    return Timing(first - sent, usage_tokens, end - first, min(first_tokens, usage_tokens))


def sse_objects(r: httpx.Response) -> Iterator[dict[str, Any]]:
    """The JSON objects of an OpenAI-style event stream (`data:` lines), up to its [DONE];
    a line that is not JSON is skipped. A stream past its client's deadline raises `Overran`."""
    deadline = r.request.extensions.get(DEADLINE)
    for line in r.iter_lines():
        if deadline is not None and time.monotonic() > deadline:
            raise Overran("a streamed answer was still going (no [DONE])", request=r.request)
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        try:
            obj = json.loads(payload)
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


class Overran(httpx.TimeoutException):
    """The probes and checks ran past their deadline (`probe_timeout`): an answer that never
    ends, or an engine that answers too slowly to judge."""


DEADLINE = "watcher_deadline"  # a request's extension: when its probes must have ended


def bounded_client(base_url: str, timeout: float, deadline: float | None) -> httpx.Client:
    """An httpx client whose every request ends by `deadline` (monotonic), and every streamed
    answer read through `sse_objects` too: each read waits at most what is left."""

    def before(request: httpx.Request) -> None:
        if deadline is None:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise Overran("no time left for another request", request=request)
        request.extensions["timeout"] = httpx.Timeout(min(timeout, left)).as_dict()
        request.extensions[DEADLINE] = deadline

    return httpx.Client(
        base_url=base_url, timeout=timeout, trust_env=False, event_hooks={"request": [before]}
    )


class ProbeError(Exception):
    """The engine answered a probe badly (the message says how)."""


def spread(values: list[float]) -> dict[str, float | int] | None:
    """median, min, max and their relative spread ((max - min) / median) of repeated figures."""
    if not values:
        return None
    v = sorted(values)
    n = len(v)
    med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return {
        "median": round(med, 4),
        "min": round(v[0], 4),
        "max": round(v[-1], 4),
        "n": n,
        "spread": round((v[-1] - v[0]) / med, 4) if med else 0.0,
    }


def engine_timing(before: dict[str, float], after: dict[str, float]) -> tuple[float, float] | None:
    """(decode tokens/s, TTFT s) of the generations between two /metrics readings, from the
    engine's own clocks, or None when it keeps none.

    A client on a busy host can read a whole stream's chunks at once: timing on the client then
    divides hundreds of tokens by milliseconds. vLLM times each request's decode phase itself
    (`request_decode_time_seconds`, `request_generation_tokens`, `time_to_first_token_seconds`).
    """

    def delta(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    v = "vllm:"
    if f"{v}request_decode_time_seconds_sum" in after:
        seconds = delta(f"{v}request_decode_time_seconds_sum")
        requests = delta(f"{v}request_decode_time_seconds_count")
        tokens = delta(f"{v}request_generation_tokens_sum")
        ttft_n = delta(f"{v}time_to_first_token_seconds_count")
        if seconds > 0 and requests > 0 and tokens > requests and ttft_n > 0:
            ttft = delta(f"{v}time_to_first_token_seconds_sum") / ttft_n
            return (tokens - requests) / seconds, ttft
    for prefix in ("sglang:", v):  # a per-token latency histogram: 1 / its mean
        name = f"{prefix}time_per_output_token_seconds"
        n, total = delta(f"{name}_count"), delta(f"{name}_sum")
        ttft_n = delta(f"{prefix}time_to_first_token_seconds_count")
        if n > 0 and total > 0 and ttft_n > 0:
            return n / total, delta(f"{prefix}time_to_first_token_seconds_sum") / ttft_n
    return None


def _stream(client: httpx.Client, p: Probe, recipe: Recipe) -> None:
    """A warm-up generation (not counted), then `checks.repeats` timed ones, each timed by the
    engine's own metrics when it has them, else on the client over the whole stream."""
    model = p.model or recipe.model or "default"
    rates: list[float] = []
    ttfts: list[float] = []
    sources = set()
    try:
        stream_once(client, model, max_tokens=8)  # warm-up: first-request costs stay out
        n = recipe.checks.decode_tokens
        for _ in range(recipe.checks.repeats):
            before = metrics_snapshot(client)
            t = stream_once(client, model, n)
            engine = engine_timing(before, metrics_snapshot(client)) if before else None
            if engine is not None:
                rates.append(engine[0])
                ttfts.append(engine[1])
                sources.add("engine")
            else:
                if t.tokens_per_s is not None:
                    rates.append(t.tokens_per_s)
                ttfts.append(t.ttft_s)
                sources.add("client")
            p.decode_tokens = t.tokens
    except ProbeError as e:
        p.failures.append(str(e))
        return
    p.decode_samples = [round(r, 3) for r in rates]
    p.ttft_samples = [round(x, 5) for x in ttfts]
    p.decode = spread(rates)
    p.ttft = spread(ttfts)
    p.timing_source = "+".join(sorted(sources)) or None
    p.ttft_s = round(p.ttft["median"], 4) if p.ttft else None
    p.decode_tokens_per_s = round(p.decode["median"], 2) if p.decode else None


_PROM = re.compile(r"^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+([-+0-9.eEinfNa]+)")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> metric name -> value summed over label sets."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _PROM.match(line)
        if m:
            with contextlib.suppress(ValueError):
                out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
    return out


def accept_from_metrics(metrics: dict[str, float]) -> float | None:
    """SGLang's gauge, or vLLM's counters: 1 + accepted tokens per draft."""
    for name in ("sglang:spec_accept_length", "sglang:avg_spec_accept_length"):
        if name in metrics:
            return metrics[name]
    drafts = metrics.get("vllm:spec_decode_num_drafts_total")
    accepted = metrics.get("vllm:spec_decode_num_accepted_tokens_total")
    if drafts and accepted is not None:
        return 1.0 + accepted / drafts
    return None


def _find_key(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            found = _find_key(v, key)
            if found is not None:
                return found
    elif isinstance(obj, list):
        for v in obj:
            found = _find_key(v, key)
            if found is not None:
                return found
    return None


def _engine_info(client: httpx.Client, p: Probe, recipe: Recipe) -> None:
    paths = ["/server_info", "/get_server_info"] if recipe.engine == "sglang" else []
    paths.append("/version")
    for path in paths:
        try:
            r = client.get(path)
        except httpx.HTTPError:
            continue
        if r.status_code != 200:
            continue
        with contextlib.suppress(ValueError):
            info = r.json()
            p.engine_version = p.engine_version or (
                str(info["version"]) if isinstance(info, dict) and info.get("version") else None
            )
            value = _find_key(info, "avg_spec_accept_length")
            if isinstance(value, int | float) and p.accept_length is None:
                p.accept_length = float(value)
        if p.engine_version and (p.accept_length is not None or not recipe.spec_decode):
            return
    if recipe.spec_decode and p.accept_length is None:
        with contextlib.suppress(httpx.HTTPError):
            r = client.get("/metrics")
            if r.status_code == 200:
                p.accept_length = accept_from_metrics(parse_metrics(r.text))


def metrics_snapshot(client: httpx.Client) -> dict[str, float]:
    """The engine's /metrics now (empty when it serves none)."""
    with contextlib.suppress(httpx.HTTPError):
        r = client.get("/metrics")
        if r.status_code == 200:
            return parse_metrics(r.text)
    return {}


def accept_over_window(before: dict[str, float], after: dict[str, float]) -> float | None:
    """vLLM's acceptance over the probe window: 1 + accepted tokens / drafts, counter deltas."""
    name_d, name_a = (
        "vllm:spec_decode_num_drafts_total",
        "vllm:spec_decode_num_accepted_tokens_total",
    )
    if name_d not in after or name_a not in after:
        return None
    drafts = after[name_d] - before.get(name_d, 0.0)
    accepted = after[name_a] - before.get(name_a, 0.0)
    return round(1.0 + accepted / drafts, 4) if drafts > 0 else None


def probe(
    base_url: str, recipe: Recipe, timeout: float = 120.0, deadline: float | None = None
) -> Probe:
    """Ask the running engine the questions that make a recipe 'work', all by `deadline`."""
    p = Probe()
    with bounded_client(base_url, timeout, deadline) as client:
        try:
            _models(client, p, recipe.model)
            _known_answer(client, p, recipe)
            before = metrics_snapshot(client) if recipe.spec_decode else {}
            _stream(client, p, recipe)
            if recipe.spec_decode:
                p.accept_length = accept_over_window(before, metrics_snapshot(client))
            _engine_info(client, p, recipe)
        except Overran as e:
            p.overran = True
            p.failures.append(overran_text(recipe, e))
        except httpx.HTTPError as e:
            p.failures.append(f"probe failed: {type(e).__name__}: {e}")
        except ValueError as e:
            p.failures.append(f"probe got a malformed answer: {e}")
    c = recipe.checks
    if c.min_decode_tokens_per_s is not None and p.decode_tokens_per_s is not None:
        if p.decode_tokens_per_s < c.min_decode_tokens_per_s:
            p.failures.append(
                f"decode {p.decode_tokens_per_s:.1f} tok/s is below the required "
                f"{c.min_decode_tokens_per_s:.1f}"
            )
    if recipe.spec_decode:
        a = p.accept_length
        if a is None:
            p.notes.append("spec decode is on but the engine reports no accept length")
        elif a < SPEC_BROKEN_BELOW:
            p.failures.append(
                f"accept length {a:.2f} ≈ 1.0 with spec decode on: no draft token is accepted,"
                " spec decode is silently broken"
            )
        elif c.min_accept_length is not None and a < c.min_accept_length:
            p.failures.append(f"accept length {a:.2f} is below the required {c.min_accept_length}")
    return p


def overran_text(recipe: Recipe, e: Exception) -> str:
    return f"the probes did not finish within probe_timeout ({recipe.probe_timeout:.0f} s): {e}"


# ---------------------------------------------------------------- readiness


@dataclass
class Wait:
    """How the readiness wait ended, and after how long."""

    state: str  # ready | died | timeout | fatal | foreign
    startup_s: float
    exit_code: int | None = None
    signature: str | None = None  # fatal: the family seen in the log
    last_error: str | None = None  # the ready path answered, a generation did not (yet)


def generation_answered(
    base_url: str, model: str = "", timeout: float = 60.0, deadline: float | None = None
) -> str | None:
    """None when the engine generates at least one token for a tiny request, else why not; by
    `deadline` (monotonic) at the latest, so the readiness wait keeps its own.

    `/health` can answer 200 while the first generation fails (vLLM's CPU attention refusing a
    head size, then exiting), so readiness is a generation, not a status code.
    """
    try:
        with bounded_client(base_url, timeout, deadline) as client:
            if not model:
                r = client.get("/v1/models")
                data = r.json().get("data") if r.status_code == 200 else None
                model = (data or [{}])[0].get("id") or "default"
            r = client.post(
                "/v1/chat/completions",
                json={
                    "model": model,
                    "messages": [{"role": "user", "content": "Hi"}],
                    "temperature": 0,
                    "max_tokens": 1,
                    "chat_template_kwargs": NO_THINKING,
                },
            )
            if r.status_code != 200:
                return f"a first generation answered HTTP {r.status_code}: {r.text[:200]}"
            obj = r.json()
            n = completion_tokens(obj)
            content = ((obj.get("choices") or [{}])[0].get("message") or {}).get("content")
            if (n if n is not None else len(content or "")) < 1:
                return "a first generation returned no token"
    except httpx.HTTPError as e:
        return f"a first generation failed: {type(e).__name__}: {e}"
    except (ValueError, AttributeError, IndexError) as e:
        return f"a first generation got a malformed answer: {e}"
    return None


class Polled(Protocol):
    """What the wait watches: a process, or something that says when it stopped as one does."""

    returncode: int | None

    def poll(self) -> int | None: ...


def wait_ready(
    proc: Polled,
    url: str,
    timeout: float,
    watch: LogPump | None = None,
    fatal_grace: float = 30.0,
    owner: Callable[[], bool | None] | None = None,
    progress: Callable[[], None] | None = None,
    generates: Callable[[float], str | None] | None = None,
) -> Wait:
    """Poll `url` until it answers 200 (and, with `generates`, a generation answered by the
    wait's own deadline, which it is given), the process dies, or the deadline passes: the
    wait ends within `timeout` and one request's shortest bound (0.2 s), however slow the engine.

    With `watch`, a known failure in the log that is not followed by readiness within
    `fatal_grace` seconds ends the wait early (state `fatal`), the engine still running. With
    `owner`, a 200 from a server that is not the run's own (False) ends it as `foreign`.
    """
    started = time.monotonic()
    deadline = started + timeout
    interval = 0.1
    fatal: tuple[str, float] | None = None
    last_error = None

    def end(state: str, **kw) -> Wait:
        return Wait(state, time.monotonic() - started, last_error=last_error, **kw)

    with httpx.Client(timeout=5.0, trust_env=False) as client:
        while True:
            if proc.poll() is not None:
                return end("died", exit_code=proc.returncode)
            if watch is not None and fatal is None:
                seen = watch.check()
                if seen:
                    fatal = (seen, time.monotonic() + fatal_grace)
            if fatal is not None and time.monotonic() >= fatal[1]:
                return end("fatal", signature=fatal[0])
            try:
                r = client.get(url, timeout=max(0.2, min(5.0, deadline - time.monotonic())))
                if r.status_code == 200:
                    if proc.poll() is not None:
                        return end("died", exit_code=proc.returncode)
                    if owner is not None and owner() is False:
                        return end("foreign", signature=PORT_IN_USE)
                    err = generates(deadline) if generates is not None else None
                    if err is None:
                        last_error = None
                        return end("ready")
                    # an engine's own answer says more than the refused connection after it
                    if last_error is None or "answered HTTP" not in last_error:
                        last_error = err
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                return end("died", exit_code=proc.returncode)
            if progress is not None:  # a long startup is never silent (watcher.core.progress)
                progress()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return end("timeout")
            time.sleep(min(interval, remaining))
            interval = min(interval * 1.5, 2.0)
