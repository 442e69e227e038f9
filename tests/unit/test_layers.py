"""The architecture, enforced: imports only go down the layers, no module imports itself back
through others (no circle, in the package or in bench/), only the pytest edge imports pytest,
and the package root stays small. docs/architecture.md draws the same layers.

A module's layer is that of the longest entry below that names it or a package above it, so a
subpackage lies on one floor unless one of its modules is named on its own. Imports inside
functions count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_membudget"

#: From the bottom. A module may import its own floor and those below it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("vocabulary",),
    ("catalog",),
    # what the plugin assumes of the running interpreter, checked; whose code a frame is
    ("interpreter", "frames"),
    ("judge",),
    ("probes",),
    ("evidence",),
    ("measure",),
    ("sweep",),  # the driver, the screen, the outcome
    ("render",),
    ("sweep.table",),
    ("artifacts", "settings", "distributed"),
    ("artifacts.outputs", "fixture"),
    ("sweep.hooks", "sweep.housekeeping"),
    ("plugin", "cli", "__init__", "__main__"),
)
LEVEL = {name: level for level, names in enumerate(LAYERS) for name in names}
#: The only modules that import pytest: the edge, the sweep's hooks, the session outputs.
PYTEST_EDGE = {"plugin", "fixture", "settings", "distributed", "sweep.hooks",
               "sweep.housekeeping", "artifacts.outputs"}
ROOT_MODULES_AT_MOST = 12


def module_name(path: Path, base: Path) -> str:
    """``pytest_membudget/probes/cuda/probe.py`` -> ``probes.cuda.probe``; a package's
    ``__init__.py`` is the package (the root's is ``__init__``)."""
    parts = path.relative_to(base).with_suffix("").parts
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def modules_of(base: Path) -> dict[str, Path]:
    return {module_name(p, base): p for p in sorted(base.rglob("*.py"))
            if "_build" not in p.parts}


MODULES = modules_of(PACKAGE)


def level(module: str) -> int:
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in LEVEL:
            return LEVEL[prefix]
    raise KeyError(module)


def imported(path: Path, package: str, known: dict[str, Path]) -> Iterator[str]:
    """The modules of ``package`` (as keys of ``known``) that ``path`` imports, lazy ones too;
    ``from package.sub import name`` counts ``package.sub.name`` where that is a module."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            candidates = [(node.module, [f"{node.module}.{a.name}" for a in node.names])]
        elif isinstance(node, ast.Import):
            candidates = [(a.name, []) for a in node.names]
        else:
            continue
        for base, children in candidates:
            for name in (*children, base):
                parts = name.split(".")
                if parts[0] != package:
                    continue
                local = ".".join(parts[1:]) or "__init__"
                if local in known:
                    yield local
                    if name != base:  # a submodule named in the import: the base is its parent
                        break


@functools.cache
def import_graph(base: Path, package: str) -> dict[str, set[str]]:
    known = modules_of(base)
    return {name: set(imported(path, package, known)) - {name} for name, path in known.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for name in MODULES:
        try:
            level(name)
        except KeyError:
            unplaced.append(name)
    assert not unplaced


def test_the_root_is_small() -> None:
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= ROOT_MODULES_AT_MOST, root


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_only_go_down(name: str) -> None:
    graph = import_graph(PACKAGE, "pytest_membudget")
    above = {target for target in graph[name] if level(target) > level(name)}
    assert not above, f"{name} (layer {level(name)}) imports {above} from above it"


def test_no_circle_in_the_package() -> None:
    assert circles(import_graph(PACKAGE, "pytest_membudget")) == []


def test_no_circle_in_bench() -> None:
    assert circles(import_graph(ROOT / "bench", "bench")) == []


def test_the_circle_finder_finds_a_planted_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def imports_pytest(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] in ("pytest", "_pytest")
                                                for a in node.names):
            return True
        if (isinstance(node, ast.ImportFrom) and node.module
                and node.module.split(".")[0] in ("pytest", "_pytest")):
            return True
    return False


def test_only_the_edge_imports_pytest() -> None:
    importers = {name for name, path in MODULES.items() if imports_pytest(path)}
    assert importers <= PYTEST_EDGE, importers - PYTEST_EDGE
