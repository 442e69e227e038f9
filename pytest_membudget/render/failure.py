"""Text for a failing test: what exceeded which budget, the series, the evidence. Reads
results; decides nothing."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

from pytest_membudget.evidence.labels import clip
from pytest_membudget.evidence.records import (
    SLIVER,
    AtomsListed,
    Explained,
    GrowthEvidence,
    TaskGroup,
)
from pytest_membudget.evidence.share import FRAGMENTATION_REMEDIES
from pytest_membudget.render.devices import cupy_lines, jax_lines, jax_peak_lines
from pytest_membudget.render.footprint import peak_lines
from pytest_membudget.render.retention import native_lines, path_lines
from pytest_membudget.render.session import inconclusive_reasons, note_reasons
from pytest_membudget.render.units import fmt, short_path, sparkline, stopped_text, table
from pytest_membudget.vocabulary import BudgetKind

if TYPE_CHECKING:
    from pytest_membudget.measure.results import BudgetOutcome, MembudgetResult, ProbeResult
    from pytest_membudget.probes.cuda.history import CudaEvidence
    from pytest_membudget.probes.cuda.snapshot import BlockRow
    from pytest_membudget.probes.proclog import ProcessRow


def describe_outcome(outcome: BudgetOutcome, probe: ProbeResult, warmup: int = 0) -> str:
    """One line saying what was measured against which budget (``warmup``: the calls before
    the measured window, whose end a rise is measured from)."""
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
    if outcome.kind is BudgetKind.RISE:
        text = (f"{name} rose {fmt(name, outcome.measured)} above its start "
                f"({fmt(name, probe.start)} -> peak {fmt(name, probe.peak)}), "
                f"budget {fmt(name, limit)}")
        return text + warmup_text(name, probe, warmup)
    return f"{name} grew {fmt(name, outcome.measured)} after warm-up, budget {fmt(name, limit)}"


def warmup_text(name: str, probe: ProbeResult, warmup: int) -> str:
    """Where a rise is measured from when a warm-up ran, and what the warm-up kept."""
    if not warmup:
        return ""
    kept = probe.start - probe.run_start
    calls = f"{warmup} call{'s' if warmup != 1 else ''}, not measured"
    if not math.isfinite(kept):
        return f"; the start is the end of the warm-up ({calls})"
    moved = (f"which kept {fmt(name, kept)} above the run's first reading" if kept >= 0 else
             f"after which it was {fmt(name, -kept)} below the run's first reading")
    return f"; the start is the end of the warm-up ({calls}, {moved})"


def strict_message(test: str, result: MembudgetResult) -> str:
    """Why --membudget-strict fails a test whose budgets all passed or stayed inconclusive."""
    reasons = inconclusive_reasons(result.to_dict(samples=False))
    return "\n".join([
        f"membudget: {len(reasons)} budget(s) inconclusive in {test} (strict: an inconclusive "
        "budget fails the test)",
        *(f"  - {reason}" for reason in reasons), "", *series_lines(result)])


def failure_reasons(result: MembudgetResult) -> list[str]:
    """One line per exceeded budget."""
    return [describe_outcome(o, result.probes[o.probe], result.warmup)
            for o in result.failures]


def failure_message(test: str, result: MembudgetResult, confidence: float) -> str:
    reasons = failure_reasons(result)
    lines = [
        f"membudget: {len(reasons)} budget(s) exceeded in {test}",
        f"  {result.iterations} iteration{'s' if result.iterations != 1 else ''} measured "
        f"after {result.warmup} warm-up "
        f"({stopped_text(result.stopped)}; {result.seconds:.2f} s); "
        f"bounds are one-sided at {confidence:.0%}",
    ]
    lines += [f"  - {reason}" for reason in reasons]
    lines += [f"  note: {line}" for line in note_reasons(result.notes)]
    lines.append("")
    lines += series_lines(result)
    lines += cuda_pool_lines(result)
    lines += process_lines(result.evidence_data)
    lines += evidence_lines(result.evidence_data)
    lines += device_evidence_lines(result.evidence_data)
    lines += peak_lines(result.peak_evidence)
    # The peak evidence carries the CUDA allocator's keys beside the host's.
    lines += cuda_peak_lines(cast("CudaEvidence", result.peak_evidence))
    lines += jax_peak_lines(result.peak_evidence)
    return "\n".join(lines)


def device_evidence_lines(evidence: GrowthEvidence) -> list[str]:
    """What JAX's and CuPy's own books say of the growth, under its own heading when the
    host evidence has none."""
    lines = jax_lines(evidence) + cupy_lines(evidence)
    if not lines:
        return []
    return ["", "Device evidence:", *lines]


def cuda_peak_lines(evidence: CudaEvidence) -> list[str]:
    """The CUDA allocator at its peak: what the reserve was made of, and the blocks live
    at the peak of the window's allocations (allocator trace)."""
    lines: list[str] = []
    reserve = evidence.get("cuda_reserved")
    if reserve:
        lines += ["  CUDA allocator at its peak (each figure at its own peak): "
                  f"{fmt('cuda_reserved', reserve['reserved'])} reserved, "
                  f"{fmt('cuda_allocated', reserve['allocated'])} allocated, "
                  f"{fmt('cuda_reserved', reserve['free_in_split_blocks'])} free in split "
                  f"blocks, {fmt('cuda_reserved', reserve['free_in_whole_blocks'])} free in "
                  "whole blocks" + (f"; {reserve['retries']:.0f} allocation retries"
                                    if reserve.get("retries") else "")]
        if reserve["free_in_split_blocks"] > 0.25 * max(reserve["reserved"], 1.0):
            lines.append("    free memory in split blocks is fragmentation: try "
                         "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    peak = evidence.get("cuda_peak")
    if peak and peak.get("blocks"):
        lines += [f"  blocks live at the peak of the window's allocations "
                  f"({fmt('cuda_allocated', peak['peak'])}, replayed from "
                  f"{peak['events']} events of the allocator's trace):"]
        lines += cuda_block_lines(peak["blocks"])[1:]
    elif evidence.get("cuda_history") and reserve:
        lines.append(f"  no CUDA allocator history: {evidence['cuda_history']}")
    return lines


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


PROCESS_HEADER = ("pid", "process", "first -> last", "slope", "")
_PROCESS_FIGURES = {"uss": "USS", "pss": "PSS"}


def process_lines(evidence: GrowthEvidence) -> list[str]:
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


def _process_row(probe: str, row: ProcessRow) -> tuple[str, ...]:
    name = "this test's process" if row.get("root") else str(row.get("name", ""))
    command = str(row.get("command", ""))
    if row.get("forked"):
        name += " (forked from the test's process)"
    elif command and command != name:
        name = f"{name}: {command}"
    name = clip(name)
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


def evidence_lines(evidence: GrowthEvidence) -> list[str]:
    if not evidence:
        return []
    if "error" in evidence:
        return ["", f"No evidence: {evidence['error']}."]
    if "same_as" in evidence:
        return ["", f"Evidence: as for {evidence['same_as']}, the same test function (the "
                "sweep gathers evidence for the first leak of each function)."]
    n = evidence.get("iterations", 0)
    lines = ["", f"Evidence from {n} more iterations:"]
    sites = evidence.get("sites")
    if sites is not None:
        if sites:
            lines.append("  top growing allocation sites (tracemalloc):")
            for s in sites:
                lines.append(
                    f"    {short_path(s['file'])}:{s['line']}: +{fmt('heap', s['bytes'])} "
                    f"({fmt('heap', s['per_iter'], per_iter=True)}, {s['blocks']} blocks)"
                    + (f"\n        {s['code']}" if s.get("code") else "")
                    + (f"\n      called from {short_path(s['via_file'])}:{s['via_line']}: "
                       f"{s.get('via_code', '')}" if s.get("via_file") else "")
                )
        else:
            lines.append(
                "  tracemalloc saw no growing Python allocation: the growth is native memory "
                "(C extensions, malloc, torch's CPU allocator), which tracemalloc cannot see"
            )
    if evidence.get("explained"):
        lines.append(explained_line(evidence["explained"]))
    if "native" in evidence:
        lines += native_lines(evidence["native"])
    types = evidence.get("types")
    if types:
        lines.append("  top growing object types:")
        lines += [f"    {t['type']}: +{t['count']} ({t['per_iter']}/iter)" for t in types]
    if evidence.get("atoms_listed"):
        lines.append(atoms_line(evidence["atoms_listed"]))
    lines += path_lines(evidence.get("paths") or [])
    if evidence.get("threads"):
        lines.append("  threads started and still alive:")
        lines += [f"    {t['name']} (target {t['target']}, daemon={t['daemon']})"
                  for t in evidence["threads"]]
    if "tasks" in evidence:
        lines += task_lines(evidence["tasks"])
    if evidence.get("cuda_blocks"):
        lines += cuda_block_lines(evidence["cuda_blocks"])
    elif "cuda_blocks" in evidence:
        lines.append("  allocator history: no block allocated in the window is still live")
    if evidence.get("cuda_history"):
        lines.append(f"  no CUDA allocator history: {evidence['cuda_history']}")
    if evidence.get("fds"):
        lines.append("  descriptors opened and still open:")
        lines += [f"    {fd}" for fd in evidence["fds"]]
    # A rerun with nothing to show (an untraced probe failed; no thread nor descriptor was
    # left open) gets no heading of its own.
    return lines if len(lines) > 2 else []


def _share(part: float, whole: float) -> str:
    """``part``'s share of ``whole``; a part over it by at most a SLIVER reads as all of it
    (the two slopes come from different runs: the window, and the evidence's rerun)."""
    share = part / whole
    return f"{min(share, 1.0):.0%}" if share <= 1 + SLIVER else "more than all of it"


def explained_line(found: Explained) -> str:
    """What share of the failing slope the traced allocations account for, and what the rest
    is (evidence/share.py)."""
    probe, slope, traced = found["probe"], found["slope"], found["traced"]
    line = (f"  explained: traced Python allocations account for "
            f"{fmt('heap', traced, per_iter=True)} of {probe}'s "
            f"{fmt(probe, slope, per_iter=True)} ({_share(traced, slope)})")
    rest = found.get("rest")
    native = found.get("native")
    if rest == "native" and native is not None:
        return (line + f"; the rest is native memory held in use: malloc's bytes in use grow "
                f"{fmt('malloc', native, per_iter=True)} ({_share(native, slope)})")
    if rest == "native":
        return line + "; the rest is native memory in use, which tracemalloc cannot see"
    if rest == "free" and native is not None:
        return (line + f"; malloc's bytes in use grow only "
                f"{fmt('malloc', native, per_iter=True)} ({_share(max(native, 0.0), slope)}): "
                "the rest is memory outside malloc's bytes in use, either free memory the "
                f"allocator keeps (fragmentation: try {FRAGMENTATION_REMEDIES}) or memory "
                "mapped outside malloc (mmap, another allocator)")
    if rest == "unknown":
        return (line + "; the rest is native: budget malloc=0 beside it (glibc) to tell "
                "memory held in use from memory the allocator keeps free")
    return line


def cuda_block_lines(rows: list[BlockRow]) -> list[str]:
    """The live CUDA blocks of the window: by the line that allocated them, the user's line
    beneath a library's, and those torch recorded no Python frame for, as such."""
    lines = ["  live CUDA blocks allocated in the window (allocator history):"]
    unframed = False
    for b in rows:
        size = f"+{fmt('heap', b['bytes'])} in {b['blocks']} blocks"
        file = b.get("file")
        if file:
            where = f"{short_path(file)}:{b['line']} in {b['function']}"
            if b.get("origin") == "backward":
                where += ", in its backward (forward_frames)"
            lines.append(f"    {where}: {size} ({b['pool']} pool)")
        else:
            unframed = True
            where = ("in backward (the autograd engine's thread), no Python frame"
                     if b.get("origin") == "backward" else "no Python frame")
            lines.append(f"    {where}: {size} ({b['pool']} pool, stream {b.get('stream')})")
        if b.get("via_file"):
            lines.append(f"      called from {short_path(b['via_file'])}:{b['via_line']} in "
                         f"{b.get('via_function', '')}")
    if unframed:
        lines.append("    (torch records no Python frame for an allocation made in backward, "
                     "on the autograd engine's thread, nor on any thread without Python)")
    return lines


def task_lines(tasks: list[TaskGroup]) -> list[str]:
    """The asyncio tasks started during the evidence rerun and still pending."""
    if not tasks:
        return ["  no asyncio task started during these iterations is still pending"]
    lines = ["  asyncio tasks started and still pending:"]
    for t in tasks:
        where = [f"{short_path(file)}:{line}" if file is not None else "?"
                 for file, line in ((t.get("defined_file"), t.get("defined_line")),
                                    (t.get("waiting_file"), t.get("waiting_line")),
                                    (t.get("created_file"), t.get("created_line")))]
        lines.append(f"    {t['count']} x {t['coroutine']} ({t['per_iter']}/iter), defined at "
                     f"{where[0]}, waiting at {where[1]}, created at {where[2]}"
                     + (f" in {t['created_function']}" if t.get("created_function") else ""))
        if t.get("created_code"):
            lines.append(f"        {t['created_code']}")
    return lines


def atoms_line(listed: AtomsListed) -> str:
    """The census counted the atoms of the rerun's new containers only (a large heap)."""
    return ("    (strings, bytes and other objects the collector does not track were counted "
            "in the containers the rerun made only: listing the whole heap's took "
            f"{listed.get('whole_seconds', 0):.2f} s; growth into older containers shows in "
            "the lines above, not here)")
