"""Hiding secrets in text that leaves the process: pages, logs, run records, comments.

Its own small module so that a smoke run or a dispatch can redact without importing the renderer.
"""

from __future__ import annotations

import os
import re

_SECRET = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}|"
    r"(?i:(?:authorization|token|api[_-]?key|password)\s*[:=]\s*)\S+)"
)


def redact(text: str | None) -> str:
    """Hide tokens: GITHUB_TOKEN's value and anything shaped like ghp_…, github_pat_…, hf_…."""
    if not text:
        return ""
    token = os.environ.get("GITHUB_TOKEN")
    if token and len(token) >= 8:
        text = text.replace(token, "[redacted]")
    return _SECRET.sub("[redacted]", text)
