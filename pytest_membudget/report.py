"""Text for failures and summaries. Reads verdicts and results; decides nothing."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_membudget.catalog import PROBES
from pytest_membudget.vocabulary import (
    BudgetKind,
    ProbeKind,
    ProbeVerdict,
    Remedy,
    StopReason,
)

if TYPE_CHECKING:
    from pytest_membudget.results import BudgetOutcome, MembudgetResult, ProbeResult

_BINARY: tuple[tuple[str, float], ...] = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))
_TIME = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
SPARKS = "▁▂▃▄▅▆▇█"
STOPPED = {
    StopReason.CLEAR: "auto: stopped when the verdict was clear",
    StopReason.CAP: "auto: reached the iteration or time cap",
    StopReason.FIXED: "fixed count",
    StopReason.RUNNING: "cut short",
    StopReason.DISABLED: "measurement disabled",
}


def stopped_text(stopped: object) -> str:
    """Why a run stopped, for people (``stopped`` as in a result or its dict)."""
    try:
        return STOPPED[StopReason(stopped)]
    except ValueError:
        return str(stopped)


def _kind(probe: str) -> ProbeKind:
    return PROBES[probe].kind if probe in PROBES else ProbeKind.COUNT


def unit_scale(probe: str, magnitude: float) -> tuple[float, str]:
    """The unit a probe's figure of this size is shown in, and its size in the probe's base
    unit: (1024.0, 'KiB'), (1e-3, 'ms'), (1.0, 'threads')."""
    kind = _kind(probe)
    if kind is ProbeKind.BYTES:
        return next(((scale, unit) for unit, scale in _BINARY if magnitude >= scale), (1.0, "B"))
    if kind is ProbeKind.SECONDS:
        return next(((scale, unit) for unit, scale in _TIME if magnitude >= scale), (1e-9, "ns"))
    return 1.0, PROBES[probe].unit if probe in PROBES else ""


def fmt(probe: str, value: float | None, *, per_iter: bool = False) -> str:
    """A probe's figure in readable units: '1.5 KiB/iter', '3 threads', '2.1 ms'."""
    suffix = "/iter" if per_iter else ""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return ("-" if value < 0 else "") + "inf" + suffix
    scale, unit = unit_scale(probe, abs(value))
    if _kind(probe) is not ProbeKind.COUNT:
        return f"{value / scale:.3g} {unit}{suffix}"
    if not per_iter and value == int(value) and abs(value) >= 1000:
        # Whole counts in full: 43,102 -> 43,152 objects, not 4.31e+04 -> 4.31e+04.
        return f"{value:,.0f} {unit}".rstrip()
    return f"{value:.3g} {unit}{suffix}".rstrip()


def sparkline(values: Sequence[float], width: int = 40) -> str:
    """A compact text picture of a series: each character is the mean of a slice."""
    n = len(values)
    if n == 0:
        return ""
    width = min(width, n)
    edges = [round(i * n / width) for i in range(width + 1)]
    points = [sum(values[a:b]) / max(b - a, 1) for a, b in itertools.pairwise(edges)]
    low, high = min(points), max(points)
    if high - low <= 0:
        return SPARKS[0] * width
    scale = (len(SPARKS) - 1) / (high - low)
    return "".join(SPARKS[int((p - low) * scale)] for p in points)


def describe_outcome(outcome: BudgetOutcome, probe: ProbeResult) -> str:
    """One line saying what was measured against which budget."""
    name, limit = outcome.probe, outcome.limit
    if outcome.kind is BudgetKind.SLOPE:
        lower, upper = probe.ci
        return (
            f"{name} still grows {fmt(name, outcome.measured, per_iter=True)} at the end of "
            f"the run (lower bound {fmt(name, lower, per_iter=True)}, upper "
            f"{fmt(name, upper, per_iter=True)}), "
            f"budget {fmt(name, limit, per_iter=True)}"
        )
    if outcome.kind is BudgetKind.PEAK:
        return f"{name} peaked at {fmt(name, outcome.measured)}, budget {fmt(name, limit)}"
    return f"{name} grew {fmt(name, outcome.measured)} after warm-up, budget {fmt(name, limit)}"


def strict_message(test: str, result: MembudgetResult) -> str:
    """Why --membudget-strict fails a test whose budgets all passed or stayed inconclusive."""
    reasons = inconclusive_reasons(result.to_dict(samples=False))
    return "\n".join([
        f"membudget: {len(reasons)} budget(s) inconclusive in {test} (strict: an inconclusive "
        "budget fails the test)",
        *(f"  - {reason}" for reason in reasons), "", *series_lines(result)])


def failure_reasons(result: MembudgetResult) -> list[str]:
    """One line per exceeded budget."""
    return [describe_outcome(o, result.probes[o.probe]) for o in result.failures]


def failure_message(test: str, result: MembudgetResult, confidence: float) -> str:
    reasons = failure_reasons(result)
    lines = [
        f"membudget: {len(reasons)} budget(s) exceeded in {test}",
        f"  {result.iterations} iterations measured after {result.warmup} warm-up "
        f"({stopped_text(result.stopped)}; {result.seconds:.2f} s); "
        f"bounds are one-sided at {confidence:.0%}",
    ]
    lines += [f"  - {reason}" for reason in reasons]
    lines.append("")
    lines += series_lines(result)
    lines += cuda_pool_lines(result)
    lines += process_lines(result.evidence_data)
    lines += evidence_lines(result.evidence_data)
    return "\n".join(lines)


def window_values(probe: ProbeResult, start: int) -> list[float]:
    """The measured window's samples: those from the result's ``window_start`` on."""
    return [float(v) for v in probe.samples[start:]]


def cuda_pool_lines(result: MembudgetResult) -> list[str]:
    """Per-pool active bytes beside active block counts: the shape of a growth table."""
    rows = []
    for pool in ("small", "large"):
        size = result.probes.get(f"cuda_{pool}_pool")
        blocks = result.probes.get(f"cuda_{pool}_blocks")
        if size is None and blocks is None:
            continue
        row = [f"{pool} pool"]
        for probe in (size, blocks):
            if probe is None:
                row += ["-", "-"]
                continue
            window = window_values(probe, result.window_start)
            start, end = (window[0], window[-1]) if window else (math.nan, math.nan)
            row += [f"{fmt(probe.name, start)} -> {fmt(probe.name, end)}",
                    fmt(probe.name, probe.slope, per_iter=True)]
        rows.append(tuple(row))
    if not rows:
        return []
    header = ("CUDA pool", "active bytes", "slope", "active blocks", "slope")
    return ["", *("  " + line for line in table(rows, header))]


#: Widest command line shown in a process table.
COMMAND_WIDTH = 60
PROCESS_HEADER = ("pid", "process", "first -> last", "slope", "")
_PROCESS_FIGURES = {"uss": "USS", "pss": "PSS"}


def process_lines(evidence: dict[str, Any]) -> list[str]:
    """The process-tree probes' tables: each descendant's first and last figure and its
    slope, most growth first; the processes that ended during the window are marked."""
    lines: list[str] = []
    for probe, found in evidence.get("processes", {}).items():
        figure = _PROCESS_FIGURES.get(found.get("figure", ""))
        if figure:
            title = (f"{probe}: {figure} of each process over the window, most growth "
                     "first")
        else:
            title = (f"{probe}: processes started during the window ({found['started']} "
                     f"started, {found['ended']} ended, {found['alive']} alive at its end)")
        rows = [_process_row(probe, row) for row in found.get("rows", ())]
        if not figure:  # a count: no figure per process, only when each came and went
            rows = [(pid, name, note) for pid, name, _, _, note in rows]
        header = PROCESS_HEADER if figure else (PROCESS_HEADER[0], PROCESS_HEADER[1], "")
        lines += ["", f"  {title}"]
        if not rows:
            lines.append("    (none)")
        lines += ["    " + line for line in table(rows, header)] if rows else []
        notes = []
        if figure and found.get("ended"):
            notes.append(f"{found['ended']} process(es) ended during the window (rows marked "
                         "'ended': their last figure is their last sample)")
        if found.get("not_shown"):
            notes.append(f"{found['not_shown']} more not shown")
        lines += [f"    {note}" for note in notes]
    return lines


def _process_row(probe: str, row: dict[str, Any]) -> tuple[str, ...]:
    name = "this test's process" if row.get("root") else str(row.get("name", ""))
    command = str(row.get("command", ""))
    if row.get("forked"):
        name += " (forked from the test's process)"
    elif command and command != name:
        name = f"{name}: {command}"
    if len(name) > COMMAND_WIDTH:
        name = name[: COMMAND_WIDTH - 3] + "..."
    change = "-"
    if row.get("first") is not None:
        change = f"{fmt(probe, row['first'])} -> {fmt(probe, row['last'])}"
    slope = row.get("slope")
    slope_text = "-" if slope is None else ("+" if slope > 0 else "") + fmt(
        probe, slope, per_iter=True)
    notes = []
    if row.get("started_in_window"):
        notes.append(f"started at iteration {row['first_iteration']}")
    if row.get("ended"):
        notes.append(f"ended after iteration {row['last_iteration']}")
    return (str(row.get("pid", "")), name, change, slope_text, ", ".join(notes))


def series_lines(result: MembudgetResult) -> list[str]:
    lines = []
    for name, probe in result.probes.items():
        if not len(probe.samples):
            continue
        # The window only: warm-up samples are taken without collecting garbage.
        values = window_values(probe, result.window_start)
        if not values:
            continue
        lines.append(
            f"  {name:<10} {sparkline(values)}  {fmt(name, values[0])} -> {fmt(name, values[-1])}"
            f"  peak {fmt(name, probe.peak)}  [{probe.verdict.value}]"
        )
    return lines


def evidence_lines(evidence: dict[str, Any]) -> list[str]:
    if not evidence:
        return []
    if "error" in evidence:
        return ["", f"No evidence: {evidence['error']}."]
    n = evidence.get("iterations", 0)
    lines = ["", f"Evidence from {n} more iterations:"]
    sites = evidence.get("sites")
    if sites is not None:
        if sites:
            lines.append("  top growing allocation sites (tracemalloc):")
            for s in sites:
                lines.append(
                    f"    {_short(s['file'])}:{s['line']}: +{fmt('heap', s['bytes'])} "
                    f"({fmt('heap', s['per_iter'], per_iter=True)}, {s['blocks']} blocks)"
                    + (f"\n        {s['code']}" if s.get("code") else "")
                    + (f"\n      called from {_short(s['via_file'])}:{s['via_line']}: "
                       f"{s.get('via_code', '')}" if s.get("via_file") else "")
                )
        else:
            lines.append(
                "  tracemalloc saw no growing Python allocation: the growth is native memory "
                "(C extensions, malloc, torch's CPU allocator), which tracemalloc cannot see"
            )
    types = evidence.get("types")
    if types:
        lines.append("  top growing object types:")
        lines += [f"    {t['type']}: +{t['count']} ({t['per_iter']}/iter)" for t in types]
    if evidence.get("threads"):
        lines.append("  threads started and still alive:")
        lines += [f"    {t['name']} (target {t['target']}, daemon={t['daemon']})"
                  for t in evidence["threads"]]
    if evidence.get("cuda_blocks"):
        lines.append("  live CUDA blocks allocated in the window (allocator history):")
        lines += [f"    {_short(b['file'])}:{b['line']} in {b['function']}: "
                  f"+{fmt('heap', b['bytes'])} in {b['blocks']} blocks ({b['pool']} pool)"
                  for b in evidence["cuda_blocks"]]
    if evidence.get("fds"):
        lines.append("  descriptors opened and still open:")
        lines += [f"    {fd}" for fd in evidence["fds"]]
    # A rerun with nothing to show (an untraced probe failed; no thread nor descriptor was
    # left open) gets no heading of its own.
    return lines if len(lines) > 2 else []


def _short(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return relative if not relative.startswith("..") else path


def budget_text(probe: str, budgets: dict[str, Any]) -> str:
    """'0 B/iter, peak 2 GiB': a probe's budgets in force, or '-' for none."""
    shown = [fmt(probe, v, per_iter=True) if kind == BudgetKind.SLOPE.value
             else f"{kind} {fmt(probe, v)}" for kind, v in budgets.items() if v is not None]
    return ", ".join(shown) or "-"


def summary_rows(nodeid: str, data: dict[str, Any], *, verbose: bool = False
                 ) -> list[tuple[str, ...]]:
    """Rows of the terminal summary for one test's report dict."""
    rows: list[tuple[str, ...]] = []
    for name, probe in data.get("probes", {}).items():
        lo, hi = probe.get("ci") or [None, None]
        row: tuple[str, ...] = (nodeid, name, fmt(name, probe.get("slope"), per_iter=True),
            f"[{fmt(name, lo)}, {fmt(name, hi)}]", budget_text(name, probe.get("budgets", {})),
            fmt(name, probe.get("peak")), str(data.get("iterations", "")), probe["verdict"])
        if verbose:
            row += (fmt(name, probe.get("growth")), str(data.get("warmup", "")),
                    stopped_text(data.get("stopped")))
        rows.append(row)
    return rows


SUMMARY_HEADER = ("test", "probe", "slope", "bounds/iter", "budget", "peak", "iters", "verdict")
VERBOSE_HEADER = (*SUMMARY_HEADER, "growth", "warm-up", "stopped")


def inconclusive_summary(results: list[tuple[str, dict[str, Any]]]) -> list[str]:
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


def summary_table(results: list[tuple[str, dict[str, Any]]], verbosity: int) -> list[str]:
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


def table(rows: Sequence[Sequence[str]], header: Sequence[str] = SUMMARY_HEADER) -> list[str]:
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)).rstrip()]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()
            for r in rows]
    return out


def _settle_ways(entry: dict[str, Any], data: dict[str, Any]) -> list[str]:
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
        elif remedy == Remedy.EXACT_PROBE:
            exact = [f"{p}=0 for {PROBES[p].sees}" if p in PROBES else p
                     for p in entry.get("exact_probes", ())]
            ways.append("an exact probe beside it: " + " or ".join(exact))
    return ways


def inconclusive_lines(nodeid: str, data: dict[str, Any]) -> list[str]:
    """One line per budget that ended inconclusive: the test, the budget, how the run ended
    and what would settle it."""
    return [f"{nodeid}: {reason}" for reason in inconclusive_reasons(data)]


def inconclusive_reasons(data: dict[str, Any]) -> list[str]:
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


def junit_properties(data: dict[str, Any]) -> list[tuple[str, str]]:
    """Readable per-test properties for JUnit XML (user_properties), one set per probe:
    ``membudget.rss.slope = 198 B/iter [152 B/iter, 220 B/iter]`` and so on."""
    verdicts = [p.get("verdict") for p in data.get("probes", {}).values()]
    overall = (ProbeVerdict.FAIL if not data.get("passed", True) else
               StopReason.DISABLED if data.get("stopped") == StopReason.DISABLED else
               ProbeVerdict.INCONCLUSIVE if ProbeVerdict.INCONCLUSIVE in verdicts
               else ProbeVerdict.PASS).value
    props = [("membudget.verdict", overall),
             ("membudget.iterations", f"{data.get('iterations')} after {data.get('warmup')} "
                                      f"warm-up ({data.get('stopped')})")]
    props += [("membudget.inconclusive", line) for line in inconclusive_reasons(data)]
    for name, probe in data.get("probes", {}).items():
        lo, hi = probe.get("ci") or [None, None]
        props += [
            (f"membudget.{name}.slope", f"{fmt(name, probe.get('slope'), per_iter=True)} "
                                        f"[{fmt(name, lo, per_iter=True)}, "
                                        f"{fmt(name, hi, per_iter=True)}]"),
            (f"membudget.{name}.budget", budget_text(name, probe.get("budgets", {}))),
            (f"membudget.{name}.peak", fmt(name, probe.get("peak"))),
            (f"membudget.{name}.verdict", str(probe.get("verdict"))),
        ]
    return props
