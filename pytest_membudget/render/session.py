"""The session's text: the summary table and the lines for inconclusive budgets. Works on the
results' records (measure/records.py), as they arrive from every xdist worker."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from pytest_membudget.catalog import PROBES
from pytest_membudget.evidence.records import CacheInfo
from pytest_membudget.judge.policy import CONFIRM_GROWTH, SHORTEST_SECONDS
from pytest_membudget.measure.records import (
    NoteRecord,
    PhaseFigures,
    PhaseRecord,
    ProbeRecord,
    ResultRecord,
    UnsettledRecord,
)
from pytest_membudget.render.units import (
    bounds_text,
    budget_text,
    fmt,
    round_up,
    slope_text,
    stopped_text,
    table,
)
from pytest_membudget.vocabulary import BudgetKind, ProbeVerdict, Remedy


def summary_rows(nodeid: str, data: ResultRecord, *, verbose: bool = False
                 ) -> list[tuple[str, ...]]:
    """Rows of the terminal summary for one test's report dict."""
    rows: list[tuple[str, ...]] = []
    for name, probe in data.get("probes", {}).items():
        one_shot = footprint_only(probe)
        row: tuple[str, ...] = (
            nodeid, name, "-" if one_shot else fmt(name, probe.get("slope"), per_iter=True),
            "-" if one_shot else bounds_text(name, probe.get("ci")),
            budget_text(name, probe.get("budgets", {})), peak_text(name, probe),
            str(data.get("iterations", "")), probe["verdict"])
        if verbose:
            row += (fmt(name, probe.get("growth")), str(data.get("warmup", "")),
                    stopped_text(data.get("stopped")))
        rows.append(row)
    for phase in data.get("phases", []):
        rows += phase_rows(nodeid, phase, verbose=verbose)
    return rows


def phase_rows(nodeid: str, phase: PhaseRecord, *, verbose: bool = False
               ) -> list[tuple[str, ...]]:
    """A phase's rows: RSS, which every phase reads, and each other probe it budgets, each
    with its own budgets and figures."""
    budgets = phase.get("budgets", [])
    names = ["rss", *dict.fromkeys(b["probe"] for b in budgets if b["probe"] != "rss")]
    rows: list[tuple[str, ...]] = []
    for name in names:
        figures = phase.get("probes", {}).get(name, cast("PhaseFigures", {}))
        rise = phase.get("rise") if name == "rss" else figures.get("rise")
        row: tuple[str, ...] = (
            nodeid, f"{name} [{phase['name']}]", "-", "-",
            ", ".join(f"{b['kind']} {fmt(name, b['limit'])}"
                      for b in budgets if b["probe"] == name) or "-",
            f"{fmt(name, figures.get('peak'))} (+{fmt(name, rise)})",
            str(phase.get("calls", 1)), phase.get("verdict", ""))
        if verbose:
            row += (fmt(name, phase.get("left")) if name == "rss" else "-", "0", "phase")
        rows.append(row)
    return rows


def footprint_only(probe: ProbeRecord) -> bool:
    """Whether every budget of a probe is a peak or a rise: its row shows how high it went,
    not a slope (one call has none)."""
    kinds = [kind for kind, limit in probe.get("budgets", {}).items() if limit is not None]
    return bool(kinds) and all(BudgetKind(kind).footprint for kind in kinds)


def peak_text(name: str, probe: ProbeRecord) -> str:
    """The peak, with its rise above the run's start where a rise budget asks for it:
    ``216 MiB (+164 MiB)``."""
    peak = fmt(name, probe.get("peak"))
    rise = probe.get("rise")
    if probe.get("budgets", {}).get(BudgetKind.RISE.value) is None or rise is None:
        return peak
    return f"{peak} (+{fmt(name, rise)})"


SUMMARY_HEADER = ("test", "probe", "slope", "bounds/iter", "budget", "peak", "iters", "verdict")
VERBOSE_HEADER = (*SUMMARY_HEADER, "growth", "warm-up", "stopped")


def inconclusive_summary(results: Sequence[tuple[str, ResultRecord]]) -> list[str]:
    """The lines below the table for every budget that ended inconclusive: never silent."""
    lines, lenient = [], 0
    for nodeid, data in results:
        strict = bool(data.get("settings", {}).get("strict"))
        for line in inconclusive_lines(nodeid, data):
            lines.append(f"  {line}" + (" [strict: the test failed]" if strict else ""))
            lenient += not strict
    if not lines:
        return []
    head = f"membudget: {len(lines)} budget(s) inconclusive"
    if lenient:
        head += (f" ({lenient} in tests that passed all the same; --membudget-strict fails "
                 "them)")
    return [head + ":", *lines]


def summary_table(results: Sequence[tuple[str, ResultRecord]], verbosity: int) -> list[str]:
    """The terminal summary: every budgeted test at the default verbosity, more columns at
    -v, only tests whose budgets did not pass at -q, nothing at -qq."""
    if verbosity <= -2:
        return []
    rows: list[tuple[str, ...]] = []
    for nodeid, data in results:
        verdicts = {p.get("verdict") for p in data.get("probes", {}).values()}
        quiet = {ProbeVerdict.PASS.value, ProbeVerdict.UNJUDGED.value}
        if verbosity < 0 and data.get("passed", True) and verdicts <= quiet:
            continue
        for i, row in enumerate(summary_rows(nodeid, data, verbose=verbosity > 0)):
            rows.append(row if i == 0 else ("", *row[1:]))  # the test's name once
    return table(rows, VERBOSE_HEADER if verbosity > 0 else SUMMARY_HEADER) if rows else []


def _settle_ways(entry: UnsettledRecord, data: ResultRecord) -> list[str]:
    settings = data.get("settings", {})
    iterations = data.get("iterations", 0)
    ways = []
    for remedy in entry.get("remedies", ()):
        if remedy == Remedy.MAX_SECONDS:
            ways.append(f"more time (max_seconds={2 * float(settings.get('max_seconds', 60)):g}; "
                        f"it ran out of its {float(settings.get('max_seconds', 60)):g} s)")
        elif remedy == Remedy.MAX_ITERATIONS:
            ways.append(f"a higher max_iterations (it stopped at {iterations}), or "
                        "max_iterations='none' to let max_seconds decide")
        elif remedy == Remedy.ITERATIONS:
            ways.append(f"a longer run (iterations={2 * int(iterations)}) or iterations='auto'")
        elif remedy == Remedy.CACHE_FILLS:
            ways.append(_fill_way(data))
        elif remedy == Remedy.EXACT_PROBE:
            exact = [f"{p}=0 for {PROBES[p].sees}" if p in PROBES else p
                     for p in entry.get("exact_probes", ())]
            ways.append("an exact probe beside it: " + " or ".join(exact))
    return ways


def cache_text(cache: CacheInfo) -> str:
    """``pkg.text_metrics (functools.lru_cache): 1616 of 4096 entries, +8/call, full in
    about 310 calls``."""
    text = (f"{cache.get('name')} ({cache.get('kind')}): {cache.get('currsize')} of "
            f"{cache.get('maxsize')} entries")
    if cache.get("per_call"):
        text += f", +{cache['per_call']:g}/call"
    if cache.get("calls_to_full"):
        text += f", full in about {cache['calls_to_full']} calls"
    return text


def _fill_way(data: ResultRecord) -> str:
    """A warm-up that lets the bounded caches that hold the growth fill before the window
    opens (the calls run so far and those the caches still need), and the time it takes at
    the pace of the run that ended, with the window after it."""
    caches = data.get("evidence", {}).get("bounded", ())
    calls = max((int(c.get("calls_to_full") or 0) for c in caches), default=0)
    measured, warmup = int(data.get("iterations", 0)), int(data.get("warmup", 0))
    ran = measured + warmup
    pace = float(data.get("seconds", 0.0)) / max(ran, 1)
    needed = int(round_up(max(ran + calls, 1)))
    # No shorter than a heavy step's verdict may take: its shortest, confirmed.
    seconds = round_up(max(2 * pace * (needed + measured), SHORTEST_SECONDS * CONFIRM_GROWTH))
    return ("a warm-up that lets the bounded cache holding the growth fill ("
            + "; ".join(cache_text(c) for c in caches)
            + f"): warmup={needed}, with max_seconds={seconds:g} or more")


def inconclusive_lines(nodeid: str, data: ResultRecord) -> list[str]:
    """One line per budget that ended inconclusive: the test, the budget, how the run ended
    and what would settle it."""
    return [f"{nodeid}: {reason}" for reason in inconclusive_reasons(data)]


def inconclusive_reasons(data: ResultRecord) -> list[str]:
    """:func:`inconclusive_lines` without the test's name."""
    lines = []
    for entry in data.get("inconclusive", ()):
        probe, kind = str(entry.get("probe")), BudgetKind(entry.get("kind", "slope"))
        per_iter = kind is BudgetKind.SLOPE
        budget = f"{probe}{kind.suffix}={fmt(probe, entry.get('limit'), per_iter=per_iter)}"
        measured = fmt(probe, entry.get("measured"), per_iter=per_iter)
        line = (f"{budget} inconclusive (measured {measured}) after "
                f"{data.get('iterations')} iterations, {stopped_text(data.get('stopped'))}")
        ways = _settle_ways(entry, data)
        lines.append(line + ("; settle it with " + "; or ".join(ways) if ways else ""))
    return lines


def note_reasons(notes: Iterable[NoteRecord]) -> list[str]:
    """One line per note of a result (growth the budgets could not see): a note, never a
    failure."""
    lines = []
    for note in notes:
        if note.get("kind") != "native_growth":
            continue
        probe = str(note.get("probe"))
        budgeted = ", ".join(note.get("budgeted", ()))
        lines.append(
            f"{probe} grew {slope_text(probe, note.get('slope'), note.get('ci'))}: native "
            f"memory, outside what {budgeted} measures; "
            f"{' or '.join(note.get('would_judge', ()))} would judge it")
    return lines


def notes_summary(results: Sequence[tuple[str, ResultRecord]]) -> list[str]:
    """The lines below the table for every test with a note."""
    lines = [f"  {nodeid}: {line}" for nodeid, data in results
             for line in note_reasons(data.get("notes", ()))]
    return [f"membudget: {len(lines)} note(s):", *lines] if lines else []
