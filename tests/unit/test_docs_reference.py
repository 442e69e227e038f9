"""The docs' reference tables are generated from the code: every option and probe appears."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pytest_membudget.catalog import PROBES
from pytest_membudget.settings import OPTIONS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def load_extension() -> ModuleType:
    path = DOCS / "_ext" / "membudget_reference.py"
    spec = importlib.util.spec_from_file_location("membudget_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("membudget_reference", module)
    spec.loader.exec_module(module)
    return module


def test_every_option_has_a_row_with_its_ini_key_flag_and_help() -> None:
    rows = load_extension().option_rows()
    assert len(rows) == len(OPTIONS)
    for option, (ini, flag, _marker, default, meaning) in zip(OPTIONS, rows, strict=True):
        assert flag.startswith(option.flag)
        assert ini == ("(flag only)" if option.flag_only else option.ini)
        assert meaning == option.help
        assert default


def test_run_settings_name_their_marker_keyword() -> None:
    rows = {row[0]: row for row in load_extension().option_rows()}
    assert rows["membudget_warmup"][2] == "warmup="
    assert rows["membudget_iterations"][2] == "iterations="
    assert rows["membudget_budget"][2] == "-"


def test_every_probe_has_a_row() -> None:
    rows = load_extension().probe_rows()
    assert [row[0] for row in rows] == list(PROBES)


def test_the_reference_page_uses_the_generated_tables() -> None:
    page = (DOCS / "reference.md").read_text()
    assert "```{membudget-options}" in page and "```{membudget-probes}" in page
    assert "membudget_reference" in (DOCS / "conf.py").read_text()


def test_the_table_node_holds_every_option() -> None:
    pytest.importorskip("docutils")
    extension = load_extension()
    table = extension._table(extension.HEADERS_OPTIONS, extension.option_rows(), 4)
    text = table.astext()
    for option in OPTIONS:
        assert option.flag in text
        assert option.flag_only or option.ini in text
