"""The reference page's generated parts: the marker's signature with its defaults, the table of
settings (``pytest_membudget.settings.OPTIONS``) and the table of probes
(``pytest_membudget.catalog.PROBES``), written into ``docs/reference.md`` as plain Markdown, so
that they read the same on a repository page as on the built site.

``python docs/_scripts/reference_tables.py`` rewrites each block between its markers;
``--check`` exits 1 and names the blocks that differ from the code. The test suite
(``tests/unit/test_docs_reference.py``) fails while the page differs.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_membudget.settings import Option

PAGE = Path(__file__).resolve().parents[1] / "reference.md"
HEADERS_OPTIONS = ("ini key", "command-line flag", "marker keyword", "default", "meaning")
HEADERS_PROBES = ("probe", "unit", "resolution", "what it reads")
#: Cells shown as code, unless they hold one of these words.
PLAIN = ("-", "(flag only)", "(none)")


def _default(option: Option) -> str:
    default = option.default
    if default is None or default == "" or default == ():
        return "(none)"
    if isinstance(default, (tuple, list)):
        return ", ".join(str(v) for v in default)
    return str(default)


def _flag(option: Option) -> str:
    if option.kind == "bool":
        negative = option.negative_flag
        return option.flag + (f", {negative}" if negative else "")
    metavar = option.metavar or "VALUE"
    if option.kind == "optional":
        return f"{option.flag}[={metavar}]"
    if option.kind == "linelist":
        return f"{option.flag}={metavar} (repeatable)"
    return f"{option.flag}={metavar}"


def option_rows() -> list[tuple[str, ...]]:
    """One row per declared option: (ini key, flag, marker keyword, default, help)."""
    from pytest_membudget.judge.spec import RUN_KEYS
    from pytest_membudget.settings import OPTIONS

    rows: list[tuple[str, ...]] = []
    for option in OPTIONS:
        ini = "(flag only)" if option.flag_only else option.ini
        marker = f"{option.key}=" if option.key in RUN_KEYS else "-"
        rows.append((ini, _flag(option), marker, _default(option), option.help))
    return rows


def probe_rows() -> list[tuple[str, ...]]:
    """One row per catalogued probe: (name, unit, resolution, description)."""
    from pytest_membudget.catalog import PROBES
    from pytest_membudget.render.units import fmt
    from pytest_membudget.vocabulary import ProbeKind

    rows: list[tuple[str, ...]] = []
    for info in PROBES.values():
        if info.relative_resolution and not info.resolution:
            resolution = f"{info.relative_resolution * 100:g} % of the median iteration time"
        elif info.kind is ProbeKind.BYTES:  # as the plugin writes sizes: 32 KiB, 2 MiB
            resolution = fmt(info.name, info.resolution)
        else:  # a count, in the unit column's units
            resolution = f"{info.resolution:g}"
        rows.append((info.name, info.unit, resolution, info.description))
    return rows


def marker_default(key: str) -> str:
    """The default of a run setting as a Python literal for the marker: ``5``, ``"auto"``,
    ``True``, ``None``."""
    from pytest_membudget.settings import option_by_key

    option = option_by_key(key)
    text = str(option.default) if option.default is not None else ""
    if option.kind == "bool":
        return "True" if text == "true" else "False"
    if text.lower() in ("", "none"):
        return "None"
    if re.fullmatch(r"[0-9]+(\.[0-9]+)?", text):
        return text
    return f'"{text}"'


def marker_block() -> str:
    """The marker's signature: the four budget forms and every run setting at its default."""
    from pytest_membudget.judge.spec import RUN_KEYS

    opening = "@pytest.mark.membudget("
    items = ["<probe>=SLOPE", "<probe>_peak=SIZE", "<probe>_rise=SIZE", "<probe>_growth=SIZE",
             *(f"{key}={marker_default(key)}" for key in RUN_KEYS)]
    lines, line = [], opening
    for index, item in enumerate(items):
        piece = item + ("," if index < len(items) - 1 else ")")
        if line.strip() and len(line) + len(piece) + 1 > 95 and line != opening:
            lines.append(line.rstrip())
            line = " " * len(opening)
        line += piece + " "
    lines.append(line.rstrip())
    return "```python\n" + "\n".join(lines) + "\n```"


def _cell(text: str, code: bool) -> str:
    escaped = text.replace("|", "\\|")
    return f"`{escaped}`" if code and text not in PLAIN else escaped


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]],
                   code_columns: int) -> str:
    """A Markdown table; the first ``code_columns`` cells of each row set as code."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(text, index < code_columns)
                                        for index, text in enumerate(row)) + " |")
    return "\n".join(lines)


BLOCKS: dict[str, Callable[[], str]] = {
    "marker": marker_block,
    "options": lambda: markdown_table(HEADERS_OPTIONS, option_rows(), code_columns=4),
    "probes": lambda: markdown_table(HEADERS_PROBES, probe_rows(), code_columns=1),
}


def start_marker(name: str) -> str:
    return f"<!-- generated from the code by docs/_scripts/reference_tables.py: {name} -->"


def end_marker(name: str) -> str:
    return f"<!-- end of generated {name} -->"


def _span(page: str, name: str) -> tuple[int, int]:
    start, end = start_marker(name), end_marker(name)
    first = page.find(start)
    last = page.find(end, first + len(start))
    if first < 0 or last < 0:
        raise ValueError(f"{PAGE.name}: no block {name!r} between {start!r} and {end!r}")
    return first + len(start), last


def block_on_page(page: str, name: str) -> str:
    """What the page holds between a block's markers, stripped."""
    begin, end = _span(page, name)
    return page[begin:end].strip()


def rewrite(page: str) -> str:
    """The page with every generated block made from the code."""
    for name, make in BLOCKS.items():
        begin, end = _span(page, name)
        page = page[:begin] + "\n\n" + make() + "\n\n" + page[end:]
    return page


def stale(page: str) -> list[str]:
    """The blocks whose text differs from what the code makes."""
    return [name for name, make in BLOCKS.items() if block_on_page(page, name) != make()]


def main(argv: Sequence[str]) -> int:
    page = PAGE.read_text(encoding="utf-8")
    if "--check" in argv:
        differ = stale(page)
        for name in differ:
            print(f"{PAGE}: the {name} block differs from the code; run "
                  "python docs/_scripts/reference_tables.py")
        return 1 if differ else 0
    PAGE.write_text(rewrite(page), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
