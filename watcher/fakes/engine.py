"""A fake `sglang.launch_server` for tests and `watcher demo`: no GPU, no model, same surface.

    python -m watcher.fakes.engine --port 30000 --mode ready --ready-delay 0.5

Modes: `ready` (binds the port after --ready-delay, then serves /health_generate, /health,
/v1/models, /v1/chat/completions (streamed and not), /server_info, /get_server_info, /metrics,
/version); `crash` (prints --log-file or --log-text, then exits --exit-code); `hang` (prints a
loading line and never binds); `ignore-term` (ready, but it and its children ignore SIGTERM).
--tools call answers a request with `tools` with a tool call (streamed or not; `ignore`, the
default, answers in text like an engine without a tool parser); a long answer (max_tokens over
200) counts on in number words, or with --degenerate falls into a loop of one phrase;
--endless-stream all|tools never ends a streamed answer (no [DONE]).
--children N spawns N grandchildren (that ignore SIGTERM in ignore-term mode). --tokens-per-s,
--burst (tokens per chunk) and --ttft set its speed; --generation-fails answers /health but not a
generation (vLLM's head-size trap); --slow-generation S holds every completion S seconds before
its first byte (an engine that keeps being slow). Unknown arguments (the real engine's flags) are accepted and
ignored.

Builds (for `watcher bisect`): --build names the build this process is (an image ref or a pip
requirement; default: $FAKE_DOCKER_IMAGE, which the tests' fake docker sets from `docker run`'s
image). With --builds (the builds in order), --bad-from B makes B and later builds crash with
--bad-log (or, with --bad-mode slow, serve at --bad-tokens-per-s; with degenerate, loop long
answers); --fixed-from B makes builds before B crash instead; --broken lists builds that
crash differently; --report-version B=V makes build B report version V (a mislabelled
image). --speed-noise F jitters the speed by up to +-F.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

WORDS = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty"
).split()


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="fakeengine", description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--mode", choices=("ready", "crash", "hang", "ignore-term"), default="ready")
    p.add_argument("--ready-delay", type=float, default=0.5)
    p.add_argument("--log-file", help="crash mode: print this file, then exit")
    p.add_argument(
        "--log-text",
        default="",
        help="crash: print this text, then exit; hang: print it, then hang",
    )
    p.add_argument("--exit-code", type=int, default=1)
    p.add_argument("--children", type=int, default=0)
    p.add_argument("--answer", default="Paris.")
    p.add_argument("--tokens-per-s", type=float, default=400.0)
    p.add_argument(
        "--burst",
        type=int,
        default=1,
        help="tokens per streamed chunk (real engines send several at once)",
    )
    p.add_argument("--ttft", type=float, default=0.02, help="seconds before the first token")
    p.add_argument(
        "--generation-fails",
        action="store_true",
        help="like vLLM refusing a head size: /health answers 200, the first generation logs "
        "the error, answers 500 and the server exits",
    )
    p.add_argument(
        "--slow-generation",
        type=float,
        default=0.0,
        help="every chat completion waits this long before answering at all",
    )
    p.add_argument("--accept-length", type=float, default=None)
    p.add_argument("--metrics-style", choices=("sglang", "vllm", "none"), default="sglang")
    p.add_argument("--version", dest="engine_version", default="0.0.0-fake")
    p.add_argument("--served-model-name", default="fake-model")
    p.add_argument("--pid-file", help="append this process's and its children's pids here")
    p.add_argument("--tools", choices=("ignore", "call"), default="ignore")
    p.add_argument("--degenerate", action="store_true", help="long answers loop one phrase")
    p.add_argument(
        "--endless-stream",
        choices=("all", "tools"),
        help="a streamed completion (all, or those with tools) never ends: after its tokens, an "
        "empty chunk every 0.1 s and never [DONE]",
    )
    p.add_argument(
        "--peek-parent-env",
        metavar="PATH",
        help="write what GITHUB_TOKEN its parent's /proc/<ppid>/environ and /proc/<ppid>/mem "
        "show to PATH (a hostile engine looking for watcher's token)",
    )
    p.add_argument(
        "--thinking",
        action="store_true",
        help="act like a thinking model: spend max_tokens in <think> unless the request's "
        "chat_template_kwargs say enable_thinking: false",
    )
    p.add_argument("--build", default=os.environ.get("FAKE_DOCKER_IMAGE"))
    p.add_argument("--builds", default="", help="comma-separated build versions, oldest first")
    p.add_argument("--bad-from", default=None)
    p.add_argument("--fixed-from", default=None)
    p.add_argument("--bad-mode", choices=("crash", "slow", "degenerate"), default="crash")
    p.add_argument(
        "--bad-log",
        default="RuntimeError: size_n = 96 is not divisible by tile_n_size = 64",
    )
    p.add_argument("--bad-tokens-per-s", type=float, default=40.0)
    p.add_argument("--broken", default="", help="comma-separated builds that fail differently")
    p.add_argument("--report-version", action="append", default=[], metavar="BUILD=VERSION")
    p.add_argument("--speed-noise", type=float, default=0.0)
    args, _unknown = p.parse_known_args(argv)
    _apply_build(args)
    return args


def build_version(build: str | None) -> str | None:
    """The version a build names: an image's tag, a requirement's `==` version or wheel sha."""
    if not build:
        return None
    if "==" in build:
        return build.split("==", 1)[1].strip()
    if "@" in build:
        return build.rstrip("/").rsplit("/", 2)[-2] if "/" in build else build
    return build.rsplit(":", 1)[-1] if ":" in build else build


def _apply_build(a: argparse.Namespace) -> None:
    """Turn the build this process is into a mode: pass, crash (as a bad or broken build), slow."""
    version = build_version(a.build)
    if version is None:
        return
    a.engine_version = version.removeprefix("v")
    for pair in a.report_version:
        build, _, reported = pair.partition("=")
        if build == version:
            a.engine_version = reported
    order = [b for b in a.builds.split(",") if b]
    if version in [b for b in a.broken.split(",") if b]:
        a.mode, a.log_text, a.exit_code = "crash", _BROKEN_LOG, 1
        return
    pos = order.index(version) if version in order else None
    bad = False
    if a.bad_from is not None and pos is not None and a.bad_from in order:
        bad = pos >= order.index(a.bad_from)
    if a.fixed_from is not None and pos is not None and a.fixed_from in order:
        bad = pos < order.index(a.fixed_from)
    if bad and a.bad_mode == "crash":
        a.mode, a.log_text, a.exit_code = "crash", a.bad_log, 1
    elif bad and a.bad_mode == "degenerate":  # serves, but its long answers loop
        a.degenerate = True
    elif bad:
        a.tokens_per_s = a.bad_tokens_per_s
    if a.speed_noise:
        import random

        a.tokens_per_s *= 1 + random.uniform(-a.speed_noise, a.speed_noise)


_BROKEN_LOG = "ImportError: libcudart.so.13: cannot open shared object file: No such file"


def _spawn_children(n: int, ignore_term: bool, pid_file: str | None) -> list[subprocess.Popen]:
    code = (
        "import signal, time\n"
        + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else "")
        + "time.sleep(3600)\n"
    )
    kids = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]
    if pid_file:
        with open(pid_file, "a") as f:
            f.writelines(f"{k.pid}\n" for k in kids)
    return kids


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    args: argparse.Namespace

    def log_message(self, fmt, *a):  # the engine's access log goes to its stdout, like uvicorn
        print(f"INFO:     {self.address_string()} - {fmt % a}", flush=True)

    def _json(self, obj, status: int = 200) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _text(self, text: str, status: int = 200) -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        a = self.args
        path = self.path.split("?")[0]
        if path in ("/health", "/health_generate"):
            return self._text("")
        if path == "/v1/models":
            return self._json(
                {"object": "list", "data": [{"id": a.served_model_name, "object": "model"}]}
            )
        if path in ("/server_info", "/get_server_info") and a.metrics_style == "sglang":
            info = {"version": a.engine_version, "model_path": a.served_model_name}
            if a.accept_length is not None:
                info["internal_states"] = [{"avg_spec_accept_length": a.accept_length}]
            return self._json(info)
        if path == "/version":
            return self._json({"version": a.engine_version})
        if path == "/metrics" and a.metrics_style != "none":
            return self._text(_metrics(a))
        return self._json({"detail": "Not Found"}, 404)

    def do_POST(self):  # noqa: N802
        a = self.args
        length = int(self.headers.get("Content-Length") or 0)
        try:
            req = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            return self._json({"error": "bad json"}, 400)
        if self.path != "/v1/chat/completions":
            return self._json({"detail": "Not Found"}, 404)
        if a.generation_fails:
            print(
                "RuntimeError: Unsupported CPU attention configuration: head_dim=16 isa=2",
                flush=True,
            )
            threading.Timer(0.3, os._exit, (1,)).start()
            return self._json({"error": {"message": "EngineCore encountered an issue."}}, 500)
        time.sleep(a.slow_generation)
        if req.get("stream"):
            return self._stream(req)
        if req.get("tools") and a.tools == "call":
            return self._json(_tool_answer(a, req))
        prompt = " ".join(str(m.get("content", "")) for m in req.get("messages", []))
        text = a.answer if "capital" in prompt.lower() else " ".join(WORDS)
        if int(req.get("max_tokens") or 0) > 200 and "capital" not in prompt.lower():
            text = _long_text(int(req["max_tokens"]), a.degenerate)
        if req.get("temperature", 1.0) != 0:
            text = "Lyon, probably."  # sampling: the known answer is not guaranteed
        thinking = (req.get("chat_template_kwargs") or {}).get("enable_thinking", True)
        if a.thinking and thinking:
            limit = int(req.get("max_tokens") or 16)
            text = "<think> " + " ".join((WORDS * 10)[: max(limit - 1, 0)])
        return self._json(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": a.served_model_name,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"completion_tokens": len(text.split()) or (1 if text else 0)},
            }
        )

    def _stream(self, req) -> None:
        a = self.args
        n = min(int(req.get("max_tokens") or 16), 4096)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(obj) -> None:
            data = (
                b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"
            )
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        started = time.monotonic()
        time.sleep(a.ttft)  # prefill
        first_at = time.monotonic()
        if req.get("tools") and a.tools == "call":
            call = _tool_answer(a, req)["choices"][0]["message"]["tool_calls"][0]
            fn, arguments = call["function"], call["function"]["arguments"]
            head = dict(call, index=0, function={"name": fn["name"], "arguments": ""})
            send(
                {
                    "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [head]}}],
                }
            )
            for k in range(0, len(arguments), 5):
                piece = {"index": 0, "function": {"arguments": arguments[k : k + 5]}}
                send(
                    {
                        "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": {"tool_calls": [piece]}}],
                    }
                )
            send(
                {
                    "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                }
            )
            n = 0
        burst = max(1, a.burst)
        for i in range(0, n, burst):
            words = [WORDS[j % len(WORDS)] + " " for j in range(i, min(n, i + burst))]
            delta = {"content": "".join(words)}
            # a chunk leaves once its tokens are made; the first token comes with the prefill
            time.sleep((len(words) - (0 if i else 1)) / a.tokens_per_s)
            chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
            if (req.get("stream_options") or {}).get("continuous_usage_stats"):
                chunk["usage"] = {"completion_tokens": i + len(words)}  # as vLLM does
            send(chunk)
        with _COUNTED:
            _STREAMED[0] += n
            # vLLM's own per-request clocks, as its /metrics histograms keep them
            _TIMES["decode_s"] += time.monotonic() - first_at
            _TIMES["ttft_s"] += first_at - started
            _TIMES["requests"] += 1
            _TIMES["tokens"] += n
        if (req.get("stream_options") or {}).get("include_usage"):
            send(
                {
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": {"completion_tokens": n},
                }
            )
        endless = a.endless_stream == "all" or (a.endless_stream and req.get("tools"))
        while endless:  # ends when the client hangs up (BrokenPipeError)
            time.sleep(0.1)
            send({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]})
        send(b"[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _tool_answer(a: argparse.Namespace, req: dict) -> dict:
    """A chat completion that calls the request's first tool with its required arguments."""
    fn = (req["tools"][0] or {}).get("function") or {}
    required = (fn.get("parameters") or {}).get("required") or []
    arguments = json.dumps({name: "Paris" for name in required})
    call = {
        "id": "call_fake0",
        "type": "function",
        "function": {"name": fn.get("name", "tool"), "arguments": arguments},
    }
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": a.served_model_name,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"completion_tokens": 12},
    }


def _number_words(n: int) -> str:
    """1234 -> 'one-thousand-two-hundred-thirty-four': a word never said twice in a count."""
    ones = ["zero", *WORDS[:19]]
    tens = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
    parts = []
    if n >= 1000:
        parts += [ones[n // 1000], "thousand"]
        n %= 1000
    if n >= 100:
        parts += [ones[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        parts.append(tens[n // 10])
        n %= 10
    if n or not parts:
        parts.append(ones[n])
    return "-".join(parts)


def _long_text(tokens: int, degenerate: bool) -> str:
    """`tokens` words: counting on (no loop), or, degenerate, a few words then one phrase again."""
    if degenerate:
        start = [_number_words(i) for i in range(1, 21)]
        loop = "and so the press changed everything again".split()
        return " ".join((start + loop * tokens)[:tokens])
    return " ".join(_number_words(i) for i in range(1, tokens + 1))


_COUNTED = threading.Lock()
_STREAMED = [0]  # tokens streamed so far: vLLM's spec-decode counters grow with them
_TIMES = {"decode_s": 0.0, "ttft_s": 0.0, "requests": 0, "tokens": 0}


def _vllm_request_metrics(a: argparse.Namespace) -> str:
    label = f'{{model_name="{a.served_model_name}"}}'
    with _COUNTED:
        t = dict(_TIMES)
    return (
        "# TYPE vllm:request_decode_time_seconds histogram\n"
        f"vllm:request_decode_time_seconds_sum{label} {t['decode_s']!r}\n"
        f"vllm:request_decode_time_seconds_count{label} {t['requests']}.0\n"
        f"vllm:request_generation_tokens_sum{label} {t['tokens']}.0\n"
        f"vllm:request_generation_tokens_count{label} {t['requests']}.0\n"
        f"vllm:time_to_first_token_seconds_sum{label} {t['ttft_s']!r}\n"
        f"vllm:time_to_first_token_seconds_count{label} {t['requests']}.0\n"
    )


def _metrics(a: argparse.Namespace) -> str:
    timing = _vllm_request_metrics(a) if a.metrics_style == "vllm" else ""
    if a.accept_length is None:
        return timing or "# no spec decode\n"
    if a.metrics_style == "sglang":
        return (
            "# TYPE sglang:spec_accept_length gauge\n"
            f'sglang:spec_accept_length{{model_name="{a.served_model_name}"}} {a.accept_length}\n'
        )
    with _COUNTED:
        tokens = _STREAMED[0]
    drafts = tokens / a.accept_length  # each draft step yields accept_length tokens
    accepted = tokens - drafts
    return timing + (
        "# TYPE vllm:spec_decode_num_drafts_total counter\n"
        f'vllm:spec_decode_num_drafts_total{{model_name="{a.served_model_name}"}} {drafts!r}\n'
        f'vllm:spec_decode_num_accepted_tokens_total{{model_name="{a.served_model_name}"}} {accepted!r}\n'
    )


def _peek_parent_mem(ppid: int) -> dict:
    """What a hostile engine finds in its parent's memory through /proc/<ppid>/mem: a token
    shaped like GitHub's (`ghp_...`) anywhere in its writable memory, or why it cannot read."""
    import re

    found, read = None, 0
    try:
        with open(f"/proc/{ppid}/maps") as maps, open(f"/proc/{ppid}/mem", "rb", 0) as mem:
            for line in maps:
                span, perms = line.split()[:2]
                if not perms.startswith("rw"):
                    continue
                start, end = (int(x, 16) for x in span.split("-"))
                try:
                    mem.seek(start)
                    data = mem.read(min(end - start, 256 << 20))
                except OSError:
                    continue
                read += len(data)
                m = re.search(rb"ghp_[A-Za-z0-9]{20,}", data)
                if m:
                    found = m.group().decode()
                    break
    except OSError as e:
        return {"mem": f"unreadable: {e}", "mem_token": None}
    return {"mem": f"read {read} bytes", "mem_token": found}


def _peek_parent_env(path: str) -> None:
    """Write {"ppid", "token", "mem", "mem_token"} from the parent's /proc environ (its
    start-up environment) and its memory (/proc/<ppid>/mem)."""
    ppid, token = os.getppid(), None
    try:
        with open(f"/proc/{ppid}/environ", "rb") as f:
            for entry in f.read().split(b"\0"):
                if entry.startswith(b"GITHUB_TOKEN="):
                    token = entry.split(b"=", 1)[1].decode("utf-8", "replace")
    except OSError as e:
        token = f"unreadable: {e}"
    seen = {"ppid": ppid, "token": token, **_peek_parent_mem(ppid)}
    Path(path).write_text(json.dumps(seen), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    a = _parse(argv)
    print(f"[fakeengine] server_args: port={a.port} mode={a.mode}", flush=True)
    if a.build:
        print(f"[fakeengine] engine version {a.engine_version} ({a.build})", flush=True)
    if a.pid_file:
        with open(a.pid_file, "a") as f:
            f.write(f"{os.getpid()}\n")
    if a.peek_parent_env:
        _peek_parent_env(a.peek_parent_env)
    ignore = a.mode == "ignore-term"
    if ignore:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _spawn_children(a.children, ignore, a.pid_file)
    if a.mode == "crash":
        time.sleep(min(a.ready_delay, 0.2))
        text = Path(a.log_file).read_text(encoding="utf-8") if a.log_file else a.log_text
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        sys.stdout.flush()
        return a.exit_code
    print("[fakeengine] Load weight begin.", flush=True)
    if a.mode == "hang":
        # like a server whose scheduler died: it logs the failure, then waits forever
        text = Path(a.log_file).read_text(encoding="utf-8") if a.log_file else a.log_text
        if text:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
            sys.stdout.flush()
        while True:
            time.sleep(3600)
    time.sleep(a.ready_delay)
    handler = type("Handler", (_Handler,), {"args": a})
    server = ThreadingHTTPServer((a.host, a.port), handler)
    server.daemon_threads = True
    print(
        f"[fakeengine] The server is fired up and ready to roll! (http://{a.host}:{a.port})",
        flush=True,
    )
    if not ignore:
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit(0)))
    try:
        server.serve_forever(poll_interval=0.1)
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
