"""Evidence at the peak: what was alive at a footprint's highest point, by the line that
allocated it, and whether it outlived the call; with what the memory was made of.

A peak is not growth: growth evidence asks what grew between calls, this asks what one call
held at its highest. Its sources:

- the peak watch of the measured run (measure/watch.py): the line running while RSS rose
  (every kind of memory, untraced, at no extra run) and the composition at the highest moment;
- one rerun of the call under tracemalloc (:class:`PeakCensus`): its traces copied at the
  traced peak, as the watch's thread sees it rise, and again when the call returned; the
  difference per line says retained or transient. Tracing costs several microseconds per
  allocation, so the rerun is made only where its estimated cost fits the evidence's time
  (measure/footprint.py): the rise by line then stands alone.
"""

from __future__ import annotations

import math
import time
import tracemalloc
from collections.abc import Generator
from typing import cast

from pytest_membudget.catalog import PROBES
from pytest_membudget.evidence.composition import composition
from pytest_membudget.evidence.peakrecords import (
    CensusSummary,
    Composition,
    MoreLines,
    PeakEvidence,
    PeakLine,
    TracedCall,
    WatchedLine,
)
from pytest_membudget.evidence.records import SLIVER, SMALL_BYTES, SMALL_SHARE
from pytest_membudget.evidence.sites import by_site
from pytest_membudget.frames import STACK_FRAMES, is_library, source_line
from pytest_membudget.probes.reading import MemoryReading
from pytest_membudget.probes.records import TOP

#: The census copies tracemalloc's traces again when its bytes passed its last copy by this
#: factor (each copy of a hundred thousand traces takes about 0.1 s, with the workload
#: waiting): the copy kept is within a third of the peak.
CENSUS_GROWTH = 1.3

class PeakCensus:
    """tracemalloc's traces at the highest traced total the watch's thread saw (``tick`` is
    called from there at every reading), and the seconds those copies took. ``least``: no
    copy below this many traced bytes (a live set that small is not the peak's bulk);
    ``deadline`` (a ``time.perf_counter()`` value): past it, tracing stops where the call is
    (a call of a hundred thousand allocations costs seconds traced) and the census keeps
    what it has; ``copying``: seconds of copies after which it copies no more before the
    call's end (the footprint deadline's ``copies`` share)."""

    def __init__(self, least: float = 0.0, deadline: float = math.inf,
                 copying: float = math.inf) -> None:
        self.least = least
        self.deadline = deadline
        self.copying = copying
        self.best = 0.0
        self.snapshot: tracemalloc.Snapshot | None = None
        self.seconds = 0.0
        self.copies = 0
        #: Whether tracing was stopped at the deadline, and tracemalloc's peak then.
        self.cut = False
        self.cut_peak = 0.0

    def tick(self) -> None:
        if not tracemalloc.is_tracing():
            return
        current, peak = tracemalloc.get_traced_memory()
        if time.perf_counter() > self.deadline:
            self.cut, self.cut_peak = True, float(peak)
            tracemalloc.stop()
            return
        if current <= self.best * CENSUS_GROWTH or current <= max(self.least, 0.0):
            return
        if self.seconds > self.copying and self.least > 0:
            return  # the last word (at the call's end, least 0) is still copied
        began = time.perf_counter()
        snapshot = tracemalloc.take_snapshot()
        self.snapshot, self.best = snapshot, float(current)
        self.copies += 1
        self.seconds += time.perf_counter() - began


def traced_call(iteration: int, census: PeakCensus,
                restart: bool = False) -> Generator[int, None, TracedCall]:
    """One more call of the workload under tracemalloc (STACK_FRAMES deep); the census fills
    in from the watch's thread meanwhile. Returns the lines alive at the traced peak, with
    what was left of each when the call returned, and tracemalloc's own peak over the call
    (exact, whether or not the watch's thread could run when it was reached). ``restart``:
    tracing is on, this plugin's own (a heap budget's, one frame deep), and may be started
    again deeper; a tracer someone else started is used as it is."""
    if restart and tracemalloc.is_tracing():
        tracemalloc.stop()
    own = not tracemalloc.is_tracing()
    if own:
        tracemalloc.start(STACK_FRAMES)
    end = None
    try:
        began = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        yield iteration
        census.deadline = math.inf  # the call is over: no cut from here on
        at_peak_copies = census.copies
        peak = census.cut_peak
        if tracemalloc.is_tracing():
            peak = float(tracemalloc.get_traced_memory()[1])
            census.least = 0.0  # whatever the call held at its end, it is the last word
            census.tick()
            try:
                end = tracemalloc.take_snapshot()
            except RuntimeError:  # the watch's thread cut it at this very moment
                census.cut = True
        else:
            census.cut = True
    finally:
        if own and tracemalloc.is_tracing():
            tracemalloc.stop()
    found: TracedCall = {"traced": max(peak - began, 0.0), "lines": [],
                         "copies": census.copies, "copy_seconds": round(census.seconds, 6)}
    if census.cut:
        found["cut"] = True
    # No copy while the call ran (C code held the GIL throughout, or it stayed under half
    # the rise): the end's copy says nothing of the peak.
    if census.snapshot is None or at_peak_copies == 0:
        census.snapshot = None
        return found
    kinds: dict[str, tuple[bool, bool]] = {}
    at_peak = by_site(census.snapshot, kinds)
    left = by_site(end, kinds) if end is not None else None
    census.snapshot = None
    lines: list[PeakLine] = []
    for site, (size, count, via, _) in at_peak.items():
        kept = (min(left[site][0], size) if site in left else 0) if left is not None else -1
        lines.append(_line(site, size, count, via, kept))
    lines.sort(key=lambda line: line["bytes"], reverse=True)
    found["lines"] = lines
    return found


def _line(site: tuple[str, int], size: int, count: int, via: tuple[str, int] | None,
          kept: int) -> PeakLine:
    line: PeakLine = {"file": site[0], "line": site[1], "bytes": size, "count": count,
                      "retained": max(kept, 0), "source": "traced"}
    if kept >= 0:  # -1: tracing stopped before the call returned, nothing to compare
        line["state"] = state(size, kept)
    if via is not None:
        line["via_file"], line["via_line"] = via
    return line


def state(size: float, kept: float) -> str:
    """retained, transient or partly retained: how much of a line's bytes at the peak was
    still alive when the call returned (all but a SLIVER of them, at most a SLIVER)."""
    if size <= 0 or kept >= (1 - SLIVER) * size:
        return "retained"
    return "transient" if kept <= SLIVER * size else "partly retained"


#: Kinds of memory that hold data: what is left of them when the call returned says whether
#: the peak outlived it (the allocators' free memory and other anonymous pages do not).
HELD = ("python", "native", "file", "stacks")


def call_state(peak: Composition, left: dict[str, float], kept_new: float = 0.0) -> str:
    """retained, transient or partly retained for the call as a whole: how much of the data
    at the peak (HELD kinds) was still there when it returned, or, where more, the bytes of
    the objects it made and kept (``kept_new``: a result that replaced the one before it
    leaves the heap no larger). Lines only the watch saw get it: tracemalloc cannot say it
    line by line for memory it does not trace."""
    at_peak = sum(max(peak["kinds"].get(kind, 0.0), 0.0) for kind in HELD)
    # A reading that missed the peak holds less than the peak did: the measured rise was
    # there at the peak, of whatever kind.
    at_peak = max(at_peak, float(peak.get("missed", 0.0)))
    kept = max(sum(max(left.get(kind, 0.0), 0.0) for kind in HELD), kept_new)
    if at_peak <= 0:
        # The reading held none of them (all of it other anonymous memory, or the
        # allocators' free memory): the rise as a whole against what was left of it.
        at_peak = max(float(peak.get("rise", 0.0)), 0.0)
        kept = sum(max(value, 0.0) for value in left.values())
    return state(at_peak, min(kept, at_peak))


def user_line(line: PeakLine) -> tuple[str, int]:
    """The user's own line of an entry: the caller beneath a library's line, else its own."""
    if line.get("via_file"):
        return line["via_file"], line["via_line"]
    return line["file"], line["line"]


def merge(traced: list[PeakLine], rose: list[WatchedLine],
          untraced: float = math.inf) -> list[PeakLine]:
    """One list by the user's line: the census's entries (exact bytes of what tracemalloc
    saw alive at the peak), and the watch's (how much RSS rose while the line ran: every kind
    of memory, native and mapped too). A line in both shows the larger figure, with both;
    largest first. A line only the watch saw ranks by at most ``untraced``, the part of the
    rise tracemalloc does not account for: pages first touched on a line (np.zeros, then a
    copy into it) belong to the allocation the census found elsewhere."""
    merged: dict[tuple[str, int], PeakLine] = {}
    entry: PeakLine | WatchedLine
    # Memory allocated where no line of the user's code was on the stack (a library's own
    # threads: pandas parses in a pool) was made for the user's line that ran then: the one
    # RSS rose most under, which waited for them.
    context = next((entry for entry in rose if entry.get("file")), None)
    if context is not None:
        traced = [{**entry, "via_file": context["file"], "via_line": context["line"],
                   "in_threads": True}
                  if not entry.get("via_file") and is_library(entry["file"]) else entry
                  for entry in traced]
    # Several library lines under one user line (numpy's ones: empty, then copyto) are one
    # entry, shown with the largest of them (``traced`` comes largest first).
    for entry in traced:
        found = merged.get(user_line(entry))
        if found is None:
            merged[user_line(entry)] = {**entry, "traced_bytes": entry["bytes"]}
            continue
        for field in ("bytes", "count", "retained", "traced_bytes"):
            found[field] += entry["bytes"] if field == "traced_bytes" else entry[field]
        if "state" in found:
            found["state"] = state(found["traced_bytes"], found["retained"])
    for entry in rose:
        if "file" not in entry:
            continue
        where = (entry["file"], entry["line"])
        known = merged.get(where)
        if known is None:
            new = merged[where] = {"file": entry["file"], "line": entry["line"],
                                   "bytes": min(entry["bytes"], untraced),
                                   "rose_bytes": entry["bytes"],
                                   "source": "rose", "function": entry.get("function", "")}
            if entry.get("inner_file"):
                new["inner_file"], new["inner_line"] = entry["inner_file"], entry["inner_line"]
            for key in ("waiting", "other_lines", "waited_file", "waited_line"):
                if entry.get(key):
                    new[key] = entry[key]
            continue
        known["rose_bytes"] = entry["bytes"]
        if entry.get("waited_file"):
            known["waited_file"] = entry["waited_file"]
            known["waited_line"] = entry["waited_line"]
        beyond = min(max(entry["bytes"] - known["traced_bytes"], 0.0), untraced)
        known["bytes"] = known["traced_bytes"] + beyond
    return sorted(merged.values(), key=lambda entry: entry["bytes"], reverse=True)


def shown(lines: list[PeakLine], rise: float,
          top: int = TOP) -> tuple[list[PeakLine], MoreLines]:
    """The first ``top`` lines that hold a part of the rise worth naming (SMALL_SHARE of it
    and SMALL_BYTES), with their source text, and how many and how much the rest add up to."""
    least = max(SMALL_BYTES, SMALL_SHARE * rise) if math.isfinite(rise) else 0.0
    head = [entry for entry in lines[:top] if entry["bytes"] >= least] or lines[:1]
    for entry in head:
        entry.setdefault("code", source_line(entry["file"], entry["line"]))
        if entry.get("via_file"):
            entry.setdefault("via_code", source_line(entry["via_file"], entry["via_line"]))
    rest = lines[len(head):]
    return head, {"lines": len(rest), "bytes": int(sum(entry["bytes"] for entry in rest))}


def stacks_lead(found: Composition) -> bool:
    """Whether the threads' stacks are the dominant kind of a composition: their pages are
    touched as the threads run, on whatever line the measured thread is by then, so the
    lines that started the threads come first (the peak's evidence, a phase's)."""
    return found.get("dominant") == "stacks"


def python_share(census: TracedCall | None, one_call: bool,
                 traced_at_peak: float | None) -> tuple[float | None, float]:
    """The Python share a traced call gives the composition (None: the readings' own), and
    the least it was: a census whose tracing was stopped during the call (past its time)
    saw part of it, and what it saw alive is the least the Python share was."""
    if not census or not one_call:
        return None, 0.0
    if traced_at_peak is not None or not census.get("cut"):
        return (traced_at_peak if traced_at_peak is not None else census["traced"]), 0.0
    return None, float(census["traced"])


def peak_report(probe: str, rise: float, start: MemoryReading, peak: MemoryReading,
                end: MemoryReading, rose: list[WatchedLine],
                census: TracedCall | None, one_call: bool = True, *,
                traced_at_peak: float | None = None, retained_large: float = 0.0,
                threads: list[WatchedLine] | None = None,
                kept_new: float = 0.0) -> PeakEvidence:
    """The peak evidence of a failing footprint budget of ``probe`` (which rose ``rise``):
    the lines (merged), the composition at the measured peak and what was left of it at the
    call's end, and how close the census came to the traced peak. ``one_call``: the measured
    run was one call, as the census's rerun is (else the census's figure is not the run's);
    ``traced_at_peak``: tracemalloc's bytes at the rerun's highest RSS, the Python share of
    the composition (the census's traced peak where it is missing); ``retained_large``: the
    bytes of the large data objects the run left alive (numpy arrays, bytes and strings over
    512 B), Python's in the untraced readings: at the call's end, and at the peak beyond
    what the Python share holds; ``threads``: the lines that started threads (the watch's), first
    where stacks are most of the rise; ``kept_new``: the bytes of the objects the run made and
    kept (see call_state)."""
    traced_lines = census["lines"] if census else []
    traced, least = python_share(census, one_call, traced_at_peak)
    untraced = max(rise - traced, 0.0) if traced is not None else math.inf
    if census and not one_call:
        untraced = max(rise - census["traced"], 0.0)
    # The reading's rise stands against the measured one only where both are RSS.
    measured = rise if probe in PROBES and PROBES[probe].resident else None
    # tracemalloc's own peak over the rerun's one call: exact where the watch's readings
    # fell between (a peak inside one C call), and the run's where it was one call too.
    traced_peak = census["traced"] if census and one_call else None
    # The large objects the run left alive were alive at its peak too: Python's there, as
    # far as the Python share (pymalloc's blocks, or tracemalloc's figure) does not hold them.
    found = composition(start, peak, traced, large=retained_large, measured=measured,
                        traced_peak=traced_peak, least=least,
                        at_peak=traced is not None and traced_at_peak is not None,
                        last_rise=bool(census and census.get("last_rise")))
    # The call's end is read untraced, whatever the peak's evidence traced: its large objects
    # are Python's (their memory is glibc's, which the reading alone counts as native heap).
    after = composition(start, end, None, large=retained_large)
    left = after["kinds"]
    if after.get("pooled"):
        found.setdefault("pooled", {**after["pooled"], "in_use": 0, "kept": 0})
        found["pooled"]["kept_after"] = after["pooled"]["kept"]
    lines = merge(traced_lines, rose, untraced)
    if threads and stacks_lead(found):
        lines = [*(cast("PeakLine", dict(entry, bytes=found["kinds"]["stacks"], source="threads"))
                   for entry in threads[:1]), *lines]
    for entry in lines:
        if "state" not in entry or entry.get("source") != "traced":
            entry["state"] = call_state(found, left, kept_new)
            entry["state_of"] = "call"
    head, rest = shown(lines, rise)
    return {"probe": probe, "rise": rise, "lines": head, "more": rest,
            "composition": found, "left": left,
            "census": census_summary(census, traced_lines, start, peak)}


def census_summary(census: TracedCall | None, traced_lines: list[PeakLine],
                   start: MemoryReading, peak: MemoryReading) -> CensusSummary:
    """What the evidence says of its traced call: its peak, how much of it the lines hold,
    its copies, whether it was cut and how long the interpreter was held; or, without one,
    the new interpreter blocks at the peak."""
    if census is None:
        blocks = peak.blocks - start.blocks
        return {"skipped_blocks": int(blocks) if math.isfinite(blocks) else None}
    return {"traced_peak": census["traced"],
            "captured": int(sum(e["bytes"] for e in traced_lines)),
            "copies": census.get("copies", 0), "copy_seconds": census.get("copy_seconds", 0.0),
            **({"cut": True} if census.get("cut") else {}),
            **cast("CensusSummary",
                   {key: census[key] for key in ("held", "call_seconds") if key in census})}
