"""No import circles between watcher's modules, read from the source with `ast` (nothing imported).

Every import statement counts, wherever it sits: at the top, inside a function (a lazy import), or
under an `if` — except `if TYPE_CHECKING:` blocks, which only name types for annotations and
never run. A lazy import can delay the moment a circle bites, but the two modules still cannot
be read, tested or moved apart, so a circle hidden in a function is still a circle. Lazy imports
remain fine for cost (an optional or heavy dependency, a command's own modules in the CLI) as long
as they point down the loop, never back up.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "watcher"


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


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere in its source."""
    modules = module_names(root, package)
    known = set(modules)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        edges = set()
        for node in _runtime_nodes(tree):
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


def test_watcher_has_no_import_circle():
    graph = import_graph(PACKAGE_DIR, "watcher")
    assert len(graph) > 20  # the walk really saw the package
    assert "watcher.config" in graph["watcher.evaluate"]
    found = circles(graph)
    assert not found, "import circles in watcher/: " + "; ".join(" <-> ".join(g) for g in found)


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
