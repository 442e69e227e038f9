"""The sweep's views of its results: the end-of-session table, the failure text of a leaking
test, and the JSON report's ``sweep`` section. Reads the records the reports carried (one
``SweepOutcome.to_dict()`` per test); decides nothing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict

from pytest_membudget.judge.numbers import finite_or_none
from pytest_membudget.render.failure import failure_message
from pytest_membudget.render.retention import native_top_text, path_text
from pytest_membudget.render.session import cache_text
from pytest_membudget.render.units import fmt, short_path, table
from pytest_membudget.sweep.outcome import (
    LeakProbe,
    LeakSummary,
    SecondLookRecord,
    SweepRecord,
    TopEvidence,
)
from pytest_membudget.vocabulary import CutShort, NotRepeatable, SweepMode, SweepVerdict

if TYPE_CHECKING:
    from pytest_membudget.measure.results import MembudgetResult

#: Each test's record, by node id.
Records = Mapping[str, SweepRecord]


class LeakEntry(TypedDict):
    """A leaking test in the JSON report: its leak summary and the top evidence in words."""

    test: str
    bytes_per_call: float | None
    probes: list[LeakProbe]
    evidence: TopEvidence | None
    evidence_text: str


class ListedRecord(SweepRecord, total=False):
    """A test's record in one of the report's lists, with its node id first."""

    test: str


class NotRepeatedEntry(ListedRecord):
    """A test of the not-repeatable list, with why, in words."""

    reason_text: str


class _FlaggedEntry(TypedDict):
    test: str
    verdict: str | None
    flagged: dict[str, float] | None


class FlaggedEntry(_FlaggedEntry, total=False):
    """A test the screen flagged: its verdict, what was flagged, and its second look."""

    second_look: SecondLookRecord


class SweepDocument(TypedDict):
    """The JSON report's ``sweep`` section: the same table and lists as the terminal."""

    mode: str
    counts: dict[str, int]
    #: Where the sweep's own time went, summed over the tests (the tests' own first calls
    #: beside it, for scale).
    seconds: dict[str, float]
    leaks: list[LeakEntry]
    not_repeatable: list[NotRepeatedEntry]
    not_screened: list[ListedRecord]
    #: Both lists above, counted by reason: what the sweep did not look at.
    not_looked_at: dict[str, dict[str, int]]
    cut_short: list[ListedRecord]
    inconclusive: list[ListedRecord]
    flagged: list[FlaggedEntry]

LEAK_HEADER = ("test", "probe", "growth/call", "bounds/call", "top evidence")
REASONS = {
    NotRepeatable.RAISED: "repeat {call} raised {detail}",
    NotRepeatable.SKIPPED: "repeat {call} skipped ({detail})",
    NotRepeatable.XFAILED: "repeat {call} xfailed ({detail})",
    NotRepeatable.XFAIL_MARKED: "marked xfail: its outcome is expected to change",
    NotRepeatable.DOCTEST: "doctest: its examples run once, in one namespace",
    NotRepeatable.UNITTEST: "unittest.TestCase method under --pdb: its tearDown is "
                            "postponed, so it is not repeated",
    NotRepeatable.OTHER_ITEM: "not a Python test function",
    NotRepeatable.TEARDOWN: "its teardown failed after the repeats (not reported as an "
                            "error; run the test without the sweep to see whether it fails "
                            "alone): {detail}",
}


def _leaking(records: Records) -> list[tuple[str, LeakSummary]]:
    """Tests with a leak, the fastest growth per call first: bytes per call where a probe or
    the evidence measured it, then the rest by their probe's slope."""
    found = [(nodeid, data["leaks"]) for nodeid, data in records.items()
             if data.get("leaks") and data["leaks"].get("probes")]

    def rank(entry: tuple[str, LeakSummary]) -> tuple[int, float]:
        leaks = entry[1]
        per_call = leaks.get("bytes_per_call")
        if per_call is not None:
            return (1, float(per_call))
        return (0, max(float(p["slope"] or 0.0) for p in leaks["probes"]))

    return sorted(found, key=rank, reverse=True)


def evidence_text(top: TopEvidence | None) -> str:
    """The top evidence line, in one line."""
    if not top:
        return "-"
    kind = top.get("kind")
    if kind == "site":
        code = f"  {top['code']}" if top.get("code") else ""
        via = (f" (called from {short_path(str(top['via_file']))}:{top['via_line']})"
               if top.get("via_file") else "")
        kept = f"; kept by {path_text(top['path'])}" if top.get("path") else ""
        return (f"{short_path(str(top['file']))}:{top['line']}: +{fmt('heap', top.get('bytes'))} "
                f"({per_call('heap', top.get('per_iter'))}){via}{code}{kept}")
    if kind == "same_as":
        return f"as {top.get('test')} (the same test function)"
    if kind == "thread":
        return f"thread {top.get('name')} (target {top.get('target')}) still alive"
    if kind == "fd":
        return f"descriptor still open: {top.get('target')}"
    if kind == "native":
        if top.get("stack"):
            return native_top_text({"stacks": [top["stack"]]})
        if top.get("slope"):
            probe = str(top.get("probe"))
            return (f"native memory (tracemalloc saw {per_call('heap', top.get('traced'))} "
                    f"of {probe}'s {per_call(probe, top.get('slope'))})")
        return "native memory (tracemalloc saw no Python growth)"
    return f"no evidence: {top.get('text')}"


def per_call(probe: str, value: float | None) -> str:
    """A growth per call: the sweep repeats calls, so an iteration is a call."""
    return fmt(probe, value, per_iter=True).replace("/iter", "/call")


def _own(data: SweepRecord) -> bool:
    """Whether a listed leak is a test's own budgets failing, not a leak the sweep found."""
    return data.get("verdict") == SweepVerdict.OWN_BUDGETS.value


def leak_rows(records: Records) -> list[tuple[str, ...]]:
    """One row per failing probe of each leaking test; a test that failed its own budgets
    says so beside its node id."""
    rows: list[tuple[str, ...]] = []
    for nodeid, leaks in _leaking(records):
        test = f"{nodeid} (own budgets)" if _own(records[nodeid]) else nodeid
        for i, probe in enumerate(leaks["probes"]):
            name = probe["probe"]
            rows.append((
                test if i == 0 else "", name, per_call(name, probe.get("slope")),
                f"[{fmt(name, probe.get('lower'))}, {fmt(name, probe.get('upper'))}]",
                evidence_text(leaks.get("evidence")) if i == 0 else ""))
    return rows


def reason_text(data: SweepRecord) -> str:
    try:
        template = REASONS[NotRepeatable(data.get("reason"))]
    except ValueError:
        return str(data.get("reason"))
    return template.format(call=data.get("failed_call", "?"), detail=data.get("detail", ""))


#: What bounded a test's sweep, in the words of the cut-short line.
BOUND_WORDS = {CutShort.TIMEOUT.value: "half its pytest-timeout timeout",
               CutShort.HEAVY.value: "the time its verdict needed at its pace",
               CutShort.SWEEP_SECONDS.value: "membudget_sweep_seconds"}


def cut_short_text(data: SweepRecord) -> str:
    allowed = float(data.get("allowed") or 0.0)
    bound = BOUND_WORDS.get(str(data.get("bound")), "membudget_sweep_seconds")
    if data.get("calls"):
        needed = float(data.get("needed") or 0.0)
        more = (f"; a verdict at its pace needs about {needed:.3g} s: mark the test, or "
                "raise membudget_sweep_seconds" if needed > allowed else "")
        return (f"no verdict within the sweep's {allowed:.3g} s ({bound}) after "
                f"{data['calls']} repeats; flagged: {', '.join(data.get('flagged', {}))}"
                f"{more}")
    return (f"not screened: one call takes {fmt('iter_time', data.get('first_call'))}, too "
            f"long for the screen within {allowed:.3g} s ({bound})")


def inconclusive_text(data: SweepRecord) -> str:
    held = data.get("held_by")
    if held:
        return ("growth held by a bounded cache still filling: "
                + "; ".join(cache_text(cache) for cache in held))
    return "the full verdict did not settle"


def passed_text(data: SweepRecord) -> str:
    flagged = ", ".join(data.get("flagged", {}))
    look = data.get("second_look")
    if look and not look.get("full_verdict"):
        probe = look.get("probe", "")
        rounds = look.get("rounds_per_call") or [look.get("then_per_call")]
        then = ", ".join(per_call(probe, r) for r in rounds)
        return (f"{flagged}; its growth stopped on a second look "
                f"({per_call(probe, look.get('first_per_call'))} on the screen, "
                f"{then} then)")
    return f"{flagged}; no leak on the full verdict"


def summary_lines(records: Records, mode: SweepMode, verbosity: int) -> list[str]:
    """The end of the session: counts, the ranked leak table, the tests not repeated, the
    tests cut short."""
    if verbosity <= -2 or not records:
        return []
    counts = Counter(str(data.get("verdict")) for data in records.values())
    swept = sum(counts[v.value] for v in (SweepVerdict.CLEAN, SweepVerdict.PASSED,
                                          SweepVerdict.LEAK, SweepVerdict.INCONCLUSIVE,
                                          SweepVerdict.CUT_SHORT))
    flagged = sum(1 for data in records.values() if data.get("flagged"))
    parts = [f"{swept} test(s) repeated in place", f"{flagged} flagged by the screen",
             f"{counts[SweepVerdict.LEAK.value]} found leaking"]
    parts += [f"{counts[v.value]} {v.value}" for v in (
        SweepVerdict.PASSED, SweepVerdict.INCONCLUSIVE, SweepVerdict.CUT_SHORT,
        SweepVerdict.NOT_REPEATABLE, SweepVerdict.NOT_SCREENED, SweepVerdict.OPTED_OUT,
        SweepVerdict.OWN_BUDGETS) if counts[v.value]]
    lines = [f"membudget sweep ({mode.value}): " + ", ".join(parts)]
    unseen = not_looked_at(records)
    if unseen:
        lines.append("not looked at: " + "; ".join(
            f"{verdict} ({', '.join(f'{n} {reason}' for reason, n in reasons.items())})"
            for verdict, reasons in unseen.items()))
    rows = leak_rows(records)
    if rows:
        lines += ["", leak_title(records, mode),
                  *("  " + line for line in table(rows, LEAK_HEADER))]
    lists = (
        (SweepVerdict.NOT_REPEATABLE, "not repeatable (the first outcome stands)", reason_text),
        (SweepVerdict.CUT_SHORT, "cut short by the sweep's time", cut_short_text),
        (SweepVerdict.INCONCLUSIVE, "inconclusive", inconclusive_text),
    )
    for verdict, title, text in lists:
        entries = [(n, d) for n, d in records.items() if d.get("verdict") == verdict.value]
        if entries and (verbosity >= 0 or verdict is not SweepVerdict.NOT_REPEATABLE):
            lines += ["", f"{title}:", *(f"  {n}: {text(d)}" for n, d in entries)]
    if verbosity > 0:
        passed = [n for n, d in records.items() if d.get("verdict") == SweepVerdict.PASSED.value]
        if passed:
            lines += ["", "flagged by the screen, then clean:",
                      *(f"  {n}: {passed_text(records[n])}" for n in passed)]
    return lines


def leak_title(records: Records, mode: SweepMode) -> str:
    """The line above the leak table: how many tests it lists, and what became of them. The
    sweep's own finds fail only in ``fail`` mode; a test's own budgets fail it in either."""
    leaking = [nodeid for nodeid, _ in _leaking(records)]
    own = sum(1 for nodeid in leaking if _own(records[nodeid]))
    found = len(leaking) - own
    fates = []
    if found:
        fates.append(f"{found} found by the sweep, "
                     + ("failed" if mode is SweepMode.FAIL else "reported only (not failed)"))
    if own:
        fates.append(f"{own} failed on {'its' if own == 1 else 'their'} own budgets")
    tests = "test" if len(leaking) == 1 else "tests"
    return (f"{len(leaking)} leaking {tests}, ranked by growth per call, one row per failing "
            f"probe: {'; '.join(fates)}")


def not_looked_at(records: Records) -> dict[str, dict[str, int]]:
    """The tests the sweep did not screen or could not repeat, counted by reason."""
    found: dict[str, dict[str, int]] = {}
    for data in records.values():
        verdict = str(data.get("verdict"))
        if verdict in (SweepVerdict.NOT_SCREENED.value, SweepVerdict.NOT_REPEATABLE.value):
            reasons = found.setdefault(verdict, {})
            reason = str(data.get("reason"))
            reasons[reason] = reasons.get(reason, 0) + 1
    return {verdict: dict(sorted(reasons.items(), key=lambda e: (-e[1], e[0])))
            for verdict, reasons in sorted(found.items())}


def failure_text(nodeid: str, result: MembudgetResult, confidence: float) -> str:
    """The failure of a test the sweep found leaking: the usual message, and how to act."""
    return (f"{failure_message(nodeid, result, confidence)}\n\n"
            "membudget sweep: this test's body was repeated in place and kept growing. "
            "--membudget-sweep=report lists leaks without failing; "
            "@pytest.mark.no_membudget_sweep exempts a test.")


def _finite(value: float | None) -> float | None:
    return finite_or_none(value) if isinstance(value, float) else value


def _finite_probe(probe: LeakProbe) -> LeakProbe:
    return {"probe": probe["probe"], "unit": probe["unit"], "slope": _finite(probe["slope"]),
            "lower": _finite(probe["lower"]), "upper": _finite(probe["upper"])}


def sweep_document(records: Records, mode: SweepMode) -> SweepDocument:
    """The JSON report's ``sweep`` section: the same table and lists as the terminal."""
    leaks: list[LeakEntry] = [
        {"test": nodeid, "bytes_per_call": _finite(leaks.get("bytes_per_call")),
         "probes": [_finite_probe(p) for p in leaks["probes"]],
         "evidence": leaks.get("evidence"), "evidence_text": evidence_text(
             leaks.get("evidence"))}
        for nodeid, leaks in _leaking(records)]
    by_verdict: dict[str, list[ListedRecord]] = {}
    for nodeid, data in records.items():
        by_verdict.setdefault(str(data.get("verdict")), []).append({"test": nodeid, **data})
    seconds: dict[str, float] = {"sweep": 0.0, "screen": 0.0, "first_calls": 0.0}
    for data in records.values():
        seconds["sweep"] += float(data.get("seconds") or 0.0)
        seconds["screen"] += float(data.get("screen_seconds") or 0.0)
        seconds["first_calls"] += float(data.get("first_call") or 0.0)
    seconds["full_verdicts"] = seconds["sweep"] - seconds["screen"]
    return {
        "mode": mode.value,
        "counts": dict(Counter(str(d.get("verdict")) for d in records.values())),
        "seconds": {key: round(value, 3) for key, value in seconds.items()},
        "leaks": leaks,
        "not_repeatable": [{**entry, "reason_text": reason_text(entry)} for entry in
                           by_verdict.get(SweepVerdict.NOT_REPEATABLE.value, [])],
        "not_screened": by_verdict.get(SweepVerdict.NOT_SCREENED.value, []),
        "not_looked_at": not_looked_at(records),
        "cut_short": by_verdict.get(SweepVerdict.CUT_SHORT.value, []),
        "inconclusive": by_verdict.get(SweepVerdict.INCONCLUSIVE.value, []),
        "flagged": [_flagged(n, d) for n, d in records.items() if d.get("flagged")],
    }


def _flagged(nodeid: str, data: SweepRecord) -> FlaggedEntry:
    entry: FlaggedEntry = {"test": nodeid, "verdict": data.get("verdict"),
                           "flagged": data.get("flagged")}
    look = data.get("second_look")
    if look:
        entry["second_look"] = look
    return entry
