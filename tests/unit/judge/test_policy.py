"""The run policy on scripted sequences of readings: no workload, no clock, no probe."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_membudget.judge.fill import filling, growing
from pytest_membudget.judge.fit import Trend
from pytest_membudget.judge.policy import (
    FEWEST_CALLS,
    MIN_VERDICT_ITERATIONS,
    SHORTEST_SECONDS,
    Checkpoint,
    Reading,
    RunPolicy,
    StopReason,
)
from pytest_membudget.judge.spec import Budget
from pytest_membudget.judge.verdict import Outcome, ProbeJudgement, Verdict
from pytest_membudget.vocabulary import BudgetKind, Status

P, A, F, FA = Reading.PASS, Reading.AMBIGUOUS, Reading.FAIL, Reading.FAIL_AMPLE


def drive(policy: RunPolicy, reading: Callable[[int], Reading],
          out_of_time_at: int | None = None) -> tuple[list[int], StopReason]:
    """Every checkpoint the policy asks for, and why it stops. ``reading(n)`` is the verdict
    at ``n`` measured iterations."""
    checkpoint = policy.first()
    seen = []
    while True:
        seen.append(checkpoint.at)
        late = out_of_time_at is not None and checkpoint.at >= out_of_time_at
        step = policy.after(checkpoint, checkpoint.at, late, reading(checkpoint.at))
        if isinstance(step, StopReason):
            return seen, step
        assert step.at > checkpoint.at, "the window must grow between checkpoints"
        checkpoint = step


AUTO = RunPolicy(fixed=None, min_iterations=64, max_iterations=2000)


def test_a_flat_run_is_judged_at_64_then_goes_straight_to_the_shortest_verdict() -> None:
    assert drive(AUTO, lambda n: P) == ([64, MIN_VERDICT_ITERATIONS], StopReason.CLEAR)


def test_an_ambiguous_run_grows_by_half_again_each_time_up_to_the_cap() -> None:
    seen, stop = drive(AUTO, lambda n: A)
    assert seen == [64, 96, 144, 216, 324, 486, 729, 1094, 1641, 2000]
    assert stop is StopReason.CAP


def test_an_ambiguous_run_that_becomes_clear_stops_at_the_next_checkpoint_past_640() -> None:
    seen, stop = drive(AUTO, lambda n: A if n < 700 else P)
    assert seen[-1] == 729 and stop is StopReason.CLEAR


def test_a_failure_is_confirmed_at_twice_its_length_and_again_at_the_shortest_verdict() -> None:
    assert drive(AUTO, lambda n: F) == ([64, 128, MIN_VERDICT_ITERATIONS], StopReason.CLEAR)


def test_ample_growth_confirms_a_failure_at_twice_its_length() -> None:
    assert drive(AUTO, lambda n: FA) == ([64, 128], StopReason.CLEAR)


def test_ample_growth_at_the_first_failure_alone_does_not_stop_the_run() -> None:
    # Confirmation needs a second, disjoint tail: FAIL_AMPLE only counts at the confirmation.
    assert drive(AUTO, lambda n: FA if n == 64 else F) == (
        [64, 128, MIN_VERDICT_ITERATIONS], StopReason.CLEAR)


def test_a_failure_not_seen_again_starts_over() -> None:
    # Fails at 64, passes at its confirmation (a cache that stopped filling): not a leak.
    seen, stop = drive(AUTO, lambda n: F if n == 64 else P)
    assert seen == [64, 128, MIN_VERDICT_ITERATIONS] and stop is StopReason.CLEAR


def test_a_failure_confirmed_past_the_shortest_verdict_stands_there() -> None:
    seen, stop = drive(AUTO, lambda n: A if n < 300 else F)
    assert seen == [64, 96, 144, 216, 324, 648] and stop is StopReason.CLEAR


def test_the_cap_ends_a_confirmation() -> None:
    policy = RunPolicy(fixed=None, min_iterations=64, max_iterations=100)
    assert drive(policy, lambda n: F) == ([64, 100], StopReason.CAP)


def test_a_lower_max_iterations_lowers_the_shortest_verdict() -> None:
    policy = RunPolicy(fixed=None, min_iterations=64, max_iterations=200)
    assert drive(policy, lambda n: P) == ([64, 200], StopReason.CAP)


def test_min_iterations_above_the_shortest_verdict_stops_at_the_first_judgement() -> None:
    policy = RunPolicy(fixed=None, min_iterations=700, max_iterations=2000)
    assert drive(policy, lambda n: P) == ([700], StopReason.CLEAR)


def test_running_out_of_time_stops_at_the_checkpoint() -> None:
    assert drive(AUTO, lambda n: A, out_of_time_at=100) == ([64, 96, 144], StopReason.CAP)


@pytest.mark.parametrize("reading", list(Reading))
def test_a_fixed_run_stops_at_its_count_whatever_the_verdict(reading: Reading) -> None:
    policy = RunPolicy(fixed=300, min_iterations=64, max_iterations=2000)
    assert drive(policy, lambda n: reading) == ([300], StopReason.FIXED)


def test_first_checkpoint_and_most_iterations() -> None:
    assert AUTO.first() == Checkpoint(64, by=SHORTEST_SECONDS / 2)
    assert AUTO.most_iterations == 2000
    fixed = RunPolicy(fixed=50, min_iterations=64, max_iterations=2000)
    assert fixed.first() == Checkpoint(50) and fixed.most_iterations == 50
    assert RunPolicy(fixed=None, min_iterations=64, max_iterations=40).first().at == 40


UNCAPPED = RunPolicy(fixed=None, min_iterations=64, max_iterations=None)


def test_without_a_cap_an_ambiguous_run_goes_on_until_its_time_is_up() -> None:
    seen, stop = drive(UNCAPPED, lambda n: A, out_of_time_at=20_000)
    assert seen[-1] >= 20_000 and seen[-2] < 20_000 and stop is StopReason.CAP
    assert seen[:10] == [64, 96, 144, 216, 324, 486, 729, 1094, 1641, 2462]


def test_without_a_cap_a_late_failure_is_confirmed_far_past_the_reference_length() -> None:
    seen, stop = drive(UNCAPPED, lambda n: A if n < 4000 else F)
    assert seen[-2:] == [5540, 11080] and stop is StopReason.CLEAR


def test_without_a_cap_the_shortest_verdict_and_the_storage_are_the_reference_length() -> None:
    assert drive(UNCAPPED, lambda n: P) == ([64, MIN_VERDICT_ITERATIONS], StopReason.CLEAR)
    assert UNCAPPED.most_iterations == 2000 and not UNCAPPED.capped


# Heavy steps: the same rules, counted in seconds of work where 640 calls would take longer.


def drive_timed(policy: RunPolicy, reading: Callable[[int], Reading],
                per_call: float) -> tuple[list[int], StopReason, float]:
    """As :func:`drive`, for calls of ``per_call`` seconds: each checkpoint is reached at its
    count or at its time, whichever comes first. Returns the seconds of window too."""
    checkpoint = policy.first()
    measured, seen = 0, []
    while True:
        measured += 1
        while not checkpoint.due(measured, measured * per_call):
            measured += 1
        seen.append(measured)
        step = policy.after(checkpoint, measured, False, reading(measured), measured * per_call)
        if isinstance(step, StopReason):
            return seen, step, measured * per_call
        checkpoint = step


@pytest.mark.parametrize("per_call", [0.0003, 0.005])
def test_fast_steps_keep_the_counts_of_calls(per_call: float) -> None:
    assert drive_timed(AUTO, lambda n: P, per_call)[:2] == (
        [64, MIN_VERDICT_ITERATIONS], StopReason.CLEAR)
    assert drive_timed(AUTO, lambda n: F, per_call)[:2] == (
        [64, 128, MIN_VERDICT_ITERATIONS], StopReason.CLEAR)


@pytest.mark.parametrize("per_call", [0.01, 0.05, 0.1, 0.5])
def test_a_heavy_leak_is_confirmed_within_the_shortest_seconds(per_call: float) -> None:
    seen, stop, seconds = drive_timed(AUTO, lambda n: F, per_call)
    assert stop is StopReason.CLEAR and seen[1] == 2 * seen[0]
    assert seconds <= max(SHORTEST_SECONDS, 2 * FEWEST_CALLS * per_call) + per_call


@pytest.mark.parametrize("per_call", [0.01, 0.05, 0.1, 0.5])
def test_a_clean_heavy_step_passes_once_its_seconds_are_spent(per_call: float) -> None:
    seen, stop, seconds = drive_timed(AUTO, lambda n: P, per_call)
    assert stop is StopReason.CLEAR and len(seen) <= 2
    assert seen[-1] >= FEWEST_CALLS
    assert seconds >= SHORTEST_SECONDS or seen[-1] >= MIN_VERDICT_ITERATIONS


def test_a_heavy_step_is_never_judged_on_fewer_than_the_fewest_calls() -> None:
    seen, stop, _ = drive_timed(AUTO, lambda n: P, per_call=2.0)
    assert seen == [FEWEST_CALLS] and stop is StopReason.CLEAR


def test_a_heavy_failure_not_seen_again_is_no_leak() -> None:
    # A cache that filled during the first seconds and stopped: fails at the first
    # judgement, passes at its confirmation, passes again once the seconds are spent.
    seen, stop, _ = drive_timed(AUTO, lambda n: F if n < 40 else P, per_call=0.1)
    assert stop is StopReason.CLEAR and len(seen) >= 2


def test_the_pass_rules_run_length_follows_the_pace_of_slow_calls() -> None:
    assert UNCAPPED.reference(measured=100, elapsed=0.03, max_seconds=60.0) == 2000
    assert UNCAPPED.reference(measured=60, elapsed=6.0, max_seconds=60.0) == 600
    assert UNCAPPED.reference(measured=30, elapsed=120.0, max_seconds=60.0) == FEWEST_CALLS
    capped = RunPolicy(fixed=None, min_iterations=64, max_iterations=500)
    assert capped.reference(measured=60, elapsed=6.0, max_seconds=60.0) == 500


SWEEP_EXACT = RunPolicy(fixed=None, min_iterations=64, max_iterations=None, shortest=128,
                        shortest_seconds=2.0)


@pytest.mark.parametrize("policy", [AUTO, SWEEP_EXACT])
@pytest.mark.parametrize("per_call", [0.0003, 0.005, 0.02, 0.05, 0.1, 0.5])
def test_the_calls_to_a_confirmed_failure_are_those_the_policy_takes(
        policy: RunPolicy, per_call: float) -> None:
    seen, stop, _ = drive_timed(policy, lambda n: F, per_call)
    assert stop is StopReason.CLEAR
    # Counted to the checkpoint at which the failure stood: one call of slack for a
    # checkpoint reached by its time.
    assert abs(seen[-1] - policy.calls_to_verdict(per_call)) <= 1, seen
    passed, _, _ = drive_timed(policy, lambda n: P, per_call)
    assert passed[-1] <= policy.calls_to_verdict(per_call) + 1


def test_a_shorter_time_rule_judges_and_stands_sooner() -> None:
    assert SWEEP_EXACT.first() == Checkpoint(64, by=1.0)
    assert SWEEP_EXACT.stands(FEWEST_CALLS, 2.0) and not AUTO.stands(FEWEST_CALLS, 2.0)
    assert not SWEEP_EXACT.stands(FEWEST_CALLS - 1, 2.0)
    # 20 ms a call: judged at 50 calls (1 s), confirmed at 100 (2 s).
    assert drive_timed(SWEEP_EXACT, lambda n: F, 0.02)[:2] == ([50, 100], StopReason.CLEAR)
    assert SWEEP_EXACT.calls_to_verdict(0.0) == 128


def drive_failing(policy: RunPolicy, slopes: Callable[[int], dict[str, float]],
                  ) -> tuple[list[int], StopReason]:
    """As drive, where the run fails at every checkpoint with ``slopes(n)`` (the failing
    probes' slopes at ``n`` measured iterations); an empty dict is a pass."""
    checkpoint = policy.first()
    seen = []
    while True:
        seen.append(checkpoint.at)
        failing = tuple(slopes(checkpoint.at).items())
        step = policy.after(checkpoint, checkpoint.at, False, F if failing else P,
                            failing=failing)
        if isinstance(step, StopReason):
            return seen, step
        assert step.at > checkpoint.at
        checkpoint = step


def test_a_malloc_failure_that_keeps_its_slope_over_two_doublings_is_confirmed() -> None:
    # A native leak: its slope varies by a few percent between tails. Seen at twice the
    # length and again at four times it (a fill can keep its pace over one doubling).
    for wobble in (0.9, 1.1):
        seen, stop = drive_failing(
            SWEEP_EXACT, lambda n, w=wobble: {"malloc": 64.0 * (w if n > 64 else 1)})
        assert (seen, stop) == ([64, 128, 256], StopReason.CLEAR)


def test_a_malloc_failure_that_loses_a_quarter_of_its_slope_is_a_fill_judged_again() -> None:
    # gymnasium's Graph round-trip: 902 B/call at 64 calls, 135 at 128, then under the
    # budget's resolution.
    fill = {64: 902.0, 128: 135.0}
    seen, stop = drive_failing(SWEEP_EXACT, lambda n: {"malloc": fill[n]} if n in fill else {})
    assert seen == [64, 128, 192] and stop is StopReason.CLEAR


def test_a_fill_that_keeps_its_pace_over_one_doubling_is_caught_over_the_next() -> None:
    # The same round-trip on another run: 1409, 1170 (0.83), then 242 B/call.
    fill = {64: 1409.0, 128: 1170.0, 256: 242.0}
    seen, stop = drive_failing(SWEEP_EXACT, lambda n: {"malloc": fill[n]} if n in fill else {})
    assert seen == [64, 128, 256, 384] and stop is StopReason.CLEAR


def test_a_fill_that_fails_again_later_is_confirmed_afresh() -> None:
    # Slows down once, then grows steadily: a leak after all.
    seen, stop = drive_failing(SWEEP_EXACT, lambda n: {"malloc": 900.0 if n == 64 else 100.0})
    assert seen == [64, 128, 192, 384, 768] and stop is StopReason.CLEAR


def test_a_malloc_failure_under_the_marker_is_seen_at_the_shortest_verdict_too() -> None:
    seen, stop = drive_failing(AUTO, lambda n: {"malloc": 64.0})
    assert (seen, stop) == ([64, 128, 256, MIN_VERDICT_ITERATIONS], StopReason.CLEAR)
    fill = {64: 900.0, 128: 800.0, 256: 700.0, 640: 100.0}
    seen, stop = drive_failing(AUTO, lambda n: {"malloc": fill[n]} if n in fill else {})
    assert seen == [64, 128, 256, 640, 960] and stop is StopReason.CLEAR


@pytest.mark.parametrize("first,then", [
    ({"rss": 900.0}, {"rss": 100.0}),  # not a filling probe
    ({"malloc": 900.0, "rss": 900.0}, {"malloc": 100.0}),  # not malloc alone at first
    ({"malloc": 900.0}, {"malloc": 100.0, "py_blocks": 2.0}),  # not malloc alone then
    ({"py_blocks": 9.0}, {"malloc": 100.0}),  # another probe failed first
])
def test_only_malloc_alone_slowing_down_is_read_as_a_fill(first: dict[str, float],
                                                         then: dict[str, float]) -> None:
    seen, stop = drive_failing(SWEEP_EXACT, lambda n: first if n == 64 else then)
    assert (seen, stop) == ([64, 128], StopReason.CLEAR)


def judged(probe: str, slope: float, lower: float, status: Status) -> ProbeJudgement:
    """A probe's judgement of one slope budget of 0, with its trend's slope and lower bound."""
    line = Trend(slope=slope, lower=lower, upper=slope * 1.2, late_slope=slope,
                 recent_slope=slope, tail_start=0, tail_span=48.0, growth=slope * 48,
                 judged=True)
    budget = Budget(probe, BudgetKind.SLOPE, 0.0, "test")
    return ProbeJudgement(probe, line, 0.0, (Outcome(budget, status, slope),))


@pytest.mark.parametrize("blocks,expected", [
    # A block a call beside malloc's failure, passed on py_blocks' resolution over a short
    # run (a 50 ms step keeping a 4 KiB numpy array a call): not glibc's bytes alone.
    (judged("py_blocks", 1.0, 1.0, Status.PASS), ("py_blocks", "malloc")),
    # Flat blocks beside it: malloc alone, read as a possible fill.
    (judged("py_blocks", 0.0, 0.0, Status.PASS), ("malloc",)),
])
def test_python_objects_growing_beside_a_malloc_failure_are_not_a_fill(
        blocks: ProbeJudgement, expected: tuple[str, ...]) -> None:
    verdict = Verdict({"py_blocks": blocks,
                       "malloc": judged("malloc", 4144.0, 4112.0, Status.FAIL)})
    slopes = growing(verdict)
    assert tuple(name for name, _ in slopes) == expected
    assert filling(dict(slopes)) is (expected == ("malloc",))
    # Nothing failing: nothing read, growing or not.
    assert growing(Verdict({"py_blocks": blocks})) == ()
