"""What a compose file says beyond its YAML: the header comment block the guide opens each file
with (`Status:`, `Requires-min-gpu-count:`, `Tensor-parallel:`, `Engine-profile:`), and what the
service runs (its `entrypoint` and `command`, interpolated): the spec-decode method, the model and
the tensor-parallel size, read from the flags rather than guessed from the file's name.
"""

from __future__ import annotations

import json
import re
import shlex

_HEADER_LINE = re.compile(r"^#\s*([A-Za-z][A-Za-z-]*(?: [A-Za-z-]+)?):\s+(\S.*?)\s*$")
STATUS_WORDS = (
    "production",
    "experimental",
    "incubating",
    "preview",
    "parked",
    "deprecated",
    "retired",
    "archived",
)
_STATUS = re.compile(r"\b(" + "|".join(STATUS_WORDS) + r")\b", re.I)
NOT_LIVE = ("deprecated", "retired", "archived")  # not proposed by default


def header(text: str) -> dict[str, str]:
    """`Key: value` lines of the comment block before the YAML starts (the first of each key)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        m = _HEADER_LINE.match(stripped)
        if m:
            out.setdefault(m.group(1).lower(), m.group(2))
    return out


def status_word(value: str) -> str:
    """'⚠ PARKED 2026-05-21 — boots …' -> 'parked'; '⚠️ Production w/ caveats' -> 'production'."""
    m = _STATUS.search(value)
    return m.group(1).lower() if m else ""


def header_int(head: dict[str, str], key: str) -> int | None:
    m = re.match(r"\d+", head.get(key, ""))
    return int(m.group()) if m else None


def runs(service: dict) -> list[str]:
    """The service's entrypoint and command as one argv-like word list; a shell script's comment
    lines dropped (they often hold flags that are switched off)."""
    words: list[str] = []
    for key in ("entrypoint", "command"):
        value = service.get(key)
        items = value if isinstance(value, list) else [value] if value is not None else []
        for item in items:
            text = "\n".join(
                ln for ln in str(item).splitlines() if not ln.strip().startswith("#")
            ).replace("\\\n", " ")
            text = text.strip()
            if re.search(r"\s", text) and (not isinstance(value, list) or text[:1] not in "{["):
                try:
                    words += shlex.split(text, comments=False)
                except ValueError:
                    words += text.split()
            else:
                words.append(text)
    return words


def flag_value(words: list[str], *flags: str) -> str | None:
    """The value after the first of `flags` (`--flag value` or `--flag=value`), or None."""
    return _after(words, *flags)


def _after(words: list[str], *flags: str) -> str | None:
    for i, w in enumerate(words):
        for f in flags:
            if w == f and i + 1 < len(words):
                return words[i + 1]
            if f.startswith("--") and w.startswith(f + "="):
                return w.split("=", 1)[1]
    return None


_METHOD_WORDS = re.compile(r"(eagle3|eagle|mtp|nextn|dflash|ngram|medusa)", re.I)
_SGLANG_ALGO = {"eagle3": "eagle3", "eagle": "eagle", "nextn": "mtp", "standalone": "draft"}


def spec_method(words: list[str]) -> str:
    """The spec-decode method the flags turn on ('' when none): vLLM's `--speculative-config`
    JSON (`method`, or the draft model's name), SGLang's `--speculative-algorithm`, llama.cpp's
    and its forks' draft flags (`--spec-type`, `-md`/`--model-draft`, `--spec-draft-model`)."""
    config = _after(words, "--speculative-config", "--speculative_config")
    if config is not None:
        try:
            doc = json.loads(config)
        except ValueError:
            doc = {}
        method = str(doc.get("method") or "") if isinstance(doc, dict) else ""
        if not method:
            m = _METHOD_WORDS.search(str(doc.get("model", "")) if isinstance(doc, dict) else "")
            method = m.group(1) if m else "draft"
        return _norm(method)
    algo = _after(words, "--speculative-algorithm", "--speculative-algo")
    if algo:
        return _SGLANG_ALGO.get(algo.lower(), algo.lower())
    spec_type = _after(words, "--spec-type")
    if spec_type:
        m = _METHOD_WORDS.search(spec_type)
        return _norm(m.group(1)) if m else spec_type.lower()
    if any(w.startswith("--spec-dflash") for w in words):
        return "dflash"
    if any(w in ("-mtp", "--mtp", "--multi-token-prediction") for w in words):
        return "mtp"
    if _after(words, "--speculative-model", "-md", "--model-draft", "--spec-draft-model"):
        return "draft"
    return ""


def _norm(method: str) -> str:
    method = method.lower()
    return {"nextn": "mtp", "deepseek_mtp": "mtp", "qwen3_next_mtp": "mtp"}.get(method, method)


_GENERIC = {"target", "model", "models", "weights", "huggingface", ""}


def model(words: list[str]) -> str:
    """The model the service serves (the last part of `--model`/`--model-path`/`-m`), or ''
    when the file names none or only a generic mount point (/models/target)."""
    value = _after(words, "--model", "--model-path")
    if value is None:  # `-m`, but not python's (`python3 -m sglang.launch_server`)
        value = next(
            (
                words[i + 1]
                for i, w in enumerate(words[:-1])
                if w == "-m" and not (i and re.match(r"(.*/)?python[\d.]*$", words[i - 1]))
            ),
            None,
        )
    if value is None:
        return ""
    name = value.rstrip("/").rsplit("/", 1)[-1]
    return "" if name.lower() in _GENERIC else name


def tensor_parallel(words: list[str]) -> int | None:
    value = _after(words, "--tensor-parallel-size", "--tp-size", "--tp", "-tp")
    return int(value) if value and value.isdigit() else None
