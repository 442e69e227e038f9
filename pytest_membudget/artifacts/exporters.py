"""A report's or baseline's figures for the dashboards teams already run: the Bencher Metric
Format (BMF) and github-action-benchmark's ``customSmallerIsBetter`` entries.

Pure: a document (as :func:`pytest_membudget.artifacts.files.read_document` returns it) goes in,
JSON-ready data comes out, with the tests and probes that were left out and why. Figures are
written in each probe's base unit (bytes, counts, seconds), never scaled, so that every run of
a test lands on the same axis; ``docs/dashboards.md`` says which measure holds what.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypedDict

from pytest_membudget.artifacts.document import Document
from pytest_membudget.judge.numbers import finite_or_none
from pytest_membudget.measure.records import ProbeRecord, ResultRecord
from pytest_membudget.render.units import budget_text, fmt, stopped_text
from pytest_membudget.vocabulary import StopReason

BENCHER = "bencher"
GITHUB_ACTION_BENCHMARK = "github-action-benchmark"
FORMATS = (BENCHER, GITHUB_ACTION_BENCHMARK)

#: Longest benchmark name Bencher takes (its BMF reference: "name (max length 1024)").
BENCHER_NAME_LIMIT = 1024


class _Metric(TypedDict):
    value: float


class Metric(_Metric, total=False):
    """A BMF measure's figures: the slope and its bounds where established, or the peak."""

    lower_value: float
    upper_value: float


#: BMF: each benchmark's (test's) measures by name.
BencherData = dict[str, dict[str, Metric]]


class _BenchmarkEntry(TypedDict):
    name: str
    unit: str
    value: float


class BenchmarkEntry(_BenchmarkEntry, total=False):
    """A ``customSmallerIsBetter`` entry: the slope, its bounds (``range``), and the verdict,
    budget and peak in words (``extra``)."""

    range: str
    extra: str


@dataclass
class Export:
    """What a conversion made: the data to write, and what it could not include."""

    data: BencherData | list[BenchmarkEntry]
    #: (test, why) for each test or probe left out, for the user to read.
    left_out: list[tuple[str, str]] = field(default_factory=list)
    #: How many figures were written (slopes and peaks).
    figures: int = 0


@dataclass(frozen=True)
class Figures:
    """One probe of one test, as exported."""

    test: str
    probe: str
    unit: str
    slope: float | None
    lower: float | None
    upper: float | None
    peak: float | None
    data: ResultRecord
    probe_data: ProbeRecord


def export(document: Document, fmt_name: str) -> Export:
    """``document``'s figures in the format ``fmt_name`` (one of :data:`FORMATS`)."""
    if fmt_name == BENCHER:
        return bencher(document)
    if fmt_name == GITHUB_ACTION_BENCHMARK:
        return github_action_benchmark(document)
    raise ValueError(f"unknown export format {fmt_name!r}; choose one of {', '.join(FORMATS)}")


def figures(document: Document, left_out: list[tuple[str, str]]) -> Iterator[Figures]:
    """Every exportable probe of every test; what is skipped is added to ``left_out``.

    A run that did not finish (the workload raised, the loop was left) or was not measured
    (--membudget-disable) has no figures worth a point on a chart: it is left out. Failed and
    inconclusive runs are exported: their slope and bounds are what they measured."""
    for test, data in document.get("tests", {}).items():
        if data.get("stopped") == StopReason.DISABLED.value:
            left_out.append((test, "measuring was disabled (--membudget-disable)"))
            continue
        if data.get("complete") is False or data.get("stopped") == StopReason.RUNNING.value:
            left_out.append((test, f"its run did not finish ({stopped_text(data.get('stopped'))}"
                                   "): the workload raised or the loop was left, so its "
                                   "figures are partial"))
            continue
        for probe, probe_data in data.get("probes", {}).items():
            lower, upper = [*(probe_data.get("ci") or []), None, None][:2]
            found = Figures(test, probe, str(probe_data.get("unit", "")),
                            finite_or_none(probe_data.get("slope")), finite_or_none(lower),
                            finite_or_none(upper), finite_or_none(probe_data.get("peak")),
                            data, probe_data)
            if found.slope is None:
                left_out.append((test, f"{probe} has no slope (too few samples were judged)"))
            yield found


def _ordered(value: float, lower: float | None,
             upper: float | None) -> tuple[float | None, float | None]:
    """Bounds that bracket ``value``; a bound on the wrong side is not a bound of it."""
    return (lower if lower is not None and lower <= value else None,
            upper if upper is not None and upper >= value else None)


def bencher_name(test: str) -> str:
    """The benchmark's name: the test's node id, shortened with a digest of the whole id
    when it is longer than Bencher takes (long parametrize ids)."""
    if len(test) <= BENCHER_NAME_LIMIT:
        return test
    digest = hashlib.sha1(test.encode()).hexdigest()[:12]
    return f"{test[: BENCHER_NAME_LIMIT - len(digest) - 1]}~{digest}"


def slope_measure(probe: str, unit: str) -> str:
    """The BMF measure of a probe's slope, its unit in the name: ``rss slope (B/iter)``."""
    return f"{probe} slope ({unit}/iter)"


def peak_measure(probe: str, unit: str) -> str:
    return f"{probe} peak ({unit})"


def bencher(document: Document) -> Export:
    """BMF JSON: one benchmark per test; per probe a slope measure (``value`` the slope,
    ``lower_value`` and ``upper_value`` its bounds where they were established) and a peak
    measure."""
    data: BencherData = {}
    result = Export(data)
    for f in figures(document, result.left_out):
        benchmark = data.setdefault(bencher_name(f.test), {})
        if f.slope is not None:
            metric: Metric = {"value": f.slope}
            lower, upper = _ordered(f.slope, f.lower, f.upper)
            if lower is not None:
                metric["lower_value"] = lower
            if upper is not None:
                metric["upper_value"] = upper
            benchmark[slope_measure(f.probe, f.unit)] = metric
            result.figures += 1
        if f.peak is not None:
            benchmark[peak_measure(f.probe, f.unit)] = {"value": f.peak}
            result.figures += 1
    result.data = {name: measures for name, measures in data.items() if measures}
    return result


def interval_text(lower: float | None, upper: float | None) -> str:
    """``[176, 198]``; an end that could not be established is open: ``(-inf, 198]``."""
    left = f"[{lower:.6g}" if lower is not None else "(-inf"
    right = f"{upper:.6g}]" if upper is not None else "+inf)"
    return f"{left}, {right}"


def _extra(f: Figures) -> str:
    data, probe = f.data, f.probe_data
    confidence = data.get("settings", {}).get("confidence")
    lines = [
        f"verdict: {probe.get('verdict', '?')}"
        + (" (test over budget)" if data.get("passed") is False else ""),
        f"budget: {budget_text(f.probe, probe.get('budgets', {}))}",
        f"slope: {fmt(f.probe, f.slope, per_iter=True)}",
        f"peak: {fmt(f.probe, f.peak)}",
        f"{data.get('iterations', '?')} iterations after {data.get('warmup', '?')} warm-up "
        f"({stopped_text(data.get('stopped'))})",
    ]
    if isinstance(confidence, (int, float)):
        lines.append(f"bounds one-sided at {confidence:.0%}")
    return "\n".join(lines)


def entry_name(test: str, probe: str) -> str:
    return f"{test} - {probe} slope"


def github_action_benchmark(document: Document) -> Export:
    """``customSmallerIsBetter`` entries: one per test and probe, the slope as ``value``,
    its bounds in ``range``, the verdict, budget and peak in ``extra``."""
    entries: list[BenchmarkEntry] = []
    result = Export(entries)
    for f in figures(document, result.left_out):
        if f.slope is None:
            continue
        entry: BenchmarkEntry = {"name": entry_name(f.test, f.probe),
                                 "unit": f"{f.unit}/iter", "value": f.slope}
        lower, upper = _ordered(f.slope, f.lower, f.upper)
        if lower is not None or upper is not None:
            entry["range"] = interval_text(lower, upper)
        entry["extra"] = _extra(f)
        entries.append(entry)
        result.figures += 1
    return result
