"""Ground truth for a footprint corpus, measured without the plugin.

    python bench/footprint/ground_truth.py [--corpus synthetic|libraries] [--repeats 3]
        [--shapes a,b] [--out DIR]

Each shape runs in a fresh interpreter per repeat, twice: once plain (the kernel's figures and
the allocators' around each call, a sampler thread keeping the reading at the highest RSS) and
once under tracemalloc (its traced peak and what it still traced at the end). In each, the
shape is called twice: the **cold** call (the first after the setup) and the **warm** call
(the one after that first call, which is then its warm-up). Before each call: ``gc.collect()``
and ``malloc_trim(0)`` (a clean start, as the plugin makes one; what the trim handed back
after the warm-up is recorded), the start's figures, ``clear_refs`` 5 to reset VmHWM; after
it, VmHWM read at once, the figures after. From those, for each call: the rise (VmHWM less
the start's RSS, the call's own, from its own start), what the rise was made of at the
highest reading, and whether the shape's declared kind and state hold; and what the warm-up
kept (the cold call's figures after it returned). Medians of the repeats go to
``results/ground_truth.{md,json}`` (``ground_truth_libraries.*`` for the library corpus).
"""

from __future__ import annotations

import argparse
import gc
import json
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
import protocol  # noqa: E402
import truth  # noqa: E402
import truth_report  # noqa: E402
import variants  # noqa: E402

RESULTS = HERE / "results"
MiB = protocol.MiB
CALLS = ("cold", "warm")


def output_stem(corpus: str) -> str:
    return "ground_truth" if corpus == "synthetic" else f"ground_truth_{corpus}"


# --- one shape, in a child process ----------------------------------------------------------

def _clean_start() -> dict[str, int]:
    """gc and malloc_trim before a call; RSS before and after the trim."""
    gc.collect()
    before = procfs.read_status()["rss"]
    procfs.trim()
    return {"rss_before_trim": before, "rss_after_trim": procfs.read_status()["rss"]}


def measure_call(chosen: protocol.Shape, arguments: tuple[Any, ...]) -> dict[str, Any]:
    """One untraced call: the start's figures, the sampler's reading at the peak, VmHWM, the
    figures after."""
    extra = chosen.allocator_stats
    sampler = procfs.PeakSampler(extra=extra)
    sampler.start()
    sampler.ready.wait()
    time.sleep(0.02)
    sampler_id = frozenset({sampler.native_id or 0})
    start = procfs.full_reading(sampler_id, extra)
    sampler.restart()
    procfs.reset_high_water_mark()
    began = time.perf_counter()
    chosen.func(*arguments)
    seconds = time.perf_counter() - began
    hwm = procfs.read_status()["hwm"]
    after = procfs.full_reading(sampler_id, extra)
    sampled = sampler.stop() or {**after, "highest_rss": after["rss"]}
    sampled.setdefault("stacks_resident", start["stacks_resident"])
    sampled.setdefault("stacks_reserved", start["stacks_reserved"])
    sampled["at"] = sampled["t"] - began
    # A retained peak: the reading after the call, taken while nothing moves, stands for
    # the peak (its pymalloc and stacks figures are exact, not up to a few ms old); not
    # where threads have ended since (glibc keeps a few of their stacks cached), nor where
    # an allocator of the shape's own has taken back what it handed out (it keeps the
    # memory resident: RSS stays, the bytes in use do not).
    retained = (after["rss"] >= sampled["rss"] and after["threads"] >= sampled["threads"]
                and after.get("own_in_use", 0) >= 0.9 * sampled.get("own_in_use", 0))
    peak = {**after, "at": seconds} if retained else sampled
    return {"start": start, "peak": peak, "after": after, "hwm": hwm, "seconds": seconds,
            "sampled_rss": sampled["highest_rss"], "peak_from": "after" if retained else "sampler",
            "sampler_readings": sampler.readings, "sampler_discarded": sampler.discarded,
            "near_readings": sampled.get("near_readings", 0)}


#: The figures whose fall, when a shape's holder lets go of its result, is what the result
#: held.
RELEASED = ("rss", "file", "malloc_used", "own_in_use")


def release(chosen: protocol.Shape) -> dict[str, int]:
    """What the shape's result in ``HELD`` holds: the fall of each figure when it is
    dropped (garbage the call left is collected first). A call that replaced its previous
    result freed that one, so its figures after, less its start, undercount what it keeps;
    this does not. Empty for a shape that keeps nothing."""
    if chosen.name not in protocol.HELD:
        return {}
    gc.collect()
    before = {**procfs.read_status(), **procfs.read_malloc(),
              **procfs.read_extra(chosen.allocator_stats)}
    del protocol.HELD[chosen.name]
    gc.collect()
    after = {**procfs.read_status(), **procfs.read_malloc(),
             **procfs.read_extra(chosen.allocator_stats)}
    return {key: before[key] - after[key] for key in RELEASED if key in before}


def measure_plain(chosen: protocol.Shape) -> dict[str, Any]:
    arguments = chosen.arguments()
    found: dict[str, Any] = {}
    for call in CALLS:
        found[f"{call}_trim"] = _clean_start()
        found[call] = measure_call(chosen, arguments)
    # The last call only: dropping the result changes what the next call would replace.
    found[CALLS[-1]]["released"] = release(chosen)
    if chosen.allocator is not None:
        found["allocator"] = chosen.allocator()
    return found


def measure_traced(chosen: protocol.Shape) -> dict[str, Any]:
    """Each call under tracemalloc, started just before it (the warm call's tracing sees
    only its own allocations, not the warm-up's)."""
    arguments = chosen.arguments()
    found: dict[str, Any] = {}
    for call in CALLS:
        _clean_start()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        began = time.perf_counter()
        chosen.func(*arguments)
        seconds = time.perf_counter() - began
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        found[call] = {"traced_peak": peak - base, "traced_after": current - base,
                       "traced_seconds": seconds}
    return found


# --- the driver -----------------------------------------------------------------------------

def run_child(corpus: str, name: str, mode: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--corpus", corpus,
                           "--child", name, "--mode", mode],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{name} ({mode}) exited {done.returncode}:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def kept_by_warmup(plain: dict[str, Any], traced: dict[str, Any]) -> dict[str, float]:
    """What the warm-up (the cold call) kept when it returned, above its own start, and what
    the trim before the warm call handed back."""
    cold, trim = plain["cold"], plain["warm_trim"]
    start, after = cold["start"], cold["after"]
    return {"rss": after["rss"] - start["rss"],
            "rss_before_warm": trim["rss_before_trim"] - start["rss"],
            "trimmed": trim["rss_before_trim"] - trim["rss_after_trim"],
            "traced": traced["cold"]["traced_after"],
            "malloc_used": after["malloc_used"] - start["malloc_used"],
            "malloc_free": after["malloc_free"] - start["malloc_free"],
            "own_in_use": after.get("own_in_use", 0) - start.get("own_in_use", 0)}


def measure_shape(corpus: str, declared: protocol.Shape, repeats: int) -> dict[str, Any]:
    why = declared.available()
    if why is not None:
        return {"name": declared.name, "skipped": why}
    runs: dict[str, list[dict[str, Any]]] = {call: [] for call in CALLS}
    kept, allocators = [], set()
    for _ in range(repeats):
        plain = run_child(corpus, declared.name, "plain")
        traced = run_child(corpus, declared.name, "traced")
        for call in CALLS:
            runs[call].append(truth.summarize(plain[call], traced[call], declared.kind))
        kept.append(kept_by_warmup(plain, traced))
        if "allocator" in plain:
            allocators.add(plain["allocator"])
    source, lines = declared.peak_lines()
    entry: dict[str, Any] = {
        "name": declared.name, "kind": declared.kind, "state": declared.state,
        "fails": declared.fails, "doc": declared.doc, "peak_lines": lines, "source": source,
        "allocator": ", ".join(sorted(allocators)) or None,
        "kept": {key: sorted(k[key] for k in kept)[len(kept) // 2] for key in kept[0]},
        "kept_per_repeat": kept, "problems": []}
    for call in CALLS:
        merged = truth.median_of(runs[call])
        # "median" is the cold call's (the key older readers take for the budget).
        entry["median" if call == "cold" else "warm"] = merged
        entry["repeats" if call == "cold" else "warm_repeats"] = runs[call]
        # A corpus's declarations are checked on the calls its variants measure (the
        # synthetic one is scored on its cold call: its retained shapes drop their result
        # first, which leaves their warm call without a rise).
        if call in {variant.call for variant in variants.chosen("", corpus)}:
            entry["problems"] += truth.validate(declared, merged, call)
    return entry


def merged(path: Path, results: list[dict[str, Any]],
           meta: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The results already written, with the shapes measured now in place of theirs (a
    rerun of some shapes keeps the others' truth); the meta says which were measured when."""
    document = json.loads(path.read_text())
    fresh = {r["name"]: r for r in results}
    kept = [fresh.pop(r["name"], r) for r in document["shapes"]]
    old = document["meta"]
    old.setdefault("remeasured", []).append(
        {key: meta[key] for key in ("date", "repeats", "load_before", "load_after")}
        | {"shapes": [r["name"] for r in results]})
    return kept + list(fresh.values()), old


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def child(corpus: str, name: str, mode: str) -> int:
    chosen = protocol.load(corpus)[name]
    measure = measure_plain if mode == "plain" else measure_traced
    print(json.dumps(measure(chosen)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="synthetic", choices=tuple(protocol.CORPORA))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shapes", default="", help="comma-separated names (default: all)")
    parser.add_argument("--out", default=str(RESULTS), help="folder for the results")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("plain", "traced"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.corpus, args.child, args.mode)
    shapes = protocol.load(args.corpus)
    names = [n for n in args.shapes.split(",") if n] or protocol.corpus_names(shapes)
    unknown = [n for n in names if n not in shapes]
    if unknown:
        raise SystemExit(f"unknown shape(s) {', '.join(unknown)} in the {args.corpus} "
                         f"corpus; known: {', '.join(shapes)}")
    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "repeats": args.repeats,
            "corpus": args.corpus, "python": sys.version.split()[0],
            "versions": truth_report.versions(), "load_before": load_average()}
    results = []
    for name in names:
        began = time.perf_counter()
        results.append(measure_shape(args.corpus, shapes[name], args.repeats))
        print(f"{name:24s} {truth_report.one_line(results[-1])} "
              f"({time.perf_counter() - began:.0f} s)", flush=True)
    meta["load_after"] = load_average()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args.corpus)
    if args.shapes and (out / f"{stem}.json").exists():
        results, meta = merged(out / f"{stem}.json", results, meta)
    (out / f"{stem}.json").write_text(json.dumps({"meta": meta, "shapes": results},
                                                 indent=1, default=str) + "\n")
    (out / f"{stem}.md").write_text(truth_report.markdown(results, meta))
    print(f"wrote {out / stem}.md and .json")
    return 0 if all(not r.get("problems") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
