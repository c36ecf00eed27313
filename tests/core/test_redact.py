"""Redaction of what leaves the process (issue 32 L7): a key in a quoted dict is hidden, a shell
reference after a key word is not a secret."""

import pytest

from watcher.core.redact import redact


@pytest.mark.parametrize(
    "line",
    [
        # vLLM's start-up line prints its non-default arguments as a Python dict
        "INFO non-default args: {'model': '/m', 'api_key': ['sk-live-0123456789'], 'port': 8000}",
        "INFO non-default args: {'api_key': ['sk-live-0123456789', 'sk-two-987654']}",
        '{"api_key": "sk-live-0123456789"}',
        "token=sk-live-0123456789",
        "X-Api-Key: sk-live-0123456789",
    ],
)
def test_a_key_and_its_value_are_hidden(line):
    out = redact(line)
    assert "sk-live" not in out and "sk-two" not in out and "[redacted]" in out


def test_the_rest_of_a_dict_line_is_kept():
    out = redact("non-default args: {'model': '/m', 'api_key': ['sk-live-0123456789'], 'port': 8}")
    assert out.startswith("non-default args: {'model': '/m', ") and "'port': 8}" in out


@pytest.mark.parametrize(
    "line",
    [
        "echo child-env-has-token: $(env | grep -c GITHUB_TOKEN)",
        "export HF_TOKEN=$HF_TOKEN",
        'curl -H "Authorization: ${AUTH_HEADER}"',
    ],
)
def test_a_shell_reference_is_not_a_secret(line):
    assert redact(line) == line
