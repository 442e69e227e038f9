"""How one test came out of the sweep, as data: its verdict, what the screen flagged, the
full verdict's result, why it was not repeated; and what the leak table shows of a result.
Text is made from it at the edge (sweep/table.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.numbers import finite_or_none
from pytest_membudget.measure.results import MembudgetResult
from pytest_membudget.vocabulary import (
    BudgetKind,
    CutShort,
    NotRepeatable,
    ProbeKind,
    SweepVerdict,
)


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

    def to_dict(self) -> dict[str, Any]:
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

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
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
            data.update(reason=self.reason.value, detail=self.detail,
                        failed_call=self.failed_call)
        if self.result is not None and self.verdict is SweepVerdict.LEAK:
            data["leaks"] = leak_summary(self.result)
        evidence = self.result.evidence_data if self.result is not None else {}
        if self.verdict is SweepVerdict.INCONCLUSIVE and evidence.get("held"):
            # The bounded caches still filling that hold the growth (evidence/caches.py).
            data["held_by"] = list(evidence.get("bounded") or [])
        return data


def describe(error: BaseException) -> str:
    """``Type: first line of the message`` (at most 200 characters)."""
    text = str(error).strip().splitlines()
    message = text[0] if text else ""
    line = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return line if len(line) <= 200 else line[:197] + "..."


def leak_summary(result: MembudgetResult) -> dict[str, Any]:
    """What the leak table shows of a judged test: each failing slope budget's probe, slope
    and bounds, the growth per call in bytes where a probe or the evidence measured it (the
    table's rank), and the top line of the evidence."""
    failing = [o for o in result.failures if o.kind is BudgetKind.SLOPE]
    probes: list[dict[str, Any]] = [
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


def top_evidence(evidence: Mapping[str, Any], failing: tuple[str, ...] = ()
                 ) -> dict[str, Any] | None:
    """The first line of the evidence: the first thread or descriptor left open when those
    probes fail, else the top growing allocation site (with the first retaining path), else
    the top native stack, else what kept the evidence away."""
    if "error" in evidence:
        return {"kind": "error", "text": evidence["error"]}
    if "same_as" in evidence:
        return {"kind": "same_as", "test": evidence["same_as"]}
    listed = {PROBES[name].evidence_list for name in failing if name in PROBES}
    if "threads" in listed and evidence.get("threads"):
        return {"kind": "thread", **evidence["threads"][0]}
    if "fds" in listed and evidence.get("fds"):
        return {"kind": "fd", "target": evidence["fds"][0]}
    sites = evidence.get("sites")
    path = next((p["path"] for p in evidence.get("paths") or () if p.get("path")), None)
    kept = {"path": path} if path else {}
    explained = evidence.get("explained") or {}
    # Traced sites that account for under half of the failing slope (evidence/share.py),
    # where no probe of Python objects failed (the catalog's blind_to_native), are not the
    # leak's first line: a counter's int beside 1.6 KiB a call of native memory. Where Python
    # objects grow too, their site stays first: the objects that hold the native memory (a
    # torch graph kept per call).
    native_rest = (sites and explained.get("rest") not in (None, "python")
                   and not any(PROBES[name].blind_to_native for name in failing
                               if name in PROBES))
    if sites and not native_rest:
        top = sites[0]
        return {"kind": "site", **{k: top.get(k) for k in (
            "file", "line", "bytes", "per_iter", "code", "via_file", "via_line")}, **kept}
    if sites is not None:
        native = evidence.get("native") or {}
        stacks = native.get("stacks") or []
        share = ({"traced": explained.get("traced"), "probe": explained.get("probe"),
                  "slope": explained.get("slope")} if native_rest else {})
        return {"kind": "native", **({"stack": stacks[0]} if stacks else {}), **share, **kept}
    return None
