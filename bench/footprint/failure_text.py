"""The lines of a footprint failure's text that say why a score missed (pure).

The runner keeps each run's failure text (pytest's report of the test, ``E`` prefixes taken
off) and notes, for each miss, the one line that shows its cause: the composition for a
kind, the first evidence line for a line or a state, the rise and the run's header for a
rise, the stop for a stopped run, the evidence's heading for its cost.
"""

from __future__ import annotations

import re

#: Headings after which the first line is the evidence's first line.
LINE_HEADINGS = ("alive at the peak, by line", "where RSS rose", "RSS rose while these lines",
                 "these lines started the threads")


def failure_section(output: str, test: str) -> str:
    """The failure's report of ``test`` in pytest's output, ``E`` prefixes taken off."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if line.startswith("_") and f" {test} " in line), None)
    if start is None:
        return ""
    section = []
    for line in lines[start + 1:]:
        if re.match(r"^(_{3,} |={3,} |-{3,} )", line):
            break
        section.append(re.sub(r"^E ?", "", line) if line.startswith("E") else line)
    return "\n".join(section).strip("\n")


def _after(lines: list[str], heading: str, count: int = 1) -> str:
    for index, line in enumerate(lines):
        if heading in line:
            return " / ".join(item.strip() for item in lines[index:index + 1 + count])
    return ""


def _first(lines: list[str], needle: str) -> str:
    return next((line.strip() for line in lines if needle in line), "")


def causes(text: str) -> dict[str, str]:
    """One line of the text per cause: ``header``, ``rise``, ``stop``, ``evidence``,
    ``made_of`` (the composition's heading and its figures), ``first_line`` (the first
    evidence line)."""
    lines = text.splitlines()
    first_line = ""
    for heading in LINE_HEADINGS:
        found = _after(lines, heading)
        if found:
            first_line = found.split(" / ", 1)[-1]
            break
    return {"header": _first(lines, "measured after"),
            "rise": _first(lines, " rose ") if "was stopped" not in text else "",
            "stop": _first(lines, "was stopped"),
            "evidence": _first(lines, "Evidence at the peak"),
            "made_of": _after(lines, "what the rise was made of"),
            "first_line": first_line}


def short(line: str, limit: int = 240) -> str:
    line = re.sub(r"\s+", " ", line).strip()
    return line if len(line) <= limit else line[:limit - 3] + "..."
