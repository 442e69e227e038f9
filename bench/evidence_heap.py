"""What the evidence costs on a large heap, with and without retaining paths.

    python bench/evidence_heap.py [--objects 1000000] [--repeats 5] [--census whole|partial]

Keeps about ``--objects`` objects alive (half lists, half the strings they hold), then runs
the evidence rerun (``evidence.rerun.collect``, as the measuring loop does after a failing
window) over three leaks: bytes kept in a module-level registry, hooks kept by a closure, and
objects kept in a class attribute. Each repeat runs each leak twice, with the retaining paths
on and off (off: no time left for them and the search skipped), interleaved, and prints the
evidence's own time (``evidence["seconds"]``) and what the paths said. ``--census``: force
the count after the rerun to list the whole heap's atoms again (``whole``) or those of the
rerun's new containers only (``partial``); by default the evidence chooses by how long the
first listing took (``steps.SHARE["whole_listing"]``). Figures only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_membudget.evidence import rerun, steps

REGISTRY: list[dict[str, Any]] = []


class Cache:
    entries: list[object] = []  # noqa: RUF012  (the leak: a class attribute)


def _closure() -> Callable[[], None]:
    hooks: list[Callable[[], int]] = []

    def step() -> None:
        size = len(hooks)
        hooks.append(lambda: size)

    return step


LEAKS: dict[str, Callable[[], Callable[[], None]]] = {
    "registry": lambda: lambda: REGISTRY.append({"rows": [bytes(512)]}),
    "closure": _closure,
    "class attribute": lambda: lambda: Cache.entries.append(object()),
}


def evidence(step: Callable[[], None], paths: bool) -> dict[str, Any]:
    saved = dict(steps.SHARE), rerun._retaining
    if not paths:
        steps.SHARE["paths"] = steps.SHARE["paths_least"] = 0.0
        rerun._retaining = lambda state, grown: []
    try:
        run = rerun.collect({"gc_objects"}, iterations=200, start_iteration=0)
        try:
            while True:
                next(run)
                step()
        except StopIteration as done:
            result: dict[str, Any] = done.value
    finally:
        shares, rerun._retaining = saved
        steps.SHARE.update(shares)
    return result


def said(found: dict[str, Any]) -> str:
    for entry in found.get("paths") or []:
        if entry.get("path"):
            root = entry["path"]["root"]
            return f"{entry['type']}: {root['kind']} -> {entry['path']['steps'][0]['step']}"
    entries = found.get("paths") or []
    if entries:
        return f"none ({entries[0].get('reason')})"
    listed = found.get("atoms_listed")
    return f"- (atoms listed in {listed['in']} only)" if listed else "-"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--census", choices=("whole", "partial"))
    args = parser.parse_args(argv)
    if args.census:
        steps.SHARE["whole_listing"] = float("inf") if args.census == "whole" else -1.0
    ballast = [[str(i)] for i in range(args.objects // 2)]
    print(f"{len(ballast) * 2:,} objects kept alive; {args.repeats} repeats, interleaved; "
          f"census: {args.census or 'chosen by the first listing'}")
    for name, make in LEAKS.items():
        seconds: dict[bool, list[float]] = {True: [], False: []}
        last = ""
        for _ in range(args.repeats):
            for paths in (False, True):
                found = evidence(make(), paths)
                seconds[paths].append(found["seconds"])
                last = said(found) if paths else last
        on, off = statistics.median(seconds[True]), statistics.median(seconds[False])
        print(f"  {name:16s} evidence s: paths off {off:.2f}, on {on:.2f} "
              f"(range {min(seconds[True]):.2f}-{max(seconds[True]):.2f}); path: {last}")
    del ballast
    return 0


if __name__ == "__main__":
    sys.exit(main())
