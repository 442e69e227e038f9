"""The evidence's short reruns and its deadlines: a few more iterations of the workload,
bounded in count and in time, with a least count so that growth can show; one deadline per
kind of evidence (a failing growth budget's, a failing footprint's), of which each step gets
its share; and the measured costs a deadline weighs to decide whether a step fits.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Literal, get_args

Kind = Literal["growth", "footprint"]
#: Each kind of evidence's deadline, in seconds. ``growth``: what the whole growth evidence
#: of a failure aims at (the counts of objects before and after the traced rerun, the rerun,
#: the callers of library lines, the retaining paths, the caches' fill and the native
#: stacks). ``footprint``: what the evidence at a failing footprint's peak may add to a run
#: (one more call traced, one more under memray, each where its estimated cost, COST, fits
#: what is left).
EVIDENCE_SECONDS: dict[Kind, float] = {"growth": 0.8, "footprint": 1.0}

GrowthStep = Literal["rerun", "rerun_least", "callers", "paths", "paths_least", "fill",
                     "native", "whole_listing", "path_from"]
FootprintStep = Literal["tracing", "copies"]
Step = GrowthStep | FootprintStep
#: Each step's share of its kind's deadline (EVIDENCE_SECONDS): a growth step's
#: (GrowthStep) of the growth evidence's, a footprint step's (FootprintStep) of the
#: footprint evidence's.
#:
#: The growth evidence: the traced rerun gets what the counts around it (paid twice, and
#: growing with the heap) and the callers and paths leave, within ``rerun_least`` and
#: ``rerun``: tracing slows allocation-heavy loops several times over, so it stops on time
#: as well as on count. The retaining paths keep ``paths`` of it, and get at least
#: ``paths_least`` when the rest took longer than it should (a heap of millions of objects,
#: a slow step): a few walks of the heap, enough for a short path. A count of objects whose
#: listing of atoms took more than ``whole_listing`` lists the rerun's own containers the
#: second time (evidence/census.py). The search from a probe's own objects (``path_from``:
#: JAX's arrays, evidence/paths.py) comes before all of these, on a deadline of its own that
#: begins where it does: it may take the whole and a quarter more.
#:
#: The footprint evidence: the traced call is made where its cost fits ``tracing`` of what
#: is left, and its tracing is cut at that share of the deadline, leaving the rest to read
#: what it copied; its census stops copying tracemalloc's traces (the workload waits
#: meanwhile) once its copies took ``copies`` (evidence/peak.py).
SHARE: dict[str, float] = {"rerun": 0.75, "rerun_least": 0.125, "callers": 0.3125,
                           "paths": 0.1875, "paths_least": 0.3125, "fill": 0.25,
                           "native": 0.1875, "whole_listing": 0.3125, "path_from": 1.25,
                           "tracing": 0.8, "copies": 0.3}
#: The steps of each kind of evidence.
STEPS: dict[Kind, frozenset[str]] = {"growth": frozenset(get_args(GrowthStep)),
                                     "footprint": frozenset(get_args(FootprintStep))}

Cost = Literal["trace_block", "held_slowdown", "memray_slowdown", "memray_first",
               "memray_symbols", "memray_later"]
#: What a step costs, measured, not a limit: a deadline weighs a step's estimate against
#: what it has left, and skips a step that does not fit.
#:
#: - ``trace_block``: seconds tracing adds to one more call per new interpreter block at the
#:   peak (each one is traced, and copied by the census);
#: - ``held_slowdown``: how many times slower a C call that holds the interpreter
#:   (json.loads, json.dumps) runs traced; nothing can cut such a call short;
#: - ``memray_slowdown``: how many times slower a call runs under memray's native tracing;
#: - ``memray_first``: seconds memray's first start in a process costs beside reading the
#:   symbols of the native code loaded, which costs ``memray_symbols`` seconds per MiB of it
#:   (about 1 s in a process with numpy, 6 s with torch);
#: - ``memray_later``: seconds a later start of memray costs.
COST: dict[Cost, float] = {"trace_block": 5e-6, "held_slowdown": 5.0, "memray_slowdown": 4.0,
                           "memray_first": 0.5, "memray_symbols": 0.013, "memray_later": 0.05}
#: Fewest calls of a short rerun: growth needs two to show.
LEAST_CALLS = 2
#: Most calls of the reruns beside the traced one (the callers of library lines, the
#: caches' fill): each stops as soon as it has seen what it looks for.
MOST_CALLS = 50


def seconds(step: GrowthStep) -> float:
    """A growth evidence step's share of its deadline, in seconds."""
    return SHARE[step] * EVIDENCE_SECONDS["growth"]


@dataclass(frozen=True)
class Deadline:
    """One kind of evidence's deadline, from when it began (a ``time.perf_counter()``
    value): its seconds (read when asked, the module's figure), and each step's share."""

    began: float
    kind: Kind = "growth"

    @property
    def seconds(self) -> float:
        return EVIDENCE_SECONDS[self.kind]

    @property
    def end(self) -> float:
        """When the whole evidence should be done."""
        return self.began + self.seconds

    def share(self, step: Step) -> float:
        """A step's share of this deadline, as a fraction of it."""
        if step not in STEPS[self.kind]:
            raise KeyError(f"{step!r} is no step of the {self.kind} evidence")
        return SHARE[step]

    def seconds_for(self, step: Step) -> float:
        """A step's share of this deadline, in seconds."""
        return self.share(step) * self.seconds

    def until(self, step: Step) -> float:
        """When a step that began with the deadline must stop: its share from ``began``."""
        return self.began + self.seconds_for(step)

    def left(self) -> float:
        return self.end - time.perf_counter()

    def fits(self, cost: float, step: Step | None = None) -> bool:
        """Whether a step estimated to take ``cost`` seconds fits its share of what is left
        (all of it for a step without a share)."""
        return cost <= (1.0 if step is None else self.share(step)) * self.left()

    def spent(self) -> float:
        return round(time.perf_counter() - self.began, 6)


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
