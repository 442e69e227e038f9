"""Probe facts live in the catalog only: no list of probe names in judge/, sweep/ or evidence/
(a tuple, list, set or dict of them, or a name bound to one probe's name, or a prefix of
probe names), so that a new probe is described in one place; and the catalog's facts say
what those lists said."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.screen import RULES, SCREEN_PROBES, STEADY_PROBES

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_membudget"
ROOMS = ("judge", "sweep", "evidence")
#: Files whose lists are another change's to move (the footprint evidence's resident probes,
#: the catalog's ``resident`` field).
PENDING = {"evidence/peak.py"}


def listed_names(path: Path) -> list[str]:
    """The probe names ``path`` lists outside the catalog, with their line."""
    names = set(PROBES)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        elements: list[ast.expr | None] = []
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elements = list(node.elts)
        elif isinstance(node, ast.Dict):
            elements = list(node.keys)
        strings = [e.value for e in elements
                   if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        least = 1 if isinstance(node, ast.Set) else 2
        if len(strings) >= least and len(strings) == len(elements) and all(
                s in names or s == "pss" for s in strings):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and node.value.value in names):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "startswith" and node.args
                and isinstance(node.args[0], ast.Constant)
                and any(n.startswith(str(node.args[0].value)) for n in names)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", sorted(p for room in ROOMS for p in (PACKAGE / room).rglob(
    "*.py") if p.relative_to(PACKAGE).as_posix() not in PENDING),
    ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_list_of_probe_names_outside_the_catalog(path: Path) -> None:
    assert listed_names(path) == []


def test_the_finder_finds_a_planted_list(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('COARSE = ("rss", "uss", "pss")\nWATCH = "malloc"\n'
                       'cuda = [n for n in x if n.startswith("cuda")]\n')
    assert len(listed_names(planted)) == 3


def test_the_screens_probes_and_rules_are_the_catalogs() -> None:
    # Python's exact counter read first, RSS, the catch-all, last.
    assert SCREEN_PROBES == ("py_blocks", "malloc", "threads", "fds", "rss")
    assert {"py_blocks", "malloc"} == STEADY_PROBES
    assert {name: (r.least, r.every) for name, r in RULES.items()} == {
        "py_blocks": (1.0, True), "malloc": (1.0, True), "rss": (4096.0, True),
        "threads": (1.0, False), "fds": (1.0, False)}


def test_coarse_is_one_fact() -> None:
    assert {name for name, info in PROBES.items() if info.coarse} == {
        "rss", "uss", "children_uss", "tree_pss"}
    # The exact probes suggested beside a coarse one, and its witnesses, are exact.
    for info in PROBES.values():
        assert not any(PROBES[name].coarse for name in (*info.exact, *info.witnesses))
