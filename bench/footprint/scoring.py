"""Scoring one footprint run: what the plugin's JSON report says about a shape, against the
shape's declaration. Pure (a report's dict in, a Score out), so that it can be checked on
hand-made reports (``scoring_check.py``) before the plugin writes real ones.

The report is the document ``--membudget-json`` writes: ``{"tests": {nodeid: result}}`` (a
list of results is read too). A result has ``passed``, ``seconds``, ``probes`` (each with
``start``, ``peak``, ``rise``), ``failures`` and, after a failing ``_rise`` or ``_peak``
budget, ``peak_evidence`` with ``lines`` (largest first; ``via_file``/``via_line`` name the
user's line when the allocating line is a library's) and ``composition`` (``kinds`` in
bytes, ``dominant``). Missing keys score as wrong, with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Expected:
    """What a shape declares (shapes.Shape, reduced to what scoring needs)."""

    fails: bool
    kind: str | None
    state: str | None
    source: str
    peak_lines: tuple[int, ...]


@dataclass
class Score:
    """One run of one shape, scored. ``None`` in a ``*_right`` field: not applicable (a
    passing run has no peak evidence to grade)."""

    verdict: str  # "F" failed, "." passed, "E" error (no result for the test)
    verdict_right: bool
    rise: float | None = None
    line_named: str = ""
    line_right: bool | None = None
    kind_named: str | None = None
    kind_right: bool | None = None
    kind_bytes: float | None = None
    state_named: str | None = None
    state_right: bool | None = None
    seconds: float | None = None
    evidence_seconds: float | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tests_of(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-test results of a report, whether ``tests`` is keyed by node id or a list."""
    tests = document.get("tests")
    if isinstance(tests, Mapping):
        return [dict(entry, nodeid=nodeid) for nodeid, entry in tests.items()]
    if isinstance(tests, Sequence) and not isinstance(tests, str):
        return [dict(entry) for entry in tests if isinstance(entry, Mapping)]
    return []


def user_line(line: Mapping[str, Any]) -> tuple[str, int] | None:
    """The user's line of an evidence line: its caller when it is a library's, else itself."""
    file, number = line.get("via_file"), line.get("via_line")
    if not file or number is None:
        file, number = line.get("file"), line.get("line")
    if not file or number is None:
        return None
    return str(file), int(number)


def same_file(a: str, b: str) -> bool:
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def _verdict(entry: Mapping[str, Any]) -> str:
    passed = entry.get("passed")
    if passed is None:
        outcome = entry.get("outcome")
        passed = outcome == "passed" if outcome in ("passed", "failed") else None
    if passed is None:
        return "E"
    return "." if passed else "F"


def _rise(entry: Mapping[str, Any], probe: str) -> float | None:
    figures = (entry.get("probes") or {}).get(probe) or {}
    rise = figures.get("rise")
    if rise is None and figures.get("peak") is not None and figures.get("start") is not None:
        rise = figures["peak"] - figures["start"]
    return float(rise) if rise is not None else None


def _score_line(score: Score, evidence: Mapping[str, Any], expected: Expected) -> None:
    lines = evidence.get("lines")
    if not lines:
        score.line_right = score.state_right = False
        score.notes.append("peak_evidence has no lines")
        return
    first = user_line(lines[0])
    if first is None:
        score.line_right = False
        score.notes.append("the first line has no file and line")
        return
    file, number = first
    score.line_named = f"{os.path.basename(file)}:{number}"
    score.line_right = same_file(file, expected.source) and number in expected.peak_lines
    state = lines[0].get("state")
    score.state_named = None if state is None else str(state)
    score.state_right = state == expected.state
    if state is None:
        score.notes.append("the first line has no state")


def _score_kind(score: Score, evidence: Mapping[str, Any], expected: Expected) -> None:
    composition = evidence.get("composition")
    if not isinstance(composition, Mapping) or "dominant" not in composition:
        score.kind_right = False
        score.notes.append("peak_evidence has no composition.dominant")
        return
    score.kind_named = str(composition["dominant"])
    score.kind_right = score.kind_named == expected.kind
    kinds = composition.get("kinds") or {}
    if score.kind_named in kinds:
        score.kind_bytes = float(kinds[score.kind_named])


def score_result(entry: Mapping[str, Any] | None, expected: Expected,
                 probe: str = "rss") -> Score:
    """Score one test's result against the shape's declaration."""
    if entry is None:
        return Score("E", False, notes=["no result for the test in the report"])
    verdict = _verdict(entry)
    score = Score(verdict, verdict == ("F" if expected.fails else "."),
                  rise=_rise(entry, probe), seconds=entry.get("seconds"))
    if verdict != "F":
        return score
    evidence = entry.get("peak_evidence")
    if not isinstance(evidence, Mapping) or not evidence:
        score.line_right = score.kind_right = score.state_right = False
        score.notes.append("failed without peak_evidence")
        return score
    score.evidence_seconds = evidence.get("seconds")
    _score_line(score, evidence, expected)
    _score_kind(score, evidence, expected)
    return score
