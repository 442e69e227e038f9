"""The rule at the top of docs/verdict.md is the rule that runs: every tuning constant of
judge/ is named there, with its value (``NAME`` = value), so that a constant added to the rule
or changed in it without the statement fails here."""

from __future__ import annotations

import ast
import importlib
import math
import re
from pathlib import Path

import pytest

from pytest_membudget import catalog

ROOT = Path(__file__).resolve().parents[3]
JUDGE = ROOT / "pytest_membudget" / "judge"
#: The regression rule against a baseline and its tolerances have their own statement, in
#: docs/gating.md.
OTHER_STATEMENTS = {"regression.py", "tolerance.py"}
UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3}


def statement() -> str:
    """The paragraph that begins with **The rule** in docs/verdict.md."""
    text = (ROOT / "docs" / "verdict.md").read_text()
    start = text.index("**The rule**")
    return text[start:text.index("\n\n", start)]


#: The catalog's numbers the rule reads through the probes' facts: the coarse probes' floor
#: and the growth that is ample for a count of objects.
CATALOG_RULE = ("RSS_FLOOR", "OBJECTS_AMPLE")


def rule_constants() -> dict[str, float]:
    """Module-level names in capitals bound to a number in judge/'s modules (written as a
    literal or worked out from others: the value the module holds), and CATALOG_RULE."""
    found: dict[str, float] = {}
    for path in sorted(JUDGE.glob("*.py")):
        if path.name in OTHER_STATEMENTS or path.name == "__init__.py":
            continue
        module = importlib.import_module(f"pytest_membudget.judge.{path.stem}")
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Name) and target.id.isupper():
                    number = getattr(module, target.id)
                    if isinstance(number, (int, float)) and not isinstance(number, bool):
                        found[f"{path.stem}.{target.id}"] = float(number)
    found.update({f"catalog.{name}": float(getattr(catalog, name)) for name in CATALOG_RULE})
    return found


def stated(name: str, text: str) -> float | None:
    """The value the statement gives ``name`` (``NAME`` = 8, = 6 s, = 10 ms, = 1,000,000, or
    one worked out from others, ``NAME`` = ``A`` / ``B`` (3 s)), or None."""
    number = r"([0-9]+(?:[,.][0-9]+)*)(?:\s*(ms|s)\b)?"
    match = (re.search(rf"`{name}`\s+=\s+{number}[\s,.;:)]", text)
             or re.search(rf"`{name}`\s+=\s+`[^(]*?\({number}\)", text))
    if match is None:
        return None
    return float(match.group(1).replace(",", "")) * UNITS[match.group(2) or ""]


def test_there_are_rule_constants() -> None:
    assert {"fit.TAIL_BLOCKS", "policy.MIN_VERDICT_ITERATIONS"} <= set(rule_constants())


@pytest.mark.parametrize("qualified", sorted(rule_constants()))
def test_each_rule_constant_is_named_in_the_statement_with_its_value(qualified: str) -> None:
    name = qualified.split(".")[-1]
    value = stated(name, statement())
    assert value is not None, f"{qualified} is not in the rule at the top of docs/verdict.md"
    assert math.isclose(value, rule_constants()[qualified]), (qualified, value)


def test_a_name_left_out_of_the_statement_is_found() -> None:
    text = statement().replace("`TAIL_BLOCKS` = 8", "eight")
    assert stated("TAIL_BLOCKS", text) is None
    assert stated("TAIL_BLOCKS", "is cut into `TAIL_BLOCKS` = 8 blocks") == 8.0
    assert stated("SLOW_CALL", "(a call of `SLOW_CALL` = 10 ms)") == 0.01
    assert stated("CLEAN_SECONDS", "after `CLEAN_SECONDS` = `A` / `B` (3 s). While") == 3.0
    assert stated("OBJECTS_AMPLE", "(`OBJECTS_AMPLE` = 1,000,000 objects)") == 1e6


def test_a_constant_worked_out_from_others_is_a_rule_constant() -> None:
    assert rule_constants()["policy.CLEAN_SECONDS"] == 3.0
