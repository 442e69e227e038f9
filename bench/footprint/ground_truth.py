"""Ground truth for the footprint corpus, measured without the plugin.

    python bench/footprint/ground_truth.py [--repeats 3] [--shapes a,b]

Each shape runs in a fresh interpreter per repeat, twice: once plain (the kernel's figures and
the allocators' around the call, a sampler thread keeping the reading at the highest RSS) and
once under tracemalloc (its traced peak and what it still traced at the end). The plain run:
setup, ``gc.collect()`` and ``malloc_trim(0)`` (a clean start, as the plugin makes one), the
start's figures, ``clear_refs`` 5 to reset VmHWM, the call, VmHWM read at once, the figures
after. From those: the rise (VmHWM less the start's RSS), what the rise was made of at the
highest reading, and whether the shape's declared kind and state hold. Medians of the repeats
go to ``results/ground_truth.{md,json}``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import procfs  # noqa: E402 - the folder above is not a package
import shapes  # noqa: E402

RESULTS = HERE / "results"
MiB = 1 << 20
KINDS = ("python", "native", "allocator_free", "file", "stacks", "other")
#: The share of the peak's dominant kind still held after the call that makes it "retained".
RETAINED_SHARE = 0.5


# --- one shape, in a child process ----------------------------------------------------------

def _prepared(name: str) -> tuple[shapes.Shape, tuple[Any, ...]]:
    chosen = shapes.SHAPES[name]
    arguments = chosen.arguments()
    gc.collect()
    return chosen, arguments


def measure_plain(name: str) -> dict[str, Any]:
    chosen, arguments = _prepared(name)
    procfs.trim()
    sampler = procfs.PeakSampler()
    sampler.start()
    sampler.ready.wait()
    time.sleep(0.02)
    sampler_id = frozenset({sampler.native_id or 0})
    start = procfs.full_reading(sampler_id)
    sampler.restart()
    procfs.reset_high_water_mark()
    began = time.perf_counter()
    chosen.func(*arguments)
    seconds = time.perf_counter() - began
    hwm = procfs.read_status()["hwm"]
    after = procfs.full_reading(sampler_id)
    sampled = sampler.stop() or {**after, "highest_rss": after["rss"]}
    sampled.setdefault("stacks_resident", start["stacks_resident"])
    sampled.setdefault("stacks_reserved", start["stacks_reserved"])
    sampled["at"] = sampled["t"] - began
    # A retained peak: the reading after the call, taken while nothing moves, stands for
    # the peak (its pymalloc and stacks figures are exact, not up to a few ms old); not
    # where threads have ended since (glibc keeps a few of their stacks cached).
    retained = after["rss"] >= sampled["rss"] and after["threads"] >= sampled["threads"]
    peak = {**after, "at": seconds} if retained else sampled
    return {"start": start, "peak": peak, "after": after, "hwm": hwm, "seconds": seconds,
            "sampled_rss": sampled["highest_rss"], "peak_from": "after" if retained else "sampler",
            "sampler_readings": sampler.readings, "sampler_discarded": sampler.discarded,
            "near_readings": sampled.get("near_readings", 0)}


def measure_traced(name: str) -> dict[str, Any]:
    chosen, arguments = _prepared(name)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    began = time.perf_counter()
    chosen.func(*arguments)
    seconds = time.perf_counter() - began
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"traced_peak": peak - base, "traced_after": current - base,
            "traced_seconds": seconds}


# --- what a run's figures say ---------------------------------------------------------------

def _rise(at: dict[str, Any], start: dict[str, Any], key: str) -> float:
    return float(at.get(key, start[key]) - start[key])


def kinds_at_peak(plain: dict[str, Any], traced: dict[str, Any]) -> dict[str, float]:
    """The rise at the highest reading, by kind.

    Python objects: tracemalloc's traced peak (from a separate run, as tracing changes the
    untraced run's memory), but never more than the bytes pymalloc and glibc had in use at
    the highest reading (the traced peak can come earlier than RSS's: a heap freed and then
    fragmented) nor than the anonymous rise. Native: glibc's bytes in use that the traced
    bytes cannot account for, counted low (tracemalloc counts requested sizes, pymalloc
    rounds blocks up to 16 bytes, so which traced bytes sit in glibc is not known: all of
    them may). Stacks: resident pages of the mappings that hold the threads' stack pointers.
    The allocators' free memory: glibc's free chunks and the top of its main heap, then
    pymalloc's free blocks and pools, each only as far as the anonymous rise leaves room (a
    new thread's arena and a new pymalloc arena are free but mostly untouched). What is
    left of the anonymous rise (allocator overhead, Python's per-thread frame chunks, other
    mappings made outside malloc) is other."""
    start, peak = plain["start"], plain["peak"]
    anon = _rise(peak, start, "anon")
    stacks = max(_rise(peak, start, "stacks_resident"), 0.0)
    small = max(_rise(peak, start, "pymalloc_used"), 0.0)
    malloc_used = max(_rise(peak, start, "malloc_used"), 0.0)
    python = max(min(float(traced["traced_peak"]), small + malloc_used, anon - stacks), 0.0)
    # Bytes malloc'd but not yet written are in use to glibc and not resident: not counted.
    native = max(min(malloc_used - python, anon - stacks - python), 0.0)
    room = max(anon - python - native - stacks, 0.0)
    glibc_free = min(max(_rise(peak, start, "malloc_free_chunks")
                         + _rise(peak, start, "malloc_top_main"), 0.0), room)
    pymalloc_free = min(max(_rise(peak, start, "pymalloc_free"), 0.0), room - glibc_free)
    file = _rise(peak, start, "file") + _rise(peak, start, "shmem")
    return {"python": python, "native": native, "allocator_free": glibc_free + pymalloc_free,
            "file": max(file, 0.0), "stacks": stacks,
            "other": max(room - glibc_free - pymalloc_free, 0.0)}


def retained_share(kind: str | None, plain: dict[str, Any], traced: dict[str, Any]) -> float:
    """How much of the dominant kind's peak is still held after the call (1 = all of it)."""
    start, peak, after = plain["start"], plain["peak"], plain["after"]

    def share(held: float, highest: float) -> float:
        return held / highest if highest > 0 else 0.0

    if kind == "python":
        return share(traced["traced_after"], traced["traced_peak"])
    if kind == "native":
        return share(_rise(after, start, "malloc_used"), _rise(peak, start, "malloc_used"))
    if kind == "file":
        return share(_rise(after, start, "file"), _rise(peak, start, "file"))
    if kind == "stacks":
        return share(_rise(after, start, "threads"), _rise(peak, start, "threads"))
    return share(after["rss"] - start["rss"],
                 max(plain["hwm"], plain["sampled_rss"]) - start["rss"])


def summarize(plain: dict[str, Any], traced: dict[str, Any],
              declared_kind: str | None) -> dict[str, Any]:
    """One repeat's figures, flat, in bytes."""
    start, peak, after = plain["start"], plain["peak"], plain["after"]
    # The kernel folds RSS into VmHWM at events such as an unmap, not continuously: pages
    # dropped otherwise (an exiting thread's stack, given back with madvise) can leave it
    # below what the sampler read. The peak is the higher of the two.
    rise = max(plain["hwm"], plain["sampled_rss"]) - start["rss"]
    kinds = kinds_at_peak(plain, traced)
    # A rise under a MiB is no kind of memory in particular (the clean case).
    dominant = max(KINDS, key=lambda kind: kinds[kind]) if rise >= MiB / 2 else "-"
    return {
        "rss_start": start["rss"], "rise": rise, "rss_peak": start["rss"] + rise,
        "hwm_rise": plain["hwm"] - start["rss"],
        "after_rise": after["rss"] - start["rss"],
        "sampler_rise": plain["sampled_rss"] - start["rss"], "peak_at": peak["at"],
        "anon_rise": _rise(peak, start, "anon"), "file_rise": _rise(peak, start, "file"),
        "malloc_used_rise": _rise(peak, start, "malloc_used"),
        "malloc_free_rise": _rise(peak, start, "malloc_free"),
        "malloc_free_chunks_rise": _rise(peak, start, "malloc_free_chunks"),
        "malloc_top_main_rise": _rise(peak, start, "malloc_top_main"),
        "malloc_top_arenas_rise": _rise(peak, start, "malloc_top_arenas"),
        "pymalloc_used_rise": _rise(peak, start, "pymalloc_used"),
        "pymalloc_free_rise": _rise(peak, start, "pymalloc_free"),
        "pymalloc_free_after": _rise(after, start, "pymalloc_free"),
        "malloc_free_after": _rise(after, start, "malloc_free"),
        "traced_peak": traced["traced_peak"], "traced_after": traced["traced_after"],
        "stacks_resident_rise": _rise(peak, start, "stacks_resident"),
        "stacks_reserved_rise": _rise(peak, start, "stacks_reserved"),
        "vsize_rise": _rise(peak, start, "vsize"),
        "threads_rise": _rise(peak, start, "threads"),
        "threads_after": _rise(after, start, "threads"),
        "kinds": kinds, "dominant": dominant,
        "retained_share": retained_share(declared_kind or dominant, plain, traced),
        "seconds": plain["seconds"], "traced_seconds": traced["traced_seconds"],
        "sampler_readings": plain["sampler_readings"],
        "sampler_discarded": plain["sampler_discarded"],
        "near_readings": plain["near_readings"],
        "readings": {"start": start, "peak": peak, "after": after, "hwm": plain["hwm"],
                     "peak_from": plain["peak_from"]},
    }


# --- the driver -----------------------------------------------------------------------------

def run_child(name: str, mode: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", name,
                           "--mode", mode], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{name} ({mode}) exited {done.returncode}:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the repeats' numbers (kinds too); the dominant kind of each repeat."""
    merged: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, (int, float)):
            merged[key] = statistics.median(run[key] for run in runs)
    merged["kinds"] = {kind: statistics.median(run["kinds"][kind] for run in runs)
                       for kind in KINDS}
    merged["dominant_per_repeat"] = [run["dominant"] for run in runs]
    return merged


def validate(declared: shapes.Shape, merged: dict[str, Any]) -> list[str]:
    """What the figures contradict in the shape's declaration (empty when it holds)."""
    problems = []
    if declared.kind is None:
        if merged["rise"] > 8 * MiB:
            problems.append(f"the clean case rose {merged['rise'] / MiB:.1f} MiB")
        return problems
    wrong = [kind for kind in merged["dominant_per_repeat"] if kind != declared.kind]
    if wrong:
        problems.append(f"declared {declared.kind}, the figures say {', '.join(wrong)}")
    retained = merged["retained_share"] >= RETAINED_SHARE
    if retained != (declared.state == "retained"):
        problems.append(f"declared {declared.state}, {merged['retained_share']:.0%} of the "
                        f"{declared.kind} peak is still held after the call")
    return problems


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure_shape(name: str, repeats: int) -> dict[str, Any]:
    declared = shapes.SHAPES[name]
    why = declared.available()
    if why is not None:
        return {"name": name, "skipped": why}
    runs = []
    for _ in range(repeats):
        plain, traced = run_child(name, "plain"), run_child(name, "traced")
        runs.append(summarize(plain, traced, declared.kind))
    merged = median_of(runs)
    source, lines = declared.peak_lines()
    return {"name": name, "kind": declared.kind, "state": declared.state,
            "fails": declared.fails, "doc": declared.doc, "peak_lines": lines,
            "source": source, "median": merged, "repeats": runs,
            "problems": validate(declared, merged)}


def mib(value: float) -> str:
    return f"{value / MiB:.1f}"


def markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    out = [f"# Footprint ground truth ({meta['date']})", "",
           f"Medians of {meta['repeats']} repeats, each shape in a fresh interpreter per "
           f"repeat, without the plugin; Python {meta['python']}, load average "
           f"{meta['load_before']} before and {meta['load_after']} after. MiB throughout.", "",
           "## Rise and state", "",
           "| shape | kind | state | start | rise | VmHWM | sampler saw | after | peak at s | "
           "traced peak | traced after | held after | call s | traced s | check |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "skipped" in r:
            out.append(f"| {r['name']} | skipped: {r['skipped']} |" + " |" * 13)
            continue
        m = r["median"]
        check = "ok" if not r["problems"] else "; ".join(r["problems"])
        out.append(
            f"| {r['name']} | {r['kind'] or '-'} | {r['state'] or '-'} | {mib(m['rss_start'])} "
            f"| {mib(m['rise'])} | {mib(m['hwm_rise'])} | {mib(m['sampler_rise'])} | "
            f"{mib(m['after_rise'])} | "
            f"{m['peak_at']:.2f} | {mib(m['traced_peak'])} | {mib(m['traced_after'])} | "
            f"{m['retained_share']:.0%} | {m['seconds']:.2f} | {m['traced_seconds']:.2f} | "
            f"{check} |")
    out += ["", "## What the rise was made of at the highest reading", "",
            "| shape | anon | file | malloc used | malloc free: chunks / main top / arena tops | "
            "pymalloc used | pymalloc free | stacks resident / reserved | threads | python | "
            "native | allocator free | file | stacks | other | dominant |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "skipped" in r:
            continue
        m, k = r["median"], r["median"]["kinds"]
        dominant = "/".join(sorted(set(m["dominant_per_repeat"])))
        out.append(
            f"| {r['name']} | {mib(m['anon_rise'])} | {mib(m['file_rise'])} | "
            f"{mib(m['malloc_used_rise'])} | {mib(m['malloc_free_chunks_rise'])} / "
            f"{mib(m['malloc_top_main_rise'])} / {mib(m['malloc_top_arenas_rise'])} | "
            f"{mib(m['pymalloc_used_rise'])} | {mib(m['pymalloc_free_rise'])} | "
            f"{mib(m['stacks_resident_rise'])} / {mib(m['stacks_reserved_rise'])} | "
            f"+{m['threads_rise']:.0f} | " + " | ".join(mib(k[kind]) for kind in KINDS)
            + f" | {dominant} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shapes", default="", help="comma-separated names (default: all)")
    parser.add_argument("--out", default=str(RESULTS), help="folder for ground_truth.{md,json}")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("plain", "traced"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        measure = measure_plain if args.mode == "plain" else measure_traced
        print(json.dumps(measure(args.child)))
        return 0
    names = [n for n in args.shapes.split(",") if n] or shapes.corpus()
    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "repeats": args.repeats,
            "python": sys.version.split()[0], "load_before": load_average()}
    results = []
    for name in names:
        began = time.perf_counter()
        results.append(measure_shape(name, args.repeats))
        r = results[-1]
        summary = r.get("skipped") or (f"rise {mib(r['median']['rise'])} MiB, "
                                       f"{'/'.join(r['median']['dominant_per_repeat'])}, "
                                       f"{'; '.join(r['problems']) or 'ok'}")
        print(f"{name:24s} {summary} ({time.perf_counter() - began:.0f} s)", flush=True)
    meta["load_after"] = load_average()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ground_truth.json").write_text(json.dumps({"meta": meta, "shapes": results},
                                                      indent=1, default=str) + "\n")
    (out / "ground_truth.md").write_text(markdown(results, meta))
    print(f"wrote {out / 'ground_truth.md'} and ground_truth.json")
    return 0 if all(not r.get("problems") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
