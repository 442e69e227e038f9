"""The ground truth's tables (markdown), from ``ground_truth.py``'s results."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from protocol import MiB
from truth import KINDS

#: Libraries whose versions the results record (those a corpus calls).
LIBRARIES = ("numpy", "pandas", "scikit-learn", "scipy", "pillow", "torch", "pyarrow")


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def mib(value: float) -> str:
    return f"{value / MiB:.1f}"


def one_line(entry: dict[str, Any]) -> str:
    """A shape's result in one line, for the progress output."""
    if "skipped" in entry:
        return str(entry["skipped"])
    calls = [f"{call} rise {mib(entry[key]['rise'])} MiB "
             f"{'/'.join(entry[key]['dominant_per_repeat'])} "
             f"{'/'.join(entry[key]['state_per_repeat'])}"
             for call, key in (("cold", "median"), ("warm", "warm")) if key in entry]
    return "; ".join(calls) + f"; {'; '.join(entry['problems']) or 'ok'}"


def _rise_table(results: list[dict[str, Any]], key: str) -> list[str]:
    out = ["| shape | kind | state | start | rise | VmHWM | sampler saw | after | peak at s | "
           "traced peak | traced after | held after | state measured | call s | traced s |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if key not in r:
            continue
        m = r[key]
        states = "/".join(sorted(set(m["state_per_repeat"])))
        out.append(
            f"| {r['name']} | {r['kind'] or '-'} | {r['state'] or '-'} | {mib(m['rss_start'])} "
            f"| {mib(m['rise'])} | {mib(m['hwm_rise'])} | {mib(m['sampler_rise'])} | "
            f"{mib(m['after_rise'])} | {m['peak_at']:.2f} | {mib(m['traced_peak'])} | "
            f"{mib(m['traced_after'])} | {m['retained_share']:.0%} | {states} | "
            f"{m['seconds']:.2f} | {m['traced_seconds']:.2f} |")
    return out


def _composition_table(results: list[dict[str, Any]], key: str) -> list[str]:
    out = ["| shape | anon | file | malloc used | malloc free: chunks / main top / arena tops | "
           "pymalloc used | pymalloc free | own allocator in use | stacks resident / reserved "
           "| threads | " + " | ".join(KINDS) + " | dominant |",
           "|---|---|---|---|---|---|---|---|---|---|" + "---|" * len(KINDS) + "---|"]
    for r in results:
        if key not in r:
            continue
        m, k = r[key], r[key]["kinds"]
        dominant = "/".join(sorted(set(m["dominant_per_repeat"])))
        out.append(
            f"| {r['name']} | {mib(m['anon_rise'])} | {mib(m['file_rise'])} | "
            f"{mib(m['malloc_used_rise'])} | {mib(m['malloc_free_chunks_rise'])} / "
            f"{mib(m['malloc_top_main_rise'])} / {mib(m['malloc_top_arenas_rise'])} | "
            f"{mib(m['pymalloc_used_rise'])} | {mib(m['pymalloc_free_rise'])} | "
            f"{mib(m['own_in_use_rise'])} | "
            f"{mib(m['stacks_resident_rise'])} / {mib(m['stacks_reserved_rise'])} | "
            f"+{m['threads_rise']:.0f} | " + " | ".join(mib(k[kind]) for kind in KINDS)
            + f" | {dominant} |")
    return out


def _kept_table(results: list[dict[str, Any]]) -> list[str]:
    out = ["| shape | RSS kept | RSS before the warm call | handed back by the trim | "
           "traced kept | malloc used kept | malloc free kept | own allocator in use kept |",
           "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "kept" not in r:
            continue
        k = r["kept"]
        out.append(f"| {r['name']} | {mib(k['rss'])} | {mib(k['rss_before_warm'])} | "
                   f"{mib(k['trimmed'])} | {mib(k['traced'])} | {mib(k['malloc_used'])} | "
                   f"{mib(k['malloc_free'])} | {mib(k['own_in_use'])} |")
    return out


def _allocator_table(results: list[dict[str, Any]]) -> list[str]:
    rows = [r for r in results if r.get("allocator")]
    if not rows:
        return []
    out = ["", "## Allocators of their own", "",
           "In use: what the allocator says it has handed out (its own statistics), at the "
           "highest reading and after the call; kept free: what the call left resident that "
           "nothing else accounts for (RSS after, less glibc's, pymalloc's and the "
           "allocator's bytes in use), the allocator's freed memory as far as the figures "
           "can tell.", "",
           "| shape | call | allocator | rise | in use at the peak | other at the peak | "
           "RSS after | in use after | kept free after | pool's high-water mark rose |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for call, key in (("cold", "median"), ("warm", "warm")):
            m = r[key]
            kept = (m["after_rise"] - m["own_in_use_after"] - m["malloc_used_after"]
                    - m["malloc_free_after"])
            out.append(f"| {r['name']} | {call} | {r['allocator']} | {mib(m['rise'])} | "
                       f"{mib(m['own_in_use_rise'])} | {mib(m['kinds']['other'])} | "
                       f"{mib(m['after_rise'])} | {mib(m['own_in_use_after'])} | "
                       f"{mib(max(kept, 0.0))} | {mib(m['own_pool_peak_rise'])} |")
    return out


def markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    libraries = ", ".join(f"{k} {v}" for k, v in meta["versions"].items() if v)
    out = [f"# Footprint ground truth, {meta['corpus']} corpus ({meta['date']})", "",
           f"Medians of {meta['repeats']} repeats, each shape in a fresh interpreter per "
           f"repeat, without the plugin; Python {meta['python']}, {libraries}; load average "
           f"{meta['load_before']} before and {meta['load_after']} after. MiB throughout. "
           "The cold call is the first after the setup; the warm call the one after it (the "
           "cold call is its warm-up), its rise from its own start."]
    for again in meta.get("remeasured", []):
        out.append(f"Measured again on {again['date']} ({again['repeats']} repeats, load "
                   f"average {again['load_before']} before, {again['load_after']} after): "
                   f"{', '.join(again['shapes'])}.")
    out += ["",
           "## Declarations", ""]
    for r in results:
        if "skipped" in r:
            out.append(f"- {r['name']}: skipped, {r['skipped']}")
        else:
            out.append(f"- {r['name']}: {'; '.join(r['problems']) or 'ok'}")
    for call, key in (("cold call", "median"), ("call after one warm-up", "warm")):
        out += ["", f"## Rise and state: the {call}", "", *_rise_table(results, key),
                "", f"## What the rise was made of at the highest reading: the {call}", "",
                *_composition_table(results, key)]
    out += ["", "## What the warm-up (the cold call) kept", "", *_kept_table(results),
            *_allocator_table(results)]
    return "\n".join(out) + "\n"
