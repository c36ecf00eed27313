"""A GPU-backed OpenAI-compatible server for checking watcher's smoke runner on a real GPU.

A tiny, randomly initialised Qwen2-shaped transformers model (no weights to download), greedy
decoding with a KV cache, served like `sglang.launch_server`: /health, /health_generate,
/v1/models, /get_server_info, /v1/chat/completions (streamed or not). Its answers are noise;
what it proves is the runner's half: launch, readiness, probes, metrics, teardown, GPU memory.

    python deploy/gpu-check/tiny_server.py --port 30000 [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch
import transformers
from transformers import Qwen2Config, Qwen2ForCausalLM

MODEL_ID = "tiny-random-qwen2"
VOCAB = 512
LETTERS = "abcdefghijklmnopqrstuvwxyz "


def build(device: str, layers: int, hidden: int) -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        num_key_value_heads=max(1, hidden // 128),
        max_position_embeddings=4096,
    )
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    return Qwen2ForCausalLM(cfg).to(device=device, dtype=dtype).eval()


def encode(text: str) -> list[int]:
    return [b % VOCAB for b in text.encode("utf-8")][-1024:] or [0]


def decode(token: int) -> str:
    return LETTERS[token % len(LETTERS)]


class Engine:
    """One request at a time on the GPU; greedy decoding with the model's KV cache."""

    def __init__(self, model: Qwen2ForCausalLM, device: str):
        self.model, self.device = model, device
        self.lock = threading.Lock()

    @torch.inference_mode()
    def generate(self, prompt: str, max_tokens: int):
        with self.lock:
            ids = torch.tensor([encode(prompt)], device=self.device)
            past = None
            for _ in range(max_tokens):
                out = self.model(input_ids=ids, past_key_values=past, use_cache=True)
                past = out.past_key_values
                token = int(out.logits[0, -1].argmax())
                if self.device.startswith("cuda"):
                    torch.cuda.synchronize()
                yield token
                ids = torch.tensor([[token]], device=self.device)


def handler_for(engine: Engine):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _json(self, obj, status=200):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path in ("/health", "/health_generate"):
                if self.path == "/health_generate":
                    list(engine.generate("ping", 1))
                return self._json({"status": "ok"})
            if self.path == "/v1/models":
                return self._json({"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]})
            if self.path in ("/get_server_info", "/server_info", "/version"):
                return self._json(
                    {
                        "version": f"tiny-transformers-{transformers.__version__}",
                        "device": engine.device,
                    }
                )
            return self._json({"error": "not found"}, 404)

        def do_POST(self):
            if self.path != "/v1/chat/completions":
                return self._json({"error": "not found"}, 404)
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            prompt = " ".join(str(m.get("content", "")) for m in req.get("messages", []))
            max_tokens = int(req.get("max_tokens") or 16)
            created = int(time.time())
            if not req.get("stream"):
                text = "".join(decode(t) for t in engine.generate(prompt, max_tokens))
                return self._json(
                    {
                        "id": "cmpl-tiny",
                        "object": "chat.completion",
                        "created": created,
                        "model": MODEL_ID,
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "length",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": len(encode(prompt)),
                            "completion_tokens": max_tokens,
                            "total_tokens": len(encode(prompt)) + max_tokens,
                        },
                    }
                )
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            n = 0
            for token in engine.generate(prompt, max_tokens):
                n += 1
                chunk = {
                    "id": "cmpl-tiny",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": MODEL_ID,
                    "choices": [
                        {"index": 0, "delta": {"content": decode(token)}, "finish_reason": None}
                    ],
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            usage = {
                "id": "cmpl-tiny",
                "object": "chat.completion.chunk",
                "created": created,
                "model": MODEL_ID,
                "choices": [],
                "usage": {"completion_tokens": n},
            }
            self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    return Handler


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=30000)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    a = ap.parse_args()
    print(f"tiny server: torch {torch.__version__}, device {a.device}", flush=True)
    if a.device.startswith("cuda"):
        print(f"tiny server: GPU {torch.cuda.get_device_name(0)}", flush=True)
    engine = Engine(build(a.device, a.layers, a.hidden), a.device)
    list(engine.generate("warm up", 2))
    server = ThreadingHTTPServer((a.host, a.port), handler_for(engine))
    print(f"tiny server: ready on http://{a.host}:{a.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
