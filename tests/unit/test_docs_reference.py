"""The docs' reference parts match the code: the reference page's generated blocks (the
marker's defaults, every option, every probe) and the JSON fields listed in docs/api.md."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.spec import RUN_KEYS, parse_run_value
from pytest_membudget.measure.results import BudgetOutcome, MembudgetResult, ProbeResult
from pytest_membudget.settings import OPTIONS, option_by_key
from pytest_membudget.vocabulary import BudgetKind, ProbeVerdict, Status, StopReason

DOCS = Path(__file__).resolve().parents[2] / "docs"


def load_tables() -> ModuleType:
    path = DOCS / "_scripts" / "reference_tables.py"
    spec = importlib.util.spec_from_file_location("reference_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("reference_tables", module)
    spec.loader.exec_module(module)
    return module


def test_the_reference_page_holds_what_the_code_makes() -> None:
    tables = load_tables()
    page = (DOCS / "reference.md").read_text(encoding="utf-8")
    assert tables.stale(page) == [], (
        "docs/reference.md differs from the code: run python docs/_scripts/reference_tables.py")


def test_a_changed_default_makes_the_page_stale() -> None:
    tables = load_tables()
    page = (DOCS / "reference.md").read_text(encoding="utf-8")
    changed = page.replace("max_seconds=60,", "max_seconds=61,", 1)
    assert changed != page
    assert tables.stale(changed) == ["marker"]
    assert tables.stale(tables.rewrite(changed)) == []


def test_every_option_has_a_row_with_its_ini_key_flag_and_help() -> None:
    rows = load_tables().option_rows()
    assert len(rows) == len(OPTIONS)
    for option, (ini, flag, _marker, default, meaning) in zip(OPTIONS, rows, strict=True):
        assert flag.startswith(option.flag)
        assert ini == ("(flag only)" if option.flag_only else option.ini)
        assert meaning == option.help
        assert default


def test_run_settings_name_their_marker_keyword() -> None:
    rows = {row[0]: row for row in load_tables().option_rows()}
    assert rows["membudget_warmup"][2] == "warmup="
    assert rows["membudget_iterations"][2] == "iterations="
    assert rows["membudget_budget"][2] == "-"


def test_the_marker_line_gives_each_run_setting_its_default() -> None:
    """Each literal of the marker line, read as the marker would read it, is the value the
    option's declared default gives."""
    block = load_tables().marker_block()
    for key in RUN_KEYS:
        found = re.search(rf"\b{key}=([^,)]+)", block)
        assert found, key
        literal = eval(found[1], {"__builtins__": {}}, {"None": None, "True": True,
                                                        "False": False})
        expected = parse_run_value(key, option_by_key(key).default, "default")
        assert parse_run_value(key, literal, "marker") == expected, key
    assert "max_iterations=None" in block


def test_every_probe_has_a_row() -> None:
    rows = load_tables().probe_rows()
    assert [row[0] for row in rows] == list(PROBES)


def test_pipes_in_cells_are_escaped() -> None:
    table = load_tables().markdown_table(("a", "b"), [("x|y", "p|q")], code_columns=1)
    assert table.splitlines()[-1] == "| `x\\|y` | p\\|q |"


def _result() -> MembudgetResult:
    probe = ProbeResult(name="rss", unit="B", slope=1.0, ci=(0.5, 1.5), peak=10.0,
                        growth=2.0, samples=np.array([1.0, 2.0]),
                        sample_iterations=np.array([0, 1]), verdict=ProbeVerdict.PASS,
                        outcomes=(BudgetOutcome("rss", BudgetKind.SLOPE, 0.0, Status.PASS,
                                                1.0),), start=1.0, settled_at=5)
    return MembudgetResult(iterations=2, warmup=1, stopped=StopReason.CLEAR, seconds=0.1,
                           probes={"rss": probe})


def _listed(section: str) -> set[str]:
    """The field names in the first column of the table under ``section`` in docs/api.md."""
    page = (DOCS / "api.md").read_text(encoding="utf-8")
    lines = page[page.index(section):].splitlines()[1:]
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        table.append(line)
    names: set[str] = set()
    for row in table[2:]:
        names.update(re.findall(r"`([a-z_]+)`", row.split("|")[1]))
    return names


def test_the_api_page_lists_every_field_of_a_test_and_of_a_probe() -> None:
    data = _result().to_dict()
    tests = _listed("<!-- fields of a test -->")
    assert tests == {*data, "outcome", "phases"}, tests ^ {*data, "outcome", "phases"}
    probe = _listed("<!-- fields of a probe -->")
    assert probe == set(data["probes"]["rss"]), probe ^ set(data["probes"]["rss"])
    outcome = _listed("<!-- fields of an outcome -->")
    assert outcome == set(data["probes"]["rss"]["outcomes"][0]), outcome


def test_the_api_page_names_every_budget_kind() -> None:
    page = (DOCS / "api.md").read_text(encoding="utf-8")
    kinds = re.search(r"`kind` \(([^)]*)\)", page)
    assert kinds, "docs/api.md: no list of outcome kinds"
    assert set(re.findall(r'`"?([a-z]+)"?`', kinds[1])) == {k.value for k in BudgetKind}


def test_a_budget_outcome_gives_the_json_s_outcome_fields() -> None:
    # The public class (pytest_membudget.BudgetOutcome) keeps its to_dict(), the JSON's record.
    outcome = _result().probes["rss"].outcomes[0]
    assert outcome.to_dict() == _result().to_dict()["probes"]["rss"]["outcomes"][0]
