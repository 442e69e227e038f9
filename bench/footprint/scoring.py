"""Scoring one footprint run: what the plugin's JSON report says about a shape, against the
shape's declaration. Pure (a report's dict in, a Score out), so that it can be checked on
hand-made reports (``scoring_check.py``) before the plugin writes real ones.

The report is the document ``--membudget-json`` writes: ``{"tests": {nodeid: result}}`` (a
list of results is read too). A result has ``passed``, ``seconds``, ``probes`` (each with
``start``, ``peak``, ``rise``), ``failures`` and, after a failing ``_rise`` or ``_peak``
budget, ``peak_evidence`` with ``lines`` (largest first; ``via_file``/``via_line`` name the
user's line when the allocating line is a library's) and ``composition`` (``kinds`` in
bytes, ``dominant``, ``rise``); a run stopped at the hard ceiling has ``runaway`` (the
watch's figures; ``rose``, the lines where RSS rose) instead. Missing keys score as wrong,
with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

MiB = 1 << 20


#: The reported rise is right within this share of the ground truth's rise.
RISE_TOLERANCE = 0.05
#: The composition's kinds add up to its rise within this share (and none is over it).
SHARES_TOLERANCE = 0.05


@dataclass(frozen=True)
class Expected:
    """What a shape declares (protocol.Shape, reduced to what scoring needs), and the
    ground truth's rise of the call the run measures (None: not known)."""

    fails: bool
    kind: str | None
    state: str | None
    source: str
    peak_lines: tuple[int, ...]
    truth_rise: float | None = None


@dataclass
class Score:
    """One run of one shape, scored. ``None`` in a ``*_right`` field: not applicable (a
    passing run has no peak evidence to grade)."""

    verdict: str  # "F" failed, "." passed, "E" error (no result for the test)
    verdict_right: bool
    rise: float | None = None
    #: Within RISE_TOLERANCE of the ground truth's rise of the measured call.
    rise_right: bool | None = None
    #: Stopped at the hard ceiling (the result has ``runaway``).
    stopped: bool = False
    #: The composition's shares add up to its rise, none over 100% (None: no composition).
    shares_right: bool | None = None
    shares: str = ""
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


def _score_shares(score: Score, evidence: Mapping[str, Any]) -> None:
    composition = evidence.get("composition")
    if not isinstance(composition, Mapping) or not composition.get("kinds"):
        return
    kinds = {str(k): float(v) for k, v in composition["kinds"].items() if v is not None}
    rise = composition.get("rise") or score.rise
    if not rise or rise <= 0:
        return
    shares = {kind: value / float(rise) for kind, value in kinds.items()}
    total = sum(shares.values())
    over = [kind for kind, share in shares.items() if share > 1.0 + 1e-9]
    score.shares_right = not over and abs(total - 1.0) <= SHARES_TOLERANCE
    largest = sorted(shares.items(), key=lambda item: -item[1])[:3]
    score.shares = (f"sum {total:.0%}: " + ", ".join(f"{k} {v:.0%}" for k, v in largest
                                                        if abs(v) >= 0.005))


def _score_stop(score: Score, runaway: Mapping[str, Any], expected: Expected) -> None:
    """A run stopped at the ceiling: its lines are where RSS rose; it names no kind and no
    state (scored wrong)."""
    score.stopped = True
    score.notes.append(f"stopped at the hard ceiling of {runaway.get('ceiling', 0) / MiB:.0f} "
                       f"MiB, RSS {runaway.get('rise', 0) / MiB:.0f} MiB above its start")
    rose = runaway.get("rose") or []
    score.kind_right = score.state_right = False
    file = rose[0].get("file") if rose else None
    number = rose[0].get("line") if rose else None
    if not file or number is None:
        score.line_right = False
        return
    score.line_named = f"{os.path.basename(str(file))}:{number}"
    score.line_right = same_file(str(file), expected.source) and int(
        number) in expected.peak_lines


def score_result(entry: Mapping[str, Any] | None, expected: Expected,
                 probe: str = "rss") -> Score:
    """Score one test's result against the shape's declaration."""
    if entry is None:
        return Score("E", False, notes=["no result for the test in the report"])
    verdict = _verdict(entry)
    score = Score(verdict, verdict == ("F" if expected.fails else "."),
                  rise=_rise(entry, probe), seconds=entry.get("seconds"))
    if expected.truth_rise and score.rise is not None and expected.fails:
        score.rise_right = abs(score.rise - expected.truth_rise) <= (
            RISE_TOLERANCE * expected.truth_rise)
    runaway = entry.get("runaway")
    if isinstance(runaway, Mapping) and runaway:
        _score_stop(score, runaway, expected)
        return score
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
    _score_shares(score, evidence)
    return score
