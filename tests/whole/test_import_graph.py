"""The house's one import rule, read from the source with `ast` (nothing imported).

watcher's stages have a declared order (`watcher.STAGES`), and each stage's `__init__.py` says
which earlier stages it may import ("May import: core, config." or "every stage before it"). A
module may import its own stage and those; never a later stage, and never in a circle. Every
import statement counts, wherever it sits: at the top, inside a function (a lazy import), or
under `if TYPE_CHECKING:` (a type named from a later stage is still a tie that runs backwards).
A private name (`_x`) is taken from nowhere but its own module. Only `cli`/`__main__` stand above
the stages; `watcher.fakes` imports no stage and only the demo imports it.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import watcher

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "watcher"
LAYOUT = PACKAGE_DIR.parent / "docs" / "layout.md"
TOP = {"watcher.cli", "watcher.__main__"}  # above every stage: the only click user and its entry


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Dotted name -> file, for every module of the package (subpackages included)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _targets(node: ast.AST, here: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's own modules one import statement loads."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative: resolve against the importing module's package
            anchor = here.split(".") if is_package else here.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        # `from pkg import name` loads pkg.name when that is a module, else just pkg
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    else:
        return set()
    out = set()
    for name in names:
        parts = name.split(".")
        # importing a.b.c runs a, a.b and a.b.c; the package's bare __init__ has no imports.
        # A module's own ancestor packages already ran before it did, so passing through them
        # on the way to a sibling is no edge; naming the ancestor itself (its __init__'s names) is.
        for i in range(2, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix != name and here.startswith(prefix + "."):
                continue
            if prefix in known:
                out.add(prefix)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST):
    """Every node except those under `if TYPE_CHECKING:` (annotations only: never executed)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                todo.extend(child.orelse)
                continue
            todo.append(child)


def import_graph(root: Path, package: str, type_checking: bool = True) -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere in its source (functions and
    `if TYPE_CHECKING:` blocks included)."""
    modules = module_names(root, package)
    known = set(modules)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(tree) if type_checking else _runtime_nodes(tree):
            edges |= _targets(node, name, is_package, known)
        graph[name] = edges - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted, smallest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found, key=lambda g: (len(g), g))


def private_imports(root: Path, package: str) -> list[str]:
    """`from pkg.m import _x` or `m._x` on an imported module of the package, outside `m` itself."""
    modules = module_names(root, package)
    found = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        aliases = {}  # local name -> module of the package it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package):
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if full in modules:
                        aliases[a.asname or a.name] = full
                    elif a.name.startswith("_") and not a.name.startswith("__"):
                        found.append(f"{name} takes {a.name} from {node.module}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in modules and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and aliases[node.value.id] != name
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(f"{name} takes {node.attr} from {aliases[node.value.id]}")
    return sorted(set(found))


def stage_of(module: str, package: str = "watcher") -> str:
    """`watcher.poll.heads` -> `poll`; the package root, `cli`, `__main__` and `fakes` as named."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else package


def allowed_stages(root: Path, stages: tuple[str, ...]) -> dict[str, set[str]]:
    """Each stage's own word on what it may import, from its `__init__.py` docstring."""
    out = {}
    for i, stage in enumerate(stages):
        doc = ast.get_docstring(ast.parse((root / stage / "__init__.py").read_text())) or ""
        if "every stage before it" in doc:
            out[stage] = set(stages[:i])
            continue
        m = re.search(r"May import: ([a-z, ]+)\.", doc) or re.search(r"(Imports nothing)", doc)
        assert m, f"{stage}/__init__.py does not say what it may import"
        names = (
            set() if m.group(1) == "Imports nothing" else {s.strip() for s in m.group(1).split(",")}
        )
        out[stage] = names
    return out


def backward_imports(
    graph: dict[str, set[str]], stages: tuple[str, ...], allowed: dict[str, set[str]]
) -> list[str]:
    """Every import that breaks the order: into a later stage, or a stage not declared."""
    bad = []
    rank = {s: i for i, s in enumerate(stages)}
    for module, targets in sorted(graph.items()):
        here = stage_of(module)
        for target in sorted(targets):
            there = stage_of(target)
            if module in TOP or there == here or target == "watcher":
                continue
            if there == "fakes":
                if module != "watcher.onboard.demo":
                    bad.append(f"{module} -> {target} (only the demo may use the fakes)")
            elif here == "fakes" or here == "watcher":
                bad.append(f"{module} -> {target} (imports no stage)")
            elif there not in rank:
                bad.append(f"{module} -> {target} ({there} stands above every stage)")
            elif rank[there] > rank[here]:
                bad.append(f"{module} -> {target} (a later stage)")
            elif there not in allowed[here]:
                bad.append(f"{module} -> {target} ({here} does not say it may import {there})")
    return bad


def test_every_module_sits_in_a_stage_folder():
    stray = sorted(
        p.name for p in PACKAGE_DIR.glob("*.py") if p.stem not in {"__init__", "__main__", "cli"}
    )
    assert not stray, f"modules outside a stage folder: {stray}"
    folders = {p.name for p in PACKAGE_DIR.iterdir() if (p / "__init__.py").exists()}
    assert folders == set(watcher.STAGES) | {"fakes"}, folders ^ (set(watcher.STAGES) | {"fakes"})


def test_each_stage_declares_only_earlier_stages():
    allowed = allowed_stages(PACKAGE_DIR, watcher.STAGES)
    for i, stage in enumerate(watcher.STAGES):
        assert allowed[stage] <= set(watcher.STAGES[:i]), (stage, allowed[stage])


def test_watcher_imports_run_one_way_with_no_circle():
    graph = import_graph(PACKAGE_DIR, "watcher")
    assert len(graph) > 60  # the walk really saw the package
    assert "watcher.config.model" in graph["watcher.judge.evaluate"]
    # the fake GitHub (a test double, no stage) names its server's type in its route modules; its
    # modules may not import each other in a circle that runs
    staged = {m: t for m, t in graph.items() if stage_of(m) != "fakes"}
    fakes = {
        m: t
        for m, t in import_graph(PACKAGE_DIR, "watcher", False).items()
        if stage_of(m) == "fakes"
    }
    found = circles(staged) + circles(fakes)
    assert not found, "import circles in watcher/: " + "; ".join(" <-> ".join(g) for g in found)
    bad = backward_imports(graph, watcher.STAGES, allowed_stages(PACKAGE_DIR, watcher.STAGES))
    assert not bad, "imports against the stage order:\n" + "\n".join(bad)


def test_no_module_takes_another_modules_private_names():
    found = private_imports(PACKAGE_DIR, "watcher")
    assert not found, "\n".join(found)


def test_layout_page_names_every_module():
    """docs/layout.md is the map: every module of watcher/ (fakes aside) is on it by its path."""
    text = LAYOUT.read_text(encoding="utf-8")
    missing = [
        rel
        for name, path in module_names(PACKAGE_DIR, "watcher").items()
        if path.name != "__init__.py" and stage_of(name) != "fakes"
        if f"`{(rel := path.relative_to(PACKAGE_DIR).as_posix())}`" not in text
    ]
    assert not missing, f"docs/layout.md does not name: {missing} (run `cog -r docs/layout.md`)"


def test_layout_page_is_generated_from_the_folders_own_docstrings():
    done = subprocess.run(
        [sys.executable, "-m", "cogapp", "--check", str(LAYOUT)], capture_output=True, text=True
    )
    assert done.returncode == 0, "docs/layout.md is stale: run `cog -r docs/layout.md`\n" + (
        done.stdout + done.stderr
    )


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "files",
    [
        # the circle cycle.py <-> site.py had: one side hides its import in a function
        {"a.py": "from pkg.b import f\n", "b.py": "def f():\n    from pkg.a import g\n"},
        # relative imports and `from pkg import module` resolve to the module
        {"a.py": "from . import b\n", "b.py": "from .c import x\n", "c.py": "import pkg.a\n"},
        # a subpackage importing back up through its parent
        {
            "a.py": "from pkg.sub.m import y\n",
            "sub/__init__.py": "",
            "sub/m.py": "from ..a import z\n",
        },
        # the circle heads <-> poll had: one side names the other only for its types
        {
            "a.py": "from pkg.b import f\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import T\n",
        },
    ],
)
def test_a_circle_is_found_wherever_its_imports_hide(tmp_path, files):
    root = _write(tmp_path / "pkg", files)
    assert circles(import_graph(root, "pkg"))


def test_imports_that_point_one_way_are_no_circle(tmp_path):
    root = _write(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "low.py": "import os\n",
            "mid.py": "from pkg.low import x\n",
            "top.py": "from pkg import mid\n\ndef f():\n    from pkg.low import y\n",
        },
    )
    graph = import_graph(root, "pkg")
    assert graph["pkg.top"] == {"pkg.mid", "pkg.low"} and graph["pkg.low"] == set()
    assert circles(graph) == []


STAGED = {
    "__init__.py": "",
    "core/__init__.py": '"""Shared.\n\nImports nothing of watcher\'s."""\n',
    "core/clock.py": "def _tick():\n    pass\n",
    "poll/__init__.py": '"""Poll.\n\nMay import: core."""\n',
    "smoke/__init__.py": '"""Smoke.\n\nMay import: core."""\n',
    "smoke/run.py": "X = 1\n",
}


@pytest.mark.parametrize(
    "module, source, complaint",
    [
        ("poll/feed.py", "def f():\n    from watcher.smoke.run import X\n", "a later stage"),
        (
            "poll/feed.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from watcher.smoke import run\n",
            "a later stage",
        ),
        ("smoke/go.py", "from watcher.poll import feed\n", "does not say it may import poll"),
        ("core/x.py", "import watcher.fakes.engine\n", "only the demo"),
    ],
)
def test_an_import_against_the_order_is_named(tmp_path, module, source, complaint):
    files = dict(STAGED, **{module: source, "poll/feed.py": "Y = 1\n", "fakes/__init__.py": ""})
    files[module] = source
    if module != "fakes/engine.py":
        files["fakes/engine.py"] = ""
    root = _write(tmp_path / "watcher", files)
    stages = ("core", "poll", "smoke")
    bad = backward_imports(import_graph(root, "watcher"), stages, allowed_stages(root, stages))
    assert any(complaint in b for b in bad), bad


@pytest.mark.parametrize(
    "source",
    [
        "from watcher.core.clock import _tick\n",
        "from watcher.core import clock\n\nclock._tick()\n",
        "import watcher.core.clock as c\n\nc._tick()\n",
    ],
)
def test_a_private_name_taken_from_another_module_is_named(tmp_path, source):
    root = _write(tmp_path / "watcher", dict(STAGED, **{"poll/feed.py": source}))
    assert private_imports(root, "watcher") == [
        "watcher.poll.feed takes _tick from watcher.core.clock"
    ]
