"""docs/bisect.md's worked example, run as written: its bash lines (the shipped fakes started as
commands), its watch.toml and its watcher commands, in a real shell; the output holds the lines
the page shows. Only the ports are changed (to free ones) and `python`/`watcher` are this test's
interpreter."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from kits.smokekit import free_port

DOC = Path(__file__).resolve().parents[2] / "docs" / "bisect.md"


def example() -> tuple[str, str, str]:
    text = DOC.read_text(encoding="utf-8")
    part = text[text.index("### A worked example") :]
    shell, toml, console = (
        re.search(rf"```{kind}\n(.*?)```", part, re.S).group(1)
        for kind in ("bash", "toml", "console")
    )
    return shell, toml, console


@pytest.mark.slow(seconds=30)  # two servers, a cycle, a dry run and four smoke runs
def test_the_worked_example_runs_as_written(tmp_path):
    shell, toml, console = example()
    gh_port, reg_port = free_port(), free_port()
    shell = shell.replace("8765", str(gh_port)).replace("5000", str(reg_port))
    engine_port = free_port()
    (tmp_path / "watch.toml").write_text(toml.replace("30123", str(engine_port)))
    shims = tmp_path / "py"
    shims.mkdir()
    for name, run in (("python", ""), ("watcher", " -m watcher")):
        (shims / name).write_text(f'#!/bin/sh\nexec {sys.executable}{run} "$@"\n')
        (shims / name).chmod(0o755)
    wait = (
        f'{sys.executable} -c "import socket, time\n'
        f"for port in ({gh_port}, {reg_port}):\n"
        "    for _ in range(300):\n"
        "        try: socket.create_connection(('127.0.0.1', port), 0.1).close(); break\n"
        '        except OSError: time.sleep(0.1)"\n'
    )  # the fakes print their export line once they serve; a person reads it, a script waits
    commands = [c.removeprefix("$ ") for c in console.splitlines() if c.startswith("$ ")]
    script = "\n".join(
        [
            "set -e",
            f"export PATH={shims}:$PATH",
            shell,
            wait,
            *(f"{c}; echo '<<rc '$?'>>'" for c in commands[:-1]),
            f"set +e; {commands[-1]}; echo '<<rc '$?'>>'",
            "kill %1 %2",
        ]
    )
    r = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    out = r.stdout
    assert out.count("<<rc 0>>") == 3, (out, r.stderr)
    assert "16 builds, 1 gone (skipped, never run); budget 6 judged steps" in out
    for line in console.splitlines():  # the page's lines that carry no run-specific value
        if line.startswith(
            (
                "16 builds",
                "  tried first",
                "  gone (",
                "  failure",
                "  the regression",
                "  hardware",
            )
        ):
            assert line in out, line
    assert "  first bad: lmsysorg/sglang:v0.1.11 (sha256:" in out and "; 4 smoke runs" in out
    assert "lmsysorg/sglang:v0.1.4:" not in out.split("steps:")[-1]  # never run
