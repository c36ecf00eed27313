"""The watcher never depends on its own test doubles: only demo.py may import watcher.fakes."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "watcher"


def _imports(path: Path) -> set[str]:
    """Every module an import statement in `path` names (relative ones resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = here.split(".")[: -node.level]
                base = ".".join([*parent, base] if base else parent)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _offenders() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "fakes" or rel == Path("onboard/demo.py"):
            continue
        bad = sorted(
            n for n in _imports(path) if n == "watcher.fakes" or n.startswith("watcher.fakes.")
        )
        out += [f"watcher/{rel}: imports {n}" for n in bad]
    return out


def test_only_the_demo_imports_the_fakes():
    assert _offenders() == []


def test_the_check_sees_an_offender(tmp_path, monkeypatch):
    """The scan catches `from watcher.fakes.github import ...` and a relative `from ..fakes`."""
    fake_pkg = tmp_path / "watcher"
    for folder in ("poll", "publish", "onboard"):
        (fake_pkg / folder).mkdir(parents=True)
    (fake_pkg / "poll" / "poller.py").write_text("from watcher.fakes.github import FakeGitHub\n")
    (fake_pkg / "publish" / "site.py").write_text("from ..fakes import scenarios\n")
    (fake_pkg / "onboard" / "demo.py").write_text("import watcher.fakes.engine\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake_pkg)
    assert _offenders() == [
        "watcher/poll/poller.py: imports watcher.fakes.github",
        "watcher/poll/poller.py: imports watcher.fakes.github.FakeGitHub",
        "watcher/publish/site.py: imports watcher.fakes",
        "watcher/publish/site.py: imports watcher.fakes.scenarios",
    ]
