"""The evidence's short reruns and its one deadline: a few more iterations of the workload,
bounded in count and in time, with a least count so that growth can show; and the seconds
the whole growth evidence of a failure aims at, of which each step gets its share.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Literal

#: Seconds the whole growth evidence of a failure aims at (bench/evidence.py measures what
#: it costs and whether its top lines stay the same): the counts of objects before and after
#: the traced rerun, the rerun, the callers of library lines, the retaining paths, the
#: caches' fill and the native stacks.
GROWTH_EVIDENCE_SECONDS = 0.8

Step = Literal["rerun", "rerun_least", "callers", "paths", "paths_least", "fill", "native",
               "whole_listing"]
#: Each step's share of GROWTH_EVIDENCE_SECONDS. The traced rerun gets what the counts
#: around it (paid twice, and growing with the heap) and the callers and paths leave, within
#: ``rerun_least`` and ``rerun``: tracing slows allocation-heavy loops several times over, so
#: it stops on time as well as on count. The retaining paths keep ``paths`` of it, and get at
#: least ``paths_least`` when the rest took longer than it should (a heap of millions of
#: objects, a slow step): a few walks of the heap, enough for a short path. A count of
#: objects whose listing of atoms took more than ``whole_listing`` lists the rerun's own
#: containers the second time (evidence/census.py).
SHARE: dict[Step, float] = {"rerun": 0.75, "rerun_least": 0.125, "callers": 0.3125,
                            "paths": 0.1875, "paths_least": 0.3125, "fill": 0.25,
                            "native": 0.1875, "whole_listing": 0.3125}
#: Fewest calls of a short rerun: growth needs two to show.
LEAST_CALLS = 2
#: Most calls of the reruns beside the traced one (the callers of library lines, the
#: caches' fill): each stops as soon as it has seen what it looks for.
MOST_CALLS = 50


def seconds(step: Step) -> float:
    """A step's share of the evidence's seconds."""
    return SHARE[step] * GROWTH_EVIDENCE_SECONDS


@dataclass(frozen=True)
class Deadline:
    """The growth evidence's one deadline, from when it began."""

    began: float

    @property
    def end(self) -> float:
        """When the whole evidence should be done (a ``time.perf_counter()`` value)."""
        return self.began + GROWTH_EVIDENCE_SECONDS


def iterations(start: int, most: int, least: int,
               deadline: float) -> Generator[int, None, int]:
    """Yield up to ``most`` iteration numbers from ``start``, stopping at ``deadline`` (a
    ``time.perf_counter()`` value) once ``least`` have run; return how many ran."""
    done = 0
    while done < most:
        yield start + done
        done += 1
        if done >= least and time.perf_counter() > deadline:
            break
    return done
