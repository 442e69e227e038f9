"""Sphinx extension: reference tables generated from the package's own declarations.

``membudget-options`` renders every entry of ``pytest_membudget.settings.OPTIONS`` (ini key,
command-line flag, marker keyword, default, help) and ``membudget-probes`` renders
``pytest_membudget.catalog.PROBES``. The tables are built when the docs are built, so they
cannot drift from the code. :func:`option_rows` and :func:`probe_rows` are plain functions, so
the test suite checks them without Sphinx.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

HEADERS_OPTIONS = ("ini key", "command-line flag", "marker keyword", "default", "meaning")
HEADERS_PROBES = ("probe", "unit", "resolution", "what it reads")


def _default(option: Any) -> str:
    default = option.default
    if default is None or default == "" or default == ():
        return "(none)"
    if isinstance(default, (tuple, list)):
        return ", ".join(str(v) for v in default)
    return str(default)


def _flag(option: Any) -> str:
    kind = getattr(option, "kind", "string")
    metavar = getattr(option, "metavar", None) or "VALUE"
    if kind == "bool":
        negative = getattr(option, "negative_flag", None)
        return option.flag + (f", {negative}" if negative else "")
    if kind == "optional":
        return f"{option.flag}[={metavar}]"
    if kind == "linelist":
        return f"{option.flag}={metavar} (repeatable)"
    return f"{option.flag}={metavar}"


def option_rows() -> list[tuple[str, ...]]:
    """One row per declared option: (ini key, flag, marker keyword, default, help)."""
    from pytest_membudget.judge.spec import RUN_KEYS
    from pytest_membudget.settings import OPTIONS

    rows = []
    for option in OPTIONS:
        ini = "(flag only)" if getattr(option, "flag_only", False) else option.ini
        marker = f"{option.key}=" if option.key in RUN_KEYS else "-"
        rows.append((ini, _flag(option), marker, _default(option), option.help))
    return rows


def probe_rows() -> list[tuple[str, ...]]:
    """One row per catalogued probe: (name, unit, resolution, description)."""
    from pytest_membudget.catalog import PROBES

    rows = []
    for info in PROBES.values():
        if info.relative_resolution and not info.resolution:
            resolution = f"{info.relative_resolution * 100:g} % of the median iteration time"
        else:
            resolution = f"{info.resolution:g} {info.unit}"
        rows.append((info.name, info.unit, resolution, info.description))
    return rows


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], literal_columns: int) -> Any:
    from docutils import nodes

    table = nodes.table(classes=["membudget-reference"])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for _ in headers:
        group += nodes.colspec(colwidth=1)

    def row(cells: Sequence[str], head: bool) -> Any:
        line = nodes.row()
        for index, text in enumerate(cells):
            entry = nodes.entry()
            paragraph = nodes.paragraph()
            if not head and index < literal_columns and text not in ("-", "(flag only)"):
                paragraph += nodes.literal(text=text)
            else:
                paragraph += nodes.Text(text)
            entry += paragraph
            line += entry
        return line

    thead = nodes.thead()
    thead += row(headers, True)
    tbody = nodes.tbody()
    for cells in rows:
        tbody += row(cells, False)
    group += thead
    group += tbody
    return table


def setup(app: Any) -> dict[str, Any]:
    from docutils.parsers.rst import Directive

    class OptionsDirective(Directive):
        has_content = False

        def run(self) -> list[Any]:
            return [_table(HEADERS_OPTIONS, option_rows(), literal_columns=4)]

    class ProbesDirective(Directive):
        has_content = False

        def run(self) -> list[Any]:
            return [_table(HEADERS_PROBES, probe_rows(), literal_columns=1)]

    app.add_directive("membudget-options", OptionsDirective)
    app.add_directive("membudget-probes", ProbesDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
