"""Hiding secrets in text that leaves the process: pages, logs, run records, comments.

Its own small module so that a smoke run or a dispatch can redact without importing the renderer.
"""

from __future__ import annotations

import re

_SECRET = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}|"
    # a key word on its own (`token=`, `Authorization: Bearer X`), not the end of an identifier
    # (`retrieve_parent_token=None` is code), or an environment name such as GITHUB_TOKEN=
    r"(?:(?<![A-Za-z0-9_])(?i:authorization|token|api[_-]?key|password)"
    r"|(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]*_(?:TOKEN|API_KEY|KEY|PASSWORD|SECRET))"
    # a quoted key (`'api_key': [...]`, vLLM's non-default args) too; its value a list, a quoted
    # string or a word, but never a shell reference (`$(env ...)`, `$HF_TOKEN`): that is no secret
    r"['\"]?\s*[:=]\s*(?:(?i:bearer|token|basic)\s+)?(?!\$)"
    r"(?:\[[^\]]*\]|'[^']*'|\"[^\"]*\"|\S+))"
)
_USERINFO = re.compile(r"(?<=://)[^/\s@]+@")  # user:pass@ in a URL (say, GITHUB_API_URL)


def redact(text: str | None) -> str:
    """Hide tokens: GITHUB_TOKEN's value, anything shaped like ghp_…, github_pat_…, hf_…, and
    the user:pass@ of any URL."""
    if not text:
        return ""
    from watcher.core.token import github_token

    token = github_token()
    if token and len(token) >= 8:
        text = text.replace(token, "[redacted]")
    return _USERINFO.sub("", _SECRET.sub("[redacted]", text))
