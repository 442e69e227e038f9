"""docs/architecture.md matches the code: it names every module of the package (read from the
tree, so a module added anywhere, a probe for a new device stack too, fails here until the
map names it), names no module that is not there, and draws the same layers as
tests/unit/test_layers.py enforces."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_membudget"
MAP = ROOT / "docs" / "architecture.md"


def tree() -> list[str]:
    """Every module of the package, as a path under it (``probes/cuda/probe.py``)."""
    return sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                  if "_build" not in p.parts)


def named(text: str) -> set[str]:
    """The module paths the page names in backticks."""
    return set(re.findall(r"`([A-Za-z_][\w/]*\.py)`", text))


def layer_table(text: str) -> tuple[tuple[str, ...], ...]:
    """The rows of the table under "The rule of the layers", bottom first."""
    section = text[text.index("## The rule of the layers"):]
    section = section[:section.index("\n## ", 1)]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].isdigit():
            rows.append((int(cells[0]), tuple(re.findall(r"`([\w.]+)`", cells[1]))))
    assert [n for n, _ in rows] == list(range(len(rows))), rows
    return tuple(names for _, names in rows)


def enforced_layers() -> tuple[tuple[str, ...], ...]:
    spec = importlib.util.spec_from_file_location("layers", ROOT / "tests/unit/test_layers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    layers: tuple[tuple[str, ...], ...] = module.LAYERS
    return layers


@pytest.mark.parametrize("module", tree())
def test_the_map_names_every_module(module: str) -> None:
    assert module in named(MAP.read_text()), (
        f"docs/architecture.md does not name `{module}`: add it to its room's table")


def test_the_map_names_no_module_that_is_not_there() -> None:
    text = MAP.read_text()
    package_paths = {name for name in named(text) if "/" in name or name in tree()}
    # Paths of tests and benchmarks named on the page are checked against the repository.
    missing = sorted(name for name in package_paths
                     if not (PACKAGE / name).exists() and not (ROOT / name).exists())
    assert missing == []


def test_the_layer_table_is_the_enforced_one() -> None:
    assert layer_table(MAP.read_text()) == enforced_layers()


def test_a_module_left_out_of_the_map_is_found() -> None:
    text = MAP.read_text().replace("`probes/room.py`", "probes/room")
    assert "probes/room.py" not in named(text)
    rows = layer_table(MAP.read_text().replace("`interpreter`, `frames`", "`interpreter`"))
    assert rows != enforced_layers()


ROOMS = ("judge", "probes", "evidence", "measure", "sweep", "render", "artifacts", "settings")
DOTTED = re.compile(r"\b(?:" + "|".join(ROOMS) + r")\.[\w.]+")


def flow_names(text: str) -> set[str]:
    """The dotted names the flows draw (``judge.decide.decide``, ``judge.policy.RunPolicy
    .after``), from the page's code blocks."""
    blocks = re.findall(r"```\n(.*?)```", text, flags=re.S)
    return {name.rstrip(".") for block in blocks
            for name in DOTTED.findall(block)}


def resolves(name: str) -> bool:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module("pytest_membudget." + ".".join(parts[:end]))
        except ImportError:
            continue
        for attr in parts[end:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_the_flows_name_what_runs() -> None:
    names = flow_names(MAP.read_text())
    assert "judge.decide.decide" in names
    assert sorted(name for name in names if not resolves(name)) == []
