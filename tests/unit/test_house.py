"""The form of the package: no module over 450 lines, no function over 60, no module that imports
another's private names (or reaches into a module it imported for one), at most 60 module-level
tuning constants, each defined once, at most two ``*_SECONDS`` limits in the evidence, records
typed (at most ten ``dict[str, Any]``), and no list of probe names outside the catalog (counted
by bench/house.py, which prints the figures and names each constant: ``python bench/house.py
--files``)."""

from __future__ import annotations

import ast
import importlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_membudget"
MOST_MODULE_LINES = 450
MOST_FUNCTION_LINES = 60
#: A number the code chooses is a tuning constant (bench/house.FACTS lists those it does not).
MOST_TUNING_CONSTANTS = 60
MOST_EVIDENCE_DEADLINES = 2
#: The evidence travels as typed records (evidence/records.py, evidence/peakrecords.py); the
#: few ``dict[str, Any]`` left hold a probe's options, the settings and pytest's own dicts.
MOST_DICT_ANY = 10
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


@pytest.fixture()
def house(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module("bench.house")


def test_tuning_constants_are_few_and_each_defined_once(house: ModuleType) -> None:
    found = house.constants(MODULES)
    tuning = sorted(f"{c.module}:{c.name}" for c in found if c.name not in house.FACTS)
    assert len(tuning) <= MOST_TUNING_CONSTANTS, tuning
    assert [name for name, n in Counter(c.name for c in found).items() if n > 1] == []


def test_records_are_typed(house: ModuleType) -> None:
    found = {name_of(p): house.dict_any(p) for p in MODULES}
    assert sum(found.values()) <= MOST_DICT_ANY, {k: n for k, n in found.items() if n}


def test_the_evidence_has_one_deadline_table(house: ModuleType) -> None:
    evidence = [p for p in MODULES if name_of(p).startswith("evidence/")
                or name_of(p) == "measure/footprint.py"]
    assert len(house.seconds_limits(evidence)) <= MOST_EVIDENCE_DEADLINES


def test_no_probe_names_are_listed_outside_the_catalog(house: ModuleType) -> None:
    outside = [p for p in MODULES if name_of(p).split("/")[0] in house.NO_PROBE_LISTS]
    assert house.probe_lists(outside, house.probe_names()) == []


def test_the_house_counts_a_planted_constant_and_a_planted_probe_list(
        house: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("WIDTH = 40\nRATES = {'a': 0.5, 'b': 0.25}\nNAMES = ('rss', 'heap')\n")
    monkeypatch.setattr(house, "PACKAGE", tmp_path)
    assert [c.name for c in house.constants([planted])] == ["WIDTH", "RATES"]
    assert len(house.probe_lists([planted], house.probe_names())) == 1
