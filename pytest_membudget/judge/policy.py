"""How long a run goes on: a pure function of the verdict at each checkpoint, the number of
measured iterations and the seconds they took. No workload, no clock, no probe: the tests
drive it with scripted sequences of readings and times."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge import fill
from pytest_membudget.judge.spec import RunSettings
from pytest_membudget.vocabulary import StopReason

if TYPE_CHECKING:  # numpy stays out of the settings, which read the constants below
    from pytest_membudget.judge.verdict import Verdict

#: No auto verdict, pass or fail, stands on fewer measured iterations than this (unless
#: max_iterations is lower). Growth is called a leak only once it has lasted past half of
#: them, so a cache or buffer that fills within about 300 iterations after warm-up and then
#: stops is not one; and a loop is called clean only once it has stayed flat that long, so a
#: leak that sets in within about 400 iterations is not passed unseen.
MIN_VERDICT_ITERATIONS = 640
#: Seconds of measured work after which an auto verdict may stand on fewer than
#: MIN_VERDICT_ITERATIONS calls (but never on fewer than FEWEST_CALLS): a heavy step (a
#: training step, a rollout) reaches its verdict in seconds, and what it forgives is counted
#: in time, not calls: a cache that fills for about half of this after warm-up still passes.
SHORTEST_SECONDS = 6.0
#: Fewest measured calls of any auto verdict: the judged tail (the second half) needs eight
#: blocks of at least one sample each, and room for one noisy block.
FEWEST_CALLS = 24
#: The run length the pass rule assumes when no max_iterations caps an auto run: a slope
#: passes clearly when even its upper bound would not add up to one resolution step over the
#: second half of a run this long. Sample storage for this many iterations is allocated
#: before the window; a longer run thins its samples in place.
REFERENCE_ITERATIONS = 2000

#: Auto runs judge at min_iterations and then each time the window grows by this factor.
CHECKPOINT_GROWTH = 1.5
#: An auto run that fails at N iterations goes on to this many times N and must fail again
#: there: the tail judged then (the second half) does not overlap the first one.
CONFIRM_GROWTH = 2
#: Seconds of measured work after which a clean verdict stands (Reading.CLEAN: every budget
#: passes and the exact counters beside RSS are flat beyond doubt). A clean verdict needs no
#: confirmation: a clean heavy step stands where it is first judged, at the shortest verdict
#: in seconds over CONFIRM_GROWTH, the time a failure seen then needs to be confirmed by the
#: shortest verdict (RunPolicy.first). A step under about 4.7 ms reaches 640 calls first.
CLEAN_SECONDS = SHORTEST_SECONDS / CONFIRM_GROWTH
class Reading(Enum):
    """What the verdict at a checkpoint says, as far as the length of the run goes."""

    #: nothing fails and nothing is ambiguous
    PASS = "pass"
    #: a pass beyond doubt: every budget passes, and the exact counters sampled beside each
    #: coarse one (interpreter blocks, glibc's bytes in use) are flat
    CLEAN = "clean"
    #: nothing fails, something could still go either way
    AMBIGUOUS = "ambiguous"
    #: a budget fails
    FAIL = "fail"
    #: a budget fails and every failing probe has grown so much that running on to the
    #: shortest verdict would only cost memory (or descriptors, or threads)
    FAIL_AMPLE = "fail, grown ample"


@dataclass(frozen=True)
class Checkpoint:
    """Where the run is judged next: at ``at`` measured calls, or once ``by`` seconds of the
    window have passed, whichever comes first (never before FEWEST_CALLS); and the length at
    which a failure seen earlier must be seen again to stand (None while nothing has failed)."""

    at: int
    confirm_at: int | None = None
    by: float = math.inf
    #: The failing probes' slopes where the failure to confirm was first seen, and the
    #: measured calls there.
    failed: tuple[tuple[str, float], ...] = ()
    failed_at: int = 0

    def due(self, measured: int, elapsed: float) -> bool:
        """Whether the window has reached this checkpoint."""
        return measured >= self.at or (elapsed >= self.by and measured >= FEWEST_CALLS)


@dataclass(frozen=True)
class RunPolicy:
    """The rules: the first checkpoint, the growth of the window between checkpoints, the
    confirmation of a failure, and the shortest verdict of an auto run."""

    #: None: auto; otherwise the fixed number of measured iterations.
    fixed: int | None
    min_iterations: int
    #: None: no cap on the count; only running out of time stops an ambiguous run.
    max_iterations: int | None
    #: No auto verdict, pass or fail, stands on fewer measured iterations (unless
    #: max_iterations is lower).
    shortest: int = MIN_VERDICT_ITERATIONS
    #: Sample after every call, whatever a sample costs beside the call (the sweep's
    #: confirmation: a short run whose checkpoints must each see a full tail).
    every_call: bool = False
    #: A fixed run (the sweep's screen) may stop after any of these counts of measured calls,
    #: when its samples are quiet there (nothing left that more calls could flag): the
    #: loop asks the measurement at those samples only (``Measurement.quiet``; see
    #: measure/loop.py).
    read_at: tuple[int, ...] = ()
    #: Seconds of measured work after which a verdict may stand on fewer than ``shortest``
    #: calls (never on fewer than FEWEST_CALLS): the heavy-step rule, SHORTEST_SECONDS for a
    #: marked run, shorter for the sweep's confirmation of exact growth.
    shortest_seconds: float = SHORTEST_SECONDS

    @classmethod
    def for_run(cls, run: RunSettings) -> RunPolicy:
        return cls(run.iterations, run.min_iterations, run.max_iterations)

    @property
    def auto(self) -> bool:
        return self.fixed is None

    @property
    def capped(self) -> bool:
        """Whether the count of iterations is bounded (a fixed run, or a max_iterations)."""
        return self.fixed is not None or self.max_iterations is not None

    @property
    def most_iterations(self) -> int:
        """The most measured iterations the run may take, or, for an auto run without a cap,
        the reference length: the sample storage's size and the pass rule's run length."""
        if self.fixed is not None:
            return self.fixed
        return self.max_iterations if self.max_iterations is not None else REFERENCE_ITERATIONS

    def _capped(self, iterations: int) -> int:
        return iterations if self.max_iterations is None else min(self.max_iterations,
                                                                  iterations)

    def first(self) -> Checkpoint:
        if self.fixed is not None:
            return Checkpoint(self.fixed)
        # A heavy step is first judged halfway to its shortest verdict in time, so that a
        # failure seen then is confirmed at twice its length by the time the verdict may stand.
        return Checkpoint(self._capped(self.min_iterations),
                          by=self.shortest_seconds / CONFIRM_GROWTH)

    def stands(self, measured: int, elapsed: float) -> bool:
        """Whether an auto verdict may stand after ``measured`` calls in ``elapsed`` seconds:
        the shortest verdict in calls, or in seconds of work for a heavy step."""
        return measured >= self._capped(self.shortest) or (
            elapsed >= self.shortest_seconds and measured >= FEWEST_CALLS)

    @property
    def clean_seconds(self) -> float:
        """Seconds of work after which a clean verdict stands: CLEAN_SECONDS, or the
        shortest verdict in seconds where that is shorter (the sweep's confirmation)."""
        return min(CLEAN_SECONDS, self.shortest_seconds)

    def stands_clean(self, measured: int, elapsed: float) -> bool:
        """Whether a clean verdict may stand: as any verdict, or after clean_seconds of
        work on at least FEWEST_CALLS calls."""
        return self.stands(measured, elapsed) or (
            elapsed >= self.clean_seconds and measured >= FEWEST_CALLS)

    def settles(self, measured: int, elapsed: float, clean: bool) -> bool:
        """Whether a probe that passes (clean on its own or not) would stand here alone:
        an auto run's budgets settle one by one (judge.decide)."""
        if not self.auto:
            return False
        return self.stands_clean(measured, elapsed) if clean else self.stands(measured,
                                                                              elapsed)

    def calls_to_verdict(self, call_seconds: float) -> int:
        """The measured calls an auto run takes to a confirmed failure at ``call_seconds`` a
        call (a pass stands no later): the shortest verdict in calls, or, for a slow call,
        the calls of ``shortest_seconds``, and never fewer than a failure at FEWEST_CALLS
        confirmed at CONFIRM_GROWTH times that."""
        shortest = self._capped(self.shortest)
        if call_seconds <= 0:
            return shortest
        in_time = math.ceil(self.shortest_seconds / call_seconds)
        return min(shortest, max(CONFIRM_GROWTH * FEWEST_CALLS, in_time))

    def after(self, checkpoint: Checkpoint, measured: int, out_of_time: bool,
              reading: Reading, elapsed: float = 0.0,
              failing: tuple[tuple[str, float], ...] = ()) -> Checkpoint | StopReason:
        """The next checkpoint, or why the run stops, once ``measured`` iterations were run
        in ``elapsed`` seconds of window and the verdict on them reads ``reading``, with
        ``failing`` the slopes of its failing probes and of the probes of Python objects
        growing beside them (judge.fill.growing)."""
        if self.fixed is not None:
            return StopReason.FIXED
        if out_of_time or (self.max_iterations is not None and measured >= self.max_iterations):
            return StopReason.CAP
        shortest = self._capped(self.shortest)
        if reading in (Reading.FAIL, Reading.FAIL_AMPLE):
            # A leak grows in every stretch. A failure stands once the judged tail at twice
            # the length, which no longer overlaps the first one, fails too, and again at
            # the shortest verdict unless the growth is already ample; a cache that was still
            # filling has stopped by then.
            confirm_at = checkpoint.confirm_at
            if confirm_at is None:
                confirm_at = self._capped(CONFIRM_GROWTH * measured)
                return Checkpoint(confirm_at, confirm_at, failed=failing, failed_at=measured)
            first, now = dict(checkpoint.failed), dict(failing)
            if fill.slowing(first, now):
                # Lost more of its slope than a leak does since it first failed: a fill
                # slowing down. Judged again as the window grows; a failure then is
                # confirmed afresh.
                return Checkpoint(self._capped(math.ceil(measured * CHECKPOINT_GROWTH)))
            if fill.alone(first, now) and measured < CONFIRM_GROWTH ** 2 * checkpoint.failed_at:
                # A fill alone is judged over one more doubling (judge.fill.alone).
                again = self._capped(CONFIRM_GROWTH * measured)
                if again > measured:
                    return replace(checkpoint, at=again, confirm_at=again)
            if self.stands(measured, elapsed) or reading is Reading.FAIL_AMPLE:
                return StopReason.CLEAR
            last = max(shortest, confirm_at)
            return replace(checkpoint, at=last, confirm_at=last, by=self.shortest_seconds)
        if reading is Reading.CLEAN and self.stands_clean(measured, elapsed):
            return StopReason.CLEAR
        if reading is Reading.PASS and self.stands(measured, elapsed):
            return StopReason.CLEAR
        at = self._capped(math.ceil(measured * CHECKPOINT_GROWTH))
        if reading is Reading.CLEAN:
            # Clean so far: nothing to judge before the shortest verdict or the clean
            # seconds, whichever comes first.
            return Checkpoint(max(at, shortest), by=self.clean_seconds)
        if reading is Reading.PASS:
            # Flat so far: nothing to judge before the shortest verdict.
            return Checkpoint(max(at, shortest), by=self.shortest_seconds)
        return Checkpoint(at)

    def reference(self, measured: int, elapsed: float, max_seconds: float) -> int:
        """The run length the pass rule assumes: the most iterations, or, for an uncapped
        auto run whose calls are slow, the calls that fit in ``max_seconds`` at the pace so
        far (a longer run cannot be made, so no growth over it can be ruled out or in)."""
        most = self.most_iterations
        if self.capped or measured <= 0 or elapsed <= 0:
            return most
        return max(FEWEST_CALLS, min(most, math.floor(max_seconds * measured / elapsed)))


def reading_of(verdict: Verdict) -> Reading:
    """The verdict at a checkpoint, as the policy reads it."""
    if verdict.failed:
        failing = [p for p in verdict.probes.values() if p.failed]
        if all(p.trend.growth >= PROBES[p.probe].ample_growth for p in failing):
            return Reading.FAIL_AMPLE
        return Reading.FAIL
    if verdict.ambiguous:
        return Reading.AMBIGUOUS
    return Reading.CLEAN if verdict.clean else Reading.PASS
