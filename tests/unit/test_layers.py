"""Imports only go down: no module of the package imports one that sits above it.

From the bottom: the vocabulary; settings, spec and the catalog; fit and verdict; probes,
policy, sampling and the runner; results and the regression rule; text and gating; the plugin
on top. Imports inside functions count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_membudget"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("vocabulary",),
    ("catalog", "spec", "settings"),
    ("fit", "verdict", "screening"),
    ("probes", "policy", "sampling", "runner", "attribution", "cudaevidence", "taskevidence"),
    ("results", "baseline", "sweep", "sweepoutcome"),
    ("figures", "report", "summary", "comparetext", "jsonreport", "plots", "storage", "gating",
     "distributed", "exporters", "sweepreport"),
    ("plugin", "fixture", "cli", "__init__", "__main__", "housekeeping", "sweephooks"),
)
LEVEL = {name: level for level, names in enumerate(LAYERS) for name in names}


def top_module(path: Path) -> str:
    """``probes/cuda.py`` -> ``probes``; ``runner.py`` -> ``runner``."""
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def imported(path: Path) -> set[str]:
    """The package's modules that ``path`` imports (by their top module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "pytest_membudget" and len(parts) > 1 and parts[1] in LEVEL:
                found.add(parts[1])
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    assert {top_module(p) for p in MODULES} == set(LEVEL)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_only_go_down(path: Path) -> None:
    own = top_module(path)
    above = {name for name in imported(path) if LEVEL[name] > LEVEL[own]}
    assert not above, f"{own} (layer {LEVEL[own]}) imports {above} from above it"
