"""Text for a footprint: the evidence at a failing peak (what was alive, what kind of memory
it was, what to do about it). Phases and stopped runs: render/stopped.py. Reads the plain
dicts of results; decides nothing."""

from __future__ import annotations

from typing import cast

from pytest_membudget.catalog import PAGE_SLACK
from pytest_membudget.evidence.peakrecords import (
    Composition,
    KeptTypes,
    NativePeak,
    PeakEvidence,
    PeakLine,
    Pooled,
    TracedCost,
    WatchedLine,
)
from pytest_membudget.evidence.records import SLIVER, SMALL_BYTES, SMALL_SHARE
from pytest_membudget.evidence.share import FRAGMENTATION_REMEDIES
from pytest_membudget.frames import source_line
from pytest_membudget.render.units import fmt, short_path
from pytest_membudget.vocabulary import most_of

KIND_NAMES = {
    "python": "Python objects",
    "native": "native heap in use",
    "allocator_free": "allocators' free memory",
    "file": "mapped files",
    "stacks": "thread stacks",
    "other": "other anonymous memory",
}
STATES = {
    "transient": "transient (freed before the call returned)",
    "retained": "retained (still alive when the call returned)",
    "partly retained": "partly retained",
}


def size(value: float | None) -> str:
    return fmt("rss", value)


def kinds_line(kinds: dict[str, float], rise: float | None = None) -> str:
    """'Python objects 153 MiB (99%), native heap in use 2 MiB (1%)', largest first; kinds
    too small to matter are left out (the JSON has them all)."""
    least = max(SMALL_BYTES, SMALL_SHARE * rise) if rise and rise > 0 else SMALL_BYTES
    parts = []
    for kind, value in sorted(kinds.items(), key=lambda item: -item[1]):
        if value < least:
            continue
        share = f" ({value / rise:.0%})" if rise and rise > 0 else ""
        parts.append(f"{KIND_NAMES.get(kind, kind)} {size(value)}{share}")
    return ", ".join(parts) or "nothing over 64 KiB"


def composition_lines(found: Composition, left: dict[str, float] | None = None,
                      indent: str = "  ", stopped: bool = False) -> list[str]:
    """The rise by kind, what was left of each when the call returned (``stopped``: once
    the stopped call's frames were let go), and what to do about the large ones."""
    rise = found.get("rise")
    untraced = (f" (the traced call was cut at the evidence's deadline: Python objects were at "
                f"least the {size(found['traced_least'])} it saw alive)"
                if found.get("traced_least") else "") if found.get("traced") else (
        " (not traced: numpy arrays, bytes and strings the run kept count as Python objects, "
        "other objects over 512 B and freed ones in the native heap)"
        if found.get("large_counted") else
        " (tracemalloc off: numpy arrays and objects over 512 B count in the native heap)")
    if found.get("missed") and found.get("peak_python") is not None:
        # The reading is not the peak's; tracemalloc's exact peak of one more call is.
        share = found["peak_python"] / found["missed"]
        lines = [f"{indent}the watch missed the peak: its highest reading rose {size(rise)} of "
                 f"the {size(found['missed'])} measured (the peak fell between its readings, "
                 "inside a call that held the interpreter); tracemalloc's own peak over one "
                 f"more call holds {size(found['peak_python'])} of it ({share:.0%}): the peak "
                 f"was mostly Python objects. That reading was made of{untraced}:"]
    elif found.get("missed"):
        # The reading is not the peak's: say what it is, and name no kind for the peak.
        lines = [f"{indent}the watch missed the peak: its highest reading rose {size(rise)} of "
                 f"the {size(found['missed'])} measured (the peak fell between its readings, "
                 "inside a call that held the interpreter), so no kind is named for the peak; "
                 f"that reading was made of{untraced}:"]
    else:
        lines = [f"{indent}what the rise was made of{untraced}:"]
    lines.append(f"{indent}  {kinds_line(found.get('kinds', {}), rise)}")
    if left is not None:
        when = ("once the stopped call's frames were let go" if stopped else
                "when the call returned")
        lines.append(f"{indent}  left {when}: {kinds_line(left)}")
    lines += [f"{indent}{advice}" for advice in remedies(found)]
    return lines


def remedies(found: Composition) -> list[str]:
    """What to do about each kind that makes up a large share of the rise."""
    advice = []
    major = found.get("major", [])
    kinds = found.get("kinds", {})
    pooled = found.get("pooled") or cast("Pooled", {})
    for pool in pooled.get("by", []):
        if pooled.get("in_use", 0) >= SMALL_BYTES:
            advice.append(f"  of the native memory, {size(pooled['in_use'])} is in use in "
                          f"{pool['name']}, a library's own allocator (its own mappings)")
        kept = max(pooled.get("kept", 0), pooled.get("kept_after", 0))
        if kept >= SMALL_BYTES:
            advice.append(f"  {pool['name']} keeps {size(kept)} it freed: "
                          f"{pool['remedy']}")
    if "allocator_free" in major and not most_of(pooled.get("kept", 0), kinds["allocator_free"]):
        advice.append(f"  free memory the allocators keep ({size(kinds['allocator_free'])}): "
                      f"fragmentation; try {FRAGMENTATION_REMEDIES}")
    if "other" in major:
        advice.append(f"  other anonymous memory ({size(kinds['other'])}): mappings no "
                      "allocator this plugin can read accounts for: a library's own "
                      "allocator (jemalloc, mimalloc: Rust and C++ extensions bring them) "
                      "or its own mmap")
    if "file" in major:
        advice.append(f"  mapped files ({size(kinds['file'])}): page cache, which the kernel "
                      "reclaims under pressure and reads again on use; budget uss or "
                      "tree_pss for memory that cannot be reclaimed")
    if found.get("stacks_reserved"):
        advice.append(f"  thread stacks: {size(found['stacks_reserved'])} reserved, "
                      f"{size(kinds.get('stacks', 0))} resident ({found['threads'][0]} -> "
                      f"{found['threads'][1]} threads): reserved is not resident")
    # Reuse and untouched memory within the pages' ordinary slack, or a SLIVER of the rise (a
    # reading taken while a large array is filled finds a little of it), are not worth a line.
    worth = max(PAGE_SLACK, SLIVER * (found.get("rise") or 0))
    if found.get("reused", 0) >= worth:
        advice.append(f"  besides, {size(found['reused'])} in use reused free memory the "
                      "allocators kept from earlier work (no new pages): run alone, the "
                      "rise would be that much higher")
    if found.get("untouched", 0) >= worth:
        advice.append(f"  {size(found['untouched'])} was allocated but never touched (not "
                      "resident): tools that count allocations count it, RSS does not")
    return advice


def native_peak_lines(native: NativePeak) -> list[str]:
    """The native allocations alive at the peak of one more call under memray, by the user's
    line; or why they cannot be had here."""
    if not native:
        return []
    if native.get("missing"):
        return [f"  native allocations at the peak: {native['missing']}"]
    if native.get("unseen"):
        return [f"  native allocations at the peak: memray's call peaked at "
                f"{size(native.get('peak'))} of the {size(native['unseen'])} of native heap "
                "read here; it does not see these allocations (C code calling malloc through "
                "a pointer of its own, as ctypes does), so none are listed; the lines are "
                "where RSS rose"]
    if native.get("skipped"):
        skipped = native["skipped"]
        why = f"one call takes {skipped['call_seconds']:.2f} s"
        if skipped.get("first_use"):
            why += ("; memray's first use in a process reads the symbols of the native code "
                    "loaded")
        return [f"  native allocations at the peak: not recorded: one more call under "
                f"memray would take about {skipped.get('seconds', 0):.1f} s ({why}), past "
                "what the evidence has left of its second; the lines are where RSS rose"]
    lines = [f"  native allocations alive at the peak (memray, one more call, which peaked at "
             f"{size(native.get('peak'))}):"]
    if native.get("reason"):
        lines.append(f"    {native['reason']}")
    for entry in native.get("lines", []):
        user, inner = entry.get("python"), entry.get("native") or {}
        where = (f"{short_path(user['file'])}:{user['line']}" if user else
                 "no line of your code under it")
        made_in = inner.get("function", "?")
        if inner.get("file"):
            made_in += f" ({short_path(inner['file'])})"
        count = entry.get("allocations", 0)
        lines.append(f"    {where}: {size(entry['bytes'])} in {count} allocation"
                     f"{'s' if count != 1 else ''}, made in {made_in}")
        code = source_line(user["file"], user["line"]) if user else ""
        if code:
            lines.append(f"        {code}")
    more = native.get("more", {})
    if more.get("lines"):
        lines.append(f"    and {more['lines']} more lines ({size(more.get('bytes'))})")
    unplaced = native.get("unplaced", {})
    if unplaced.get("allocations"):
        count = unplaced["allocations"]
        lines.append(f"    and {size(unplaced.get('bytes'))} in {count} allocation"
                     f"{'s' if count != 1 else ''} made with no line of your code on their "
                     "stack (a library's own threads)")
    return lines


def waiting_text(inner: str) -> str:
    """A line whose thread waited for others while RSS rose, at the frame that waited."""
    return f"waiting {'in ' + inner + ' ' if inner else ''}for other threads"


def waited_text(entry: PeakLine | WatchedLine) -> str | None:
    """Other threads ran the line (a pool's workers) while the test's thread waited at
    its own line for them; None where the test's own thread ran it."""
    if not entry.get("waited_file"):
        return None
    where = f"{short_path(entry['waited_file'])}:{entry['waited_line']}"
    code = source_line(entry["waited_file"], entry["waited_line"])
    return f"run by other threads while {where} waited for them" + (f": {code}" if code else "")


def line_text(entry: PeakLine, traced: bool = True) -> list[str]:
    """One line of the live set: the user's line, its bytes, transient or retained.
    ``traced``: whether a census ran (else a line's rise says nothing of tracemalloc)."""
    if entry.get("via_file"):
        where, code = f"{short_path(entry['via_file'])}:{entry['via_line']}", entry.get(
            "via_code", "")
        inner = f"{short_path(entry['file'])}:{entry['line']}"
    else:
        where, code = f"{short_path(entry['file'])}:{entry['line']}", entry.get("code", "")
        inner = (f"{short_path(entry['inner_file'])}:{entry['inner_line']}"
                 if entry.get("inner_file") else "")
    if entry.get("source") == "threads":
        head = (f"    {where}: started {entry.get('threads', 0)} thread(s) whose stacks hold "
                f"{size(entry['bytes'])}")
    elif entry.get("source") == "rose":
        head = f"    {where}: RSS rose {size(entry.get('rose_bytes', entry['bytes']))} while it ran"
        if entry.get("function"):
            head += f" (in {entry['function']}"
            others = entry.get("other_lines", [])
            head += (", with lines " + ", ".join(str(o["line"]) for o in others) + ")"
                     if others else ")")
        if traced:
            head += ("; tracemalloc saw no allocation made there: pages first touched there, "
                     "or native, mapped or allocator memory")
        if entry.get("state"):
            head += f"; the call's memory: {entry['state']}"
    else:
        blocks = entry.get("count", 0)
        head = (f"    {where}: {size(entry.get('traced_bytes', entry['bytes']))} in {blocks} block"
                f"{'s' if blocks != 1 else ''}, {STATES.get(entry.get('state', ''), '')}")
        if entry.get("rose_bytes", 0) > 1.5 * entry.get("traced_bytes", entry["bytes"]):
            head += f"; RSS rose {size(entry['rose_bytes'])} while it ran"
    lines = [head]
    if code:
        lines.append(f"        {code}")
    waited = waited_text(entry)
    if waited:
        lines.append(f"        {waited}")
    if entry.get("source") == "rose" and entry.get("waiting"):
        lines.append(f"        {waiting_text(inner)}, whose work it was")
    elif inner:
        verb = {"rose": "running", "threads": "started"}.get(entry.get("source", ""),
                                                              "allocated")
        lines.append(f"        {verb} in {inner}"
                     + (", in threads the library ran for this line" if entry.get("in_threads")
                        else ""))
    return lines


def type_lines(types: KeptTypes) -> list[str]:
    """The object types alive at the end of the run that were not where its measured window
    began."""
    rows = types.get("rows") or []
    if not rows:
        return []
    return ["  object types the run left alive (new since its start):",
            *(f"    {row['type']}: +{row['count']:,}" for row in rows)]


def line_summary(entry: PeakLine) -> str:
    """'t.py:6 153 MiB transient' for one line of the live set."""
    file, line = (entry["via_file"], entry["via_line"]) if entry.get("via_file") else (
        entry["file"], entry["line"])
    what = entry.get("state") or "RSS rose while it ran"
    return f"{short_path(file)}:{line} {size(entry['bytes'])} {what}"


def peak_lines(evidence: PeakEvidence) -> list[str]:
    """The evidence at a failing peak."""
    if not evidence:
        return []
    census = evidence.get("census", {})
    stopped = bool(evidence.get("stopped"))
    how = ("one more call, traced" if "traced_peak" in census else
           "the watch's, read up to the stop; the call is not run again" if stopped else
           "from the run itself")
    lines = ["", f"Evidence at the peak ({how}; {evidence.get('seconds', 0):.2f} s):"]
    found = evidence.get("composition")
    if not found:  # a device's peak: its own lines follow
        return lines
    lines.append(f"  RSS rose {size(found.get('rise'))} ({size(found.get('rss_start'))} -> "
                 f"{size(found.get('rss_peak'))}) at its highest reading, "
                 f"{evidence.get('peak_at', 0):.2f} s into the "
                 + ("measured call(s), after the warm-up" if evidence.get("warmup") else "run"))
    lines += composition_lines(found, evidence.get("left"), stopped=stopped)
    entries = evidence.get("lines", [])
    if entries:
        lines.append("  alive at the peak, by line (tracemalloc at the traced peak; RSS while "
                     "each line ran):" if census.get("captured") else
                     "  where RSS rose, by function of your code (the line that rose most):")
        for entry in entries:
            lines += line_text(entry, bool(census.get("captured")))
        more = evidence.get("more", {})
        if more.get("lines"):
            lines.append(f"    and {more['lines']} more lines ({size(more.get('bytes'))})")
    lines += native_peak_lines(evidence.get("native") or {})
    lines += type_lines(evidence.get("types") or cast("KeptTypes", {}))
    if "traced_peak" in census:
        peak = census["traced_peak"] or 0
        share = f" ({census['captured'] / peak:.0%})" if peak > 0 else ""
        if census.get("captured"):
            lines.append(f"  the lines above hold {size(census['captured'])} of the traced "
                         f"peak of {size(peak)}{share}")
        elif census.get("cut"):
            lines.append(f"  tracemalloc's peak was {size(peak)} when its tracing was stopped, "
                         "before the call returned (it ran past its time): a part of the call, "
                         "from which nothing is concluded")
        elif not most_of(peak, float(found.get("rise") or 0.0)):
            lines.append(f"  tracemalloc's peak over the call was {size(peak)}, under half the "
                         "rise: most of it was not Python objects")
        elif "held" in census and most_of(census["held"], census.get("call_seconds", 0)):
            lines.append(f"  tracemalloc's peak over the call was {size(peak)}; no copy of its "
                         f"traces was made near it (C code held the interpreter for "
                         f"{census['held']:.2f} s of the call's {census['call_seconds']:.2f} s)")
        elif "held" in census:
            lines.append(f"  tracemalloc's peak over the call was {size(peak)}; no copy of its "
                         "traces was made near it (the watch's thread did not get to run "
                         "then: busy threads kept it waiting)")
        else:
            lines.append(f"  tracemalloc's peak over the call was {size(peak)}; no copy of its "
                         "traces was made near it")
        if census.get("cut") and census.get("captured"):
            lines.append("  tracing stopped before the call returned (it ran past its time): "
                         "what the lines left is the call's as a whole")
    elif census.get("skipped", cast("TracedCost", {})).get("seconds"):
        lines.append("  " + skipped_text(cast("TracedCost", census["skipped"])))
    return lines


def skipped_text(cost: TracedCost) -> str:
    """Why one more call was not traced: what tracing it would cost, and from what."""
    why = [f"one call takes {cost.get('call_seconds', 0):.2f} s"]
    if cost.get("blocks"):
        why.append(f"its peak held {cost['blocks']:,} new interpreter blocks")
    if cost.get("held", 0) >= 0.05:
        why.append(f"it held the interpreter for {cost['held']:.2f} s in one C call, which "
                   "tracing cannot cut short")
    return (f"not traced: one more call under tracemalloc would take about "
            f"{cost['seconds']:.1f} s ({'; '.join(why)}), past the evidence's "
            f"{cost.get('budget', 1.0):g} s; the lines are where RSS rose")


def rose_text(entry: WatchedLine, what: str | None = None, within: str = "in"
              ) -> list[str]:
    """One line of the watch's (where RSS rose, or ``what`` it did there), its code, and the
    frame beneath it (``within`` that frame)."""
    where = f"{short_path(entry.get('file', '?'))}:{entry.get('line', '?')}"
    lines = [f"    {where}: {what or size(entry['bytes'])}"]
    if entry.get("code"):
        lines.append(f"        {entry['code']}")
    waited = waited_text(entry)
    if waited:
        lines.append(f"        {waited}")
    inner = (f"{short_path(entry['inner_file'])}:{entry['inner_line']}"
             if entry.get("inner_file") else "")
    if entry.get("waiting"):
        lines.append(f"        {waiting_text(inner)}")
    elif inner:
        lines.append(f"        {within} {inner}")
    return lines
