"""How one test came out of the sweep, as data: its verdict, what the screen flagged, the
full verdict's result, why it was not repeated; and what the leak table shows of a result.
Text is made from it at the edge (sweep/table.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from pytest_membudget.catalog import PROBES
from pytest_membudget.evidence.labels import clip
from pytest_membudget.evidence.records import CacheInfo, GrowthEvidence, RetainingPath
from pytest_membudget.judge.numbers import finite_or_none
from pytest_membudget.measure.results import MembudgetResult
from pytest_membudget.vocabulary import (
    BudgetKind,
    CutShort,
    LeftBehind,
    NotRepeatable,
    ProbeKind,
    SweepVerdict,
)


class SecondLookRecord(TypedDict):
    """A second look (SecondLook) as the records carry it: growth per call, rounded."""

    probe: str
    first_per_call: float
    then_per_call: float
    rounds_per_call: list[float]
    every_call: bool
    full_verdict: bool


class LeakProbe(TypedDict):
    """A failing slope budget of a leaking test: its probe, unit, slope and bounds."""

    probe: str
    unit: str
    slope: float | None
    lower: float | None
    upper: float | None


class _TopEvidence(TypedDict):
    kind: str


class TopEvidence(_TopEvidence, total=False):
    """The first line of a leak's evidence, by ``kind``: "error" (``text``), "same_as"
    (``test``), "thread" (a records.ThreadLeft's keys), "fd" (``target``), "site" (the
    top allocation site's keys, None where it has none, and the first retaining ``path``),
    "native" (the top native ``stack``, and, where the traced Python growth fell short of
    the failing slope, ``traced``, ``probe`` and ``slope``)."""

    text: str
    test: str
    name: str
    daemon: bool
    target: str
    file: str | None
    line: int | None
    bytes: int | None
    per_iter: float | None
    code: str | None
    via_file: str | None
    via_line: int | None
    path: RetainingPath
    #: One of the native evidence's stacks (evidence/native.py, which types it).
    stack: Any
    traced: float | None
    probe: str | None
    slope: float | None


class LeakSummary(TypedDict):
    """What the leak table shows of a judged test (leak_summary)."""

    probes: list[LeakProbe]
    bytes_per_call: float | None
    evidence: TopEvidence | None


class _SweepRecord(TypedDict):
    verdict: str


class SweepRecord(_SweepRecord, total=False):
    """How one test came out of the sweep (SweepOutcome.to_dict), as the reports carry it
    and the sweep's views read it; a test the sweep did not screen has its verdict and
    ``reason`` only."""

    flagged: dict[str, float]
    calls: int
    seconds: float
    screen_seconds: float
    allowed: float
    bound: str
    first_call: float
    needed: float
    second_look: SecondLookRecord
    reason: str
    detail: str
    failed_call: int
    leaks: LeakSummary
    held_by: list[CacheInfo]


@dataclass(frozen=True)
class SecondLook:
    """A second screen of a test flagged on one probe alone (judge.screen.second_look):
    that probe's growth per call on the screen (``first``) and on each round of the second
    look (``rounds``, one or two), whether it grew on every call of the last round, and
    whether its growth went on (a full verdict follows) or stopped (the test passed without
    one)."""

    probe: str
    first: float
    rounds: tuple[float, ...]
    every_call: bool
    goes_on: bool

    @property
    def then(self) -> float:
        """The growth per call on the last round."""
        return self.rounds[-1]

    def to_dict(self) -> SecondLookRecord:
        return {"probe": self.probe, "first_per_call": round(self.first, 3),
                "then_per_call": round(self.then, 3),
                "rounds_per_call": [round(r, 3) for r in self.rounds],
                "every_call": self.every_call, "full_verdict": self.goes_on}


@dataclass
class SweepOutcome:
    """How one test came out of the sweep: data, turned into text at the edge."""

    verdict: SweepVerdict
    #: Probes the screen flagged, each with its growth over the screen.
    flagged: dict[str, float] = field(default_factory=dict)
    #: The second look at growth the screen flagged on one probe alone; None when none.
    second_look: SecondLook | None = None
    #: Repeats made after the test's own first call (screen and full verdict).
    calls: int = 0
    seconds: float = 0.0
    #: Of ``seconds``, those of the screen (the rest: the full verdict and its evidence).
    screen_seconds: float = 0.0
    #: The seconds the sweep allowed itself for this test, and what bounded them.
    allowed: float = 0.0
    bound: CutShort = CutShort.SWEEP_SECONDS
    #: Seconds from the start of the sweep that a full verdict needed at the screen's pace
    #: (0.0 when the screen flagged nothing).
    needed: float = 0.0
    #: Seconds of the test's own first call.
    first_call: float = 0.0
    result: MembudgetResult | None = None
    reason: NotRepeatable | None = None
    #: The exception that ended the repeats, as ``Type: message``.
    detail: str = ""
    #: The repeat (1 = the first after the test's own call) that raised.
    failed_call: int = 0

    def to_dict(self) -> SweepRecord:
        data: SweepRecord = {
            "verdict": self.verdict.value,
            "flagged": dict(self.flagged),
            "calls": self.calls,
            "seconds": round(self.seconds, 6),
            "screen_seconds": round(self.screen_seconds, 6),
            "allowed": round(self.allowed, 3),
            "bound": self.bound.value,
            "first_call": round(self.first_call, 6),
        }
        if self.needed:
            data["needed"] = round(self.needed, 3)
        if self.second_look is not None:
            data["second_look"] = self.second_look.to_dict()
        if self.reason is not None:
            data["reason"] = self.reason.value
            data["detail"] = self.detail
            data["failed_call"] = self.failed_call
        if self.result is not None and self.verdict is SweepVerdict.LEAK:
            data["leaks"] = leak_summary(self.result)
        evidence: GrowthEvidence = self.result.evidence_data if self.result is not None else {}
        if self.verdict is SweepVerdict.INCONCLUSIVE and evidence.get("held"):
            # The bounded caches still filling that hold the growth (evidence/caches.py).
            data["held_by"] = list(evidence.get("bounded") or [])
        return data


def describe(error: BaseException) -> str:
    """``Type: first line of the message`` (at most 200 characters)."""
    text = str(error).strip().splitlines()
    message = text[0] if text else ""
    line = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return clip(line, 200)


def leak_summary(result: MembudgetResult) -> LeakSummary:
    """What the leak table shows of a judged test: each failing slope budget's probe, slope
    and bounds, the growth per call in bytes where a probe or the evidence measured it (the
    table's rank), and the top line of the evidence."""
    failing = [o for o in result.failures if o.kind is BudgetKind.SLOPE]
    probes: list[LeakProbe] = [
        {"probe": o.probe, "unit": PROBES[o.probe].unit, "slope": finite_or_none(o.measured),
         "lower": finite_or_none(result.probes[o.probe].ci[0]),
         "upper": finite_or_none(result.probes[o.probe].ci[1])} for o in failing]
    byte_slopes = [o.measured for o in failing if PROBES[o.probe].kind is ProbeKind.BYTES
                   and finite_or_none(o.measured) is not None]
    evidence = result.evidence_data
    sites = evidence.get("sites") or []
    done = evidence.get("iterations") or 0
    if sites and done:
        byte_slopes.append(sum(s["bytes"] for s in sites) / done)
    return {"probes": probes, "bytes_per_call": max(byte_slopes) if byte_slopes else None,
            "evidence": top_evidence(evidence, tuple(o.probe for o in failing))}


def top_evidence(evidence: GrowthEvidence, failing: tuple[str, ...] = ()
                 ) -> TopEvidence | None:
    """The first line of the evidence: the first thread or descriptor left open when those
    probes fail, else the top growing allocation site (with the first retaining path), else
    the top native stack, else what kept the evidence away."""
    if "error" in evidence:
        return {"kind": "error", "text": evidence["error"]}
    if "same_as" in evidence:
        return {"kind": "same_as", "test": evidence["same_as"]}
    listed = {PROBES[name].evidence_list for name in failing if name in PROBES}
    if LeftBehind.THREADS in listed and evidence.get("threads"):
        thread = evidence["threads"][0]
        return {"kind": "thread", "name": thread["name"], "daemon": thread["daemon"],
                "target": thread["target"]}
    if LeftBehind.FDS in listed and evidence.get("fds"):
        return {"kind": "fd", "target": evidence["fds"][0]}
    sites = evidence.get("sites")
    path = next((p["path"] for p in evidence.get("paths") or () if p.get("path")), None)
    explained = evidence.get("explained")
    # Traced sites that account for under half of the failing slope (evidence/share.py),
    # where no probe of Python objects failed (the catalog's blind_to_native), are not the
    # leak's first line: a counter's int beside 1.6 KiB a call of native memory. Where Python
    # objects grow too, their site stays first: the objects that hold the native memory (a
    # torch graph kept per call).
    native_rest = (sites and (explained.get("rest") if explained else None) not in (None, "python")
                   and not any(PROBES[name].blind_to_native for name in failing
                               if name in PROBES))
    found: TopEvidence
    if sites and not native_rest:
        top = sites[0]
        found = {"kind": "site", "file": top.get("file"), "line": top.get("line"),
                 "bytes": top.get("bytes"), "per_iter": top.get("per_iter"),
                 "code": top.get("code"), "via_file": top.get("via_file"),
                 "via_line": top.get("via_line")}
    elif sites is not None:
        stacks = (evidence.get("native") or {}).get("stacks") or []
        found = {"kind": "native"}
        if stacks:
            found["stack"] = stacks[0]
        if native_rest and explained:
            found["traced"] = explained.get("traced")
            found["probe"] = explained.get("probe")
            found["slope"] = explained.get("slope")
    else:
        return None
    if path:
        found["path"] = path
    return found
