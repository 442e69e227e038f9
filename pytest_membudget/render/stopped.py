"""Text for phases and for a workload stopped at the ceiling: every phase in one table, what
a failing or stopped phase was made of, and why a run was stopped. Reads the plain dicts of
results; decides nothing."""

from __future__ import annotations

from typing import cast

from pytest_membudget.evidence.peak import stacks_lead
from pytest_membudget.evidence.peakrecords import PeakEvidence
from pytest_membudget.measure.records import (
    OutcomeRecord,
    PhaseBudget,
    PhaseFigures,
    PhaseRecord,
    RunawayRecord,
)
from pytest_membudget.render.footprint import (
    KIND_NAMES,
    composition_lines,
    peak_lines,
    rose_text,
    size,
)
from pytest_membudget.render.units import fmt, short_path, table

PHASE_HEADER = ("phase", "calls", "rise", "left at its end", "made of", "budgets", "verdict")


def phase_lines(phases: list[PhaseRecord]) -> list[str]:
    """Every phase of a test in one table: how high each went, what it left, what it was
    made of."""
    if not phases:
        return []
    rows = []
    for phase in phases:
        found = phase.get("composition", {})
        kinds = found.get("kinds", {})
        major = ", ".join(KIND_NAMES.get(kind, kind) for kind in found.get("major", []))
        made_of = major or ("-" if not kinds else "peak missed" if found.get("missed") else
                            KIND_NAMES.get(found.get("dominant") or "", ""))
        rows.append((phase["name"], str(phase.get("calls", 1)), size(phase.get("rise")),
                     size(phase.get("left")), made_of,
                     budgets_text(phase.get("budgets", [])), phase.get("verdict", "")))
    return ["", "  phases (RSS):", *("    " + line for line in table(rows, PHASE_HEADER))]


def budgets_text(budgets: list[PhaseBudget]) -> str:
    """'rss_rise 40 MiB, heap_peak 1 GiB' for a phase's budgets, '-' for none."""
    shown = []
    for budget in budgets:
        value = fmt(budget["probe"], budget["limit"], per_iter=budget["kind"] == "slope")
        shown.append(f"{budget['key']} {value}")
    return ", ".join(shown) or "-"


def runaway_message(test: str, seen: RunawayRecord,
                    evidence: PeakEvidence | None = None) -> str:
    """Why the workload was stopped: the machine (or its cgroup) was running out of memory,
    or its RSS rise passed the ceiling set; with the evidence read at the stop."""
    if seen.get("by") == "machine":
        limit = str(seen.get("room_where", "machine"))
        limit = "the machine" if limit == "machine" else f"its {limit}"
        lines = [
            f"membudget: {test} was stopped before {limit} ran out of memory: "
            f"{size(seen.get('room'))} of {size(seen.get('room_total'))} was left (under the "
            f"reserve of {size(seen.get('reserve'))}), with RSS {size(seen.get('run_rise'))} "
            f"above the run's start after {seen.get('seconds', 0):.2f} s",
            "  a run is stopped before the kernel's OOM killer would act; set ceiling= in the "
            "marker or --membudget-ceiling to stop sooner ('4x' the budget, a size) or "
            "'off'"]
    else:
        multiple = seen.get("multiple")
        why = (f"{multiple:g}x the largest rss or uss rise or peak budget" if multiple else
               "the ceiling set" if seen.get("size") else "the ceiling")
        lines = [
            f"membudget: {test} was stopped: RSS rose {size(seen.get('rise'))} above its "
            f"start ({size(seen.get('rss_start'))} -> {size(seen.get('rss'))}) after "
            f"{seen.get('seconds', 0):.2f} s, past the hard ceiling of "
            f"{size(seen.get('ceiling'))} ({why}; set it with ceiling= in the marker or "
            "--membudget-ceiling: 'machine', the default, stops only before the machine "
            "runs out of memory)"]
    where = seen.get("stopped_at") or {}
    if where:
        lines.append(f"  stopped at {short_path(where['file'])}:{where['line']} in "
                     f"{where['function']}: {where.get('code', '')}")
    if evidence and evidence.get("composition"):
        return "\n".join(lines + peak_lines(evidence))
    rose = seen.get("rose", [])
    if rose:
        lines.append("  RSS rose while these lines ran:")
        for entry in rose[:5]:
            lines += rose_text(entry)
    return "\n".join(lines)


def phase_outcome(phase: PhaseRecord, outcome: OutcomeRecord) -> str:
    """'phase 'solve': rss rose 1.2 GiB above its start (2.1 GiB -> 3.3 GiB), budget 512
    MiB'."""
    probe, kind = outcome["probe"], outcome["kind"]
    figures = phase.get("probes", {}).get(probe, cast("PhaseFigures", {}))
    label = f"phase {phase['name']!r}: {probe}"
    if kind == "rise":
        return (f"{label} rose {fmt(probe, outcome['measured'])} above its start "
                f"({fmt(probe, figures.get('start'))} -> {fmt(probe, figures.get('peak'))}), "
                f"budget {fmt(probe, outcome['limit'])}")
    if kind == "peak":
        return (f"{label} peaked at {fmt(probe, outcome['measured'])}, budget "
                f"{fmt(probe, outcome['limit'])}")
    if kind == "growth":
        return (f"{label} grew {fmt(probe, outcome['measured'])}, budget "
                f"{fmt(probe, outcome['limit'])}")
    return (f"{label} grew {fmt(probe, outcome['measured'], per_iter=True)}, budget "
            f"{fmt(probe, outcome['limit'], per_iter=True)}")


def phases_message(test: str, phases: list[PhaseRecord]) -> str:
    """Why a test with phases failed: each exceeded budget, every phase in one table, and
    for each failing phase what its peak was made of and the lines that ran as it rose."""
    reasons = [phase_outcome(phase, outcome) for phase in phases
               for outcome in phase.get("failures", [])]
    lines = [f"membudget: {len(reasons)} phase budget(s) exceeded in {test}",
             *(f"  - {reason}" for reason in reasons)]
    return "\n".join(lines + phase_lines(phases) + phase_details(phases))


def phase_details(phases: list[PhaseRecord]) -> list[str]:
    """For each phase that failed or was stopped: what its peak was made of, and the lines
    that ran as it rose."""
    lines: list[str] = []
    for phase in phases:
        if phase.get("verdict") not in ("fail", "stopped"):
            continue
        lines += ["", f"  phase {phase['name']!r} at its peak:"]
        if phase.get("composition"):
            lines += composition_lines(phase["composition"], indent="    ")
        if phase.get("threads") and stacks_lead(phase.get("composition") or {}):
            lines.append("    threads' stacks are most of the rise; these lines started "
                         "the threads:")
            for entry in phase["threads"]:
                lines += ["  " + line for line in rose_text(
                    entry, f"started {entry.get('threads', 0)} thread(s)", "started in")]
        if phase.get("rose"):
            lines.append("    RSS rose while these lines ran:")
            for entry in phase["rose"]:
                lines += ["  " + line for line in rose_text(entry)]
    return lines
