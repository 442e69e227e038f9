"""The form of the package: no module over 450 lines, no function over 60, and no module that
imports another's private names (or reaches into a module it imported for one)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_membudget"
MOST_MODULE_LINES = 450
MOST_FUNCTION_LINES = 60
#: Over the limits today, in files another change is reshaping (the footprint evidence): they
#: fail here until it has (named in its note), and pass once they are within them.
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "_build" not in p.parts)


def name_of(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def functions(path: Path) -> Iterator[tuple[str, int]]:
    """Each function's qualified name and lines (decorators and docstring included)."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                yield prefix + child.name, (child.end_lineno or child.lineno) - start + 1
                yield from walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")

    return walk(ast.parse(path.read_text()), "")


def within(key: str, over: bool, what: str) -> None:
    assert not over, f"{key}: {what}"


@pytest.mark.parametrize("path", MODULES, ids=name_of)
def test_no_module_is_over_450_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    within(name_of(path), lines > MOST_MODULE_LINES, f"{lines} lines")


@pytest.mark.parametrize("path", MODULES, ids=name_of)
def test_no_function_is_over_60_lines(path: Path) -> None:
    long = {f"{name_of(path)}:{name}": n for name, n in functions(path)
            if n > MOST_FUNCTION_LINES}
    for key, lines in long.items():
        within(key, True, f"{lines} lines")


def private_uses(path: Path) -> list[str]:
    """Private names (one leading underscore) of the package's modules that ``path`` imports,
    or reads from a package module it imported."""
    found = []
    modules: set[str] = set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if (isinstance(node, ast.ImportFrom) and node.module
                and node.module.split(".")[0] == "pytest_membudget"):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{node.module}.{alias.name}")
                modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names
                        if a.name.split(".")[0] == "pytest_membudget"}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            found.append(f"{node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("path", MODULES, ids=name_of)
def test_no_module_uses_another_modules_private_names(path: Path) -> None:
    assert private_uses(path) == []


def test_the_private_name_finder_finds_a_planted_one(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("from pytest_membudget.evidence.sites import _by_site\n"
                       "from pytest_membudget.probes import malloc\n"
                       "malloc._mallinfo2()\n")
    assert private_uses(planted) == ["pytest_membudget.evidence.sites._by_site",
                                     "malloc._mallinfo2"]
