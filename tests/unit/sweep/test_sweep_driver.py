"""The sweep's driver on plain callables: the screen, the full verdict on what it flags, the
time it allows itself, and the repeats that stop it. Its flag and parsing are at the end."""

from __future__ import annotations

import collections
import mmap
import time
from collections.abc import Callable

import pytest

from pytest_membudget.judge.policy import CONFIRM_GROWTH, MIN_VERDICT_ITERATIONS, SHORTEST_SECONDS
from pytest_membudget.judge.screen import (
    EXACT_SECONDS,
    SCREEN_CALLS,
    SCREEN_WARMUP,
    SLOW_CALL,
    STEADY_PROBES,
    reading_points,
)
from pytest_membudget.judge.spec import SpecError
from pytest_membudget.settings import bind_bare_sweep_flag, default_run, parse_sweep
from pytest_membudget.sweep.driver import confirmation_policy, full_spec, sweep_test
from pytest_membudget.sweep.outcome import SweepOutcome
from pytest_membudget.sweep.table import cut_short_text
from pytest_membudget.vocabulary import CutShort, NotRepeatable, SweepMode, SweepVerdict

#: Blocks a growing call of these bodies keeps where the test needs the screen to see growth
#: on that call: two, not one. On CPython 3.10 a block that was alive at a window's first
#: sample is freed now and then during its first calls (a 64-byte one, found with
#: sys._debugmallocstats; 4-26% of screens after a varied heap churn, none on 3.11-3.13),
#: and one block kept on such a call then reads as a delta of 0.
SEEN = 2


def keep_seen(kept: list[object]) -> None:
    """Keep SEEN new objects (a block each; ``kept`` is sized beforehand or small)."""
    for _ in range(SEEN):
        kept.append(object())


def sweep(body, *, allowed: float = 10.0, first_call: float = 0.0,  # type: ignore[no-untyped-def]
          most: float | None = None):
    return sweep_test(body, run=default_run(evidence=False), defaults=(),
                      first_call=first_call, allowed=allowed, bound=CutShort.SWEEP_SECONDS,
                      catch=(Exception,), classify=lambda error: NotRepeatable.RAISED,
                      most=most)


def test_a_clean_body_is_screened_only() -> None:
    outcome = sweep(lambda: sum(range(100)))
    assert outcome.verdict is SweepVerdict.CLEAN and outcome.result is None
    # Nothing moved in the first half of the screen: it stops there.
    assert outcome.calls == SCREEN_WARMUP + reading_points(SCREEN_CALLS)[0]
    assert outcome.flagged == {}


def test_a_screen_goes_on_while_growth_could_still_be_flagged() -> None:
    kept: list[object] = []

    def filling() -> None:  # SEEN blocks on each of its first 7 calls, then none
        if len(kept) < 7 * SEEN:
            keep_seen(kept)

    outcome = sweep(filling)
    assert outcome.verdict is SweepVerdict.CLEAN and outcome.flagged == {}
    # Every delta grew at the first two reading points (after 2 and 4 measured calls; the
    # warm-up took the first two blocks): the screen went on, and stopped at the third,
    # after the growth ended.
    assert reading_points(SCREEN_CALLS) == (2, 4, 6)
    assert outcome.calls == SCREEN_WARMUP + 6


def test_a_slow_test_is_read_after_its_first_measured_call_too() -> None:
    # Its own first call took SLOW_CALL or more: a clean body stops after one measured call.
    outcome = sweep(lambda: sum(range(100)), first_call=SLOW_CALL)
    assert outcome.verdict is SweepVerdict.CLEAN and outcome.flagged == {}
    assert outcome.calls == SCREEN_WARMUP + 1
    # Just under it, the screen reads first after two.
    outcome = sweep(lambda: sum(range(100)), first_call=SLOW_CALL * 0.99)
    assert outcome.calls == SCREEN_WARMUP + 2


def test_a_slow_test_that_leaks_is_flagged_with_the_delta_after_its_first_reading_judged(
        ) -> None:
    kept: list[object] = []
    outcome = sweep(lambda: kept.append([[]]), first_call=SLOW_CALL)
    assert "py_blocks" in outcome.flagged and outcome.verdict is SweepVerdict.LEAK

    growth = [0]
    # Its own list, sized beforehand: a list that grows reallocates now and then, which
    # malloc reads as growth on a call that keeps nothing.
    held: list[object] = [None] * (4 * SEEN)

    def stops_after_the_first_measured_call() -> None:  # grows on the warm-up and 1st call
        growth[0] += 1
        if growth[0] <= 3:
            for slot in range(SEEN):
                held[growth[0] * SEEN + slot] = object()

    # The first reading saw growth; the second (after two calls) sees it stopped. Had the
    # delta after the first reading been left out, as after the others, the rule would have
    # judged the first delta alone, and flagged it. The screen stops at the second reading
    # where nothing else in the process allocated during those calls; under pytest-xdist its
    # channel's thread may (measured: 1 sweep in 5 audit runs of -n 2 read on to 6 calls, as
    # a screen should when a delta moved), so the stop is looked for in up to three sweeps.
    calls = []
    for _ in range(3):
        growth[0] = 0
        held[:] = [None] * len(held)
        outcome = sweep(stops_after_the_first_measured_call, first_call=SLOW_CALL)
        assert outcome.verdict is SweepVerdict.CLEAN and outcome.flagged == {}
        calls.append(outcome.calls)
        if outcome.calls == SCREEN_WARMUP + 2:
            break
    assert calls[-1] == SCREEN_WARMUP + 2, calls


def test_a_descriptor_that_moved_keeps_the_screen_to_its_full_length() -> None:
    import os

    held: list[int] = []

    def churn() -> None:  # opens a descriptor on one call, closes it on the next
        if held:
            os.close(held.pop())
        else:
            held.append(os.open(os.devnull, os.O_RDONLY))

    try:
        outcome = sweep(churn)
    finally:
        for fd in held:
            os.close(fd)
    assert outcome.verdict is SweepVerdict.CLEAN
    assert outcome.calls == SCREEN_WARMUP + SCREEN_CALLS


def test_a_leak_is_flagged_and_confirmed() -> None:
    kept: list[object] = []
    # Three blocks a call: an empty list alone may come from the interpreter's free list,
    # which earlier tests in the process may have filled (see below).
    outcome = sweep(lambda: kept.append([[]]))
    assert outcome.verdict is SweepVerdict.LEAK
    assert "py_blocks" in outcome.flagged
    assert outcome.result is not None and not outcome.result.passed
    assert outcome.calls == len(kept) > 100  # the screen's ten and the full verdict's
    summary = outcome.to_dict()["leaks"]
    assert {p["probe"] for p in summary["probes"]} <= set(outcome.flagged)


def test_a_repeat_that_raises_stops_the_sweep() -> None:
    calls: list[int] = []

    def once() -> None:
        calls.append(1)
        assert len(calls) < 4, "called too often"

    outcome = sweep(once)
    assert outcome.verdict is SweepVerdict.NOT_REPEATABLE
    assert outcome.reason is NotRepeatable.RAISED and outcome.failed_call == 4
    assert outcome.detail == "AssertionError: called too often"  # the message's first line


def test_a_body_too_slow_for_the_screen_is_not_started() -> None:
    calls: list[int] = []
    outcome = sweep(lambda: calls.append(1), allowed=1.0, first_call=0.2)
    assert outcome.verdict is SweepVerdict.CUT_SHORT and calls == []


def test_the_flag_before_a_path_and_the_modes() -> None:
    args = ["--membudget-sweep", "tests/", "-q"]
    bind_bare_sweep_flag(args)
    assert args == ["--membudget-sweep=fail", "tests/", "-q"]
    for kept in (["--membudget-sweep", "report", "x"], ["--membudget-sweep", "-q"],
                 ["--membudget-sweep"], ["--", "--membudget-sweep", "x"]):
        before = list(kept)
        bind_bare_sweep_flag(kept)
        assert kept == before
    assert parse_sweep("fail", "") is SweepMode.FAIL
    assert parse_sweep("true", "") is SweepMode.FAIL
    assert parse_sweep("report", "") is SweepMode.REPORT
    assert parse_sweep("", "") is SweepMode.OFF
    with pytest.raises(SpecError, match="looks like a path"):
        parse_sweep("tests/unit", "from --membudget-sweep")


def test_an_empty_body_reads_flat_from_the_first_call() -> None:
    """The screen's rule reads every delta, the first one too: the runner's own bookkeeping
    must not add a block or an object to the first iterations of the window."""
    import numpy as np

    from pytest_membudget.sweep.driver import drive, repeat
    from pytest_membudget.sweep.screen import ScreenMeasurement, screen_spec

    spec = screen_spec(default_run(), 12)
    for _ in range(3):
        done = drive(repeat(spec, ("py_blocks", "gc_objects"), (), storage=ScreenMeasurement),
                     lambda: None)
    series = done.measurement.window()[1]
    assert {name: np.diff(values).tolist() for name, values in series.items()} == {
        "py_blocks": [0.0] * 12, "gc_objects": [0.0] * 12}


#: A first judgement at the default min_iterations (64), confirmed at twice that.
CONFIRMED_AT = CONFIRM_GROWTH * 64


def test_steady_growth_of_an_exact_counter_is_confirmed_on_fewer_calls() -> None:
    spec = full_spec(default_run(), {"py_blocks": 3.0}, (), 10.0)
    assert confirmation_policy(spec, {"py_blocks": 3.0}).shortest == CONFIRMED_AT
    assert confirmation_policy(spec, {"py_blocks": 3.0, "malloc": 90.0}).shortest == (
        CONFIRMED_AT)
    # Beside a coarse probe too: every flagged probe is judged on the shorter run.
    beside = confirmation_policy(spec, {"py_blocks": 3.0, "rss": 4096.0})
    assert (beside.shortest, beside.shortest_seconds) == (CONFIRMED_AT, EXACT_SECONDS)
    # Without an exact counter, the shortest verdict of a marked test.
    coarse = confirmation_policy(spec, {"threads": 1.0, "rss": 4096.0})
    assert (coarse.shortest, coarse.shortest_seconds) == (
        MIN_VERDICT_ITERATIONS, SHORTEST_SECONDS)


def seen_while_screened(kept: list[object]) -> None:
    """One block a call, but SEEN on each of the first screen's calls."""
    if len(kept) < (SCREEN_WARMUP + SCREEN_CALLS) * SEEN:
        keep_seen(kept)
    else:  # the second screen's calls and the full verdict's
        kept.append(object())


@pytest.mark.parametrize(("keep", "most"), [
    # three blocks a call: plain at the first judgement
    (lambda kept: kept.append([[]]), CONFIRMED_AT),
    # one block a call: 64 of them need 128 calls. object(), not []: empty lists come from
    # the interpreter's free list first, which earlier tests in the process may have filled,
    # and a call served from it allocates no block (the screen then sees no growth).
    (seen_while_screened, MIN_VERDICT_ITERATIONS // 2),
])
def test_a_python_leak_is_confirmed_on_fewer_calls_than_a_marked_test(
        keep: Callable[[list[object]], None], most: int) -> None:
    kept: list[object] = []
    outcome = sweep(lambda: keep(kept))
    assert outcome.verdict is SweepVerdict.LEAK and set(outcome.flagged) <= STEADY_PROBES
    assert outcome.result is not None and outcome.result.iterations <= most


@pytest.mark.parametrize("size", [40, 90])
def test_a_buffer_that_stops_filling_soon_after_the_screen_is_no_leak(size: int) -> None:
    buffer: collections.deque[object] = collections.deque(maxlen=size)
    outcome = sweep(lambda: buffer.append([]))
    assert outcome.verdict is not SweepVerdict.LEAK, outcome.to_dict()


@pytest.fixture
def type_cache():  # type: ignore[no-untyped-def]
    """The process's type cache, disarmed before and after the test: the driver arms it for
    a test's repeats, and these bodies run without the housekeeping that disarms it
    (sweep/housekeeping.py)."""
    from pytest_membudget.sweep.typecache import TYPE_CACHE

    TYPE_CACHE.refill()
    yield TYPE_CACHE
    TYPE_CACHE.refill()


def test_growth_the_type_cache_holds_is_not_flagged(
        type_cache) -> None:  # type: ignore[no-untyped-def]
    # The interpreter's cache, filled by names built per call, keeps or frees them by where
    # they were allocated: its growth is erratic. Here a list stands in for it, emptied
    # whenever the sweep clears the cache after a call.
    held: list[object] = []

    def body() -> None:  # three blocks a call until the cache is cleared
        held.append((object(), object()))
        if type_cache.armed:
            held.clear()
        type_cache.after_call()

    outcome = sweep(body)
    assert type_cache.armed and not outcome.flagged, outcome.to_dict()
    assert outcome.verdict is SweepVerdict.CLEAN and outcome.result is None
    # The screen's calls alone, ended at its first reading point: no full verdict.
    assert outcome.calls == SCREEN_WARMUP + reading_points(SCREEN_CALLS)[0]


def test_a_leak_of_blocks_is_flagged_and_confirmed_with_the_cache_cleared(
        type_cache) -> None:  # type: ignore[no-untyped-def]
    kept: list[object] = []

    def body() -> None:  # three blocks a call: plain on every call whatever the cache frees
        try:
            kept.append((object(), object()))
        finally:
            type_cache.after_call()

    outcome = sweep(body)
    assert type_cache.cleared and "py_blocks" in outcome.flagged
    assert outcome.verdict is SweepVerdict.LEAK


def test_the_verbose_list_says_how_a_flagged_test_was_cleared() -> None:
    from pytest_membudget.sweep.table import passed_text

    assert passed_text({"flagged": {"py_blocks": 8.0}}) == (
        "py_blocks; no leak on the full verdict")
    assert passed_text({"flagged": {"rss": 4096.0}}) == "rss; no leak on the full verdict"


# Heavy steps: a flagged test whose verdict does not fit in the sweep's time at its pace.


def probe_verdicts(outcome: SweepOutcome) -> dict[str, object]:
    """Each probe's verdict, slope and bounds in the full verdict, and how it stopped: what a
    failed assertion needs to show (the outcome's dict is cut short in pytest's message)."""
    result = outcome.result
    if result is None:
        return {"calls": outcome.calls}
    return {"stopped": result.stopped.value, "iterations": result.iterations,
            **{name: (p.verdict.value, round(p.slope, 3), p.ci)
               for name, p in result.probes.items()}}


def slow(seconds: float, then: Callable[[], object] = lambda: None) -> Callable[[], None]:
    def body() -> None:
        time.sleep(seconds)
        then()

    return body


def test_a_heavy_leak_is_given_the_time_its_verdict_needs() -> None:
    kept: list[object] = []
    outcome = sweep(slow(0.012, lambda: kept.append([[]])), allowed=0.4, first_call=0.012,
                    most=10.0)
    assert outcome.verdict is SweepVerdict.LEAK, outcome.to_dict()
    assert outcome.bound is CutShort.HEAVY and 0.4 < outcome.allowed <= 10.0
    assert outcome.seconds <= outcome.allowed + 0.5  # the evidence is off here
    assert outcome.to_dict()["needed"] == pytest.approx(outcome.allowed, abs=1e-3)


def test_without_room_to_grow_a_heavy_leak_is_cut_short_with_the_time_it_needs() -> None:
    kept: list[object] = []
    for most in (None, 0.6):  # none allowed; less than the verdict needs
        outcome = sweep(slow(0.012, lambda: kept.append([[]])), allowed=0.4,
                        first_call=0.012, most=most)
        assert outcome.verdict is SweepVerdict.CUT_SHORT, outcome.to_dict()
        assert outcome.bound is CutShort.SWEEP_SECONDS and outcome.allowed == 0.4
        assert outcome.needed > 1.0
        text = cut_short_text(outcome.to_dict())
        assert "a verdict at its pace needs about" in text and "0.4 s" in text, text


def test_a_heavy_buffer_that_stops_filling_after_the_screen_is_no_leak() -> None:
    buffer: collections.deque[object] = collections.deque(maxlen=25)
    outcome = sweep(slow(0.012, lambda: buffer.append([[]])), allowed=0.4, first_call=0.012,
                    most=10.0)
    assert "py_blocks" in outcome.flagged, outcome.to_dict()
    assert outcome.verdict is SweepVerdict.PASSED, outcome.to_dict()


def test_a_light_leak_keeps_the_sweeps_own_time() -> None:
    kept: list[object] = []
    outcome = sweep(lambda: kept.append([[]]), allowed=2.0, most=10.0)
    assert outcome.verdict is SweepVerdict.LEAK
    assert outcome.bound is CutShort.SWEEP_SECONDS and outcome.allowed == 2.0


def test_a_heavy_bounded_cache_still_filling_is_inconclusive_and_named() -> None:
    import functools
    import itertools

    @functools.lru_cache(maxsize=400)
    def entry(key: int) -> list[object]:
        return [[key]]

    keys = itertools.count()
    outcome = sweep_test(slow(0.012, lambda: entry(next(keys))), run=default_run(),
                         defaults=(), first_call=0.012, allowed=0.4,
                         bound=CutShort.SWEEP_SECONDS, catch=(Exception,),
                         classify=lambda error: NotRepeatable.RAISED, most=10.0)
    assert outcome.verdict is SweepVerdict.INCONCLUSIVE, outcome.to_dict()
    [cache] = outcome.to_dict()["held_by"]
    assert cache["kind"] == "functools.lru_cache" and cache["maxsize"] == 400


def test_a_heavy_buffer_filled_before_the_verdict_is_passed_on_malloc_where_rss_stays_open(
        ) -> None:
    import numpy as np

    from pytest_membudget.sweep.screen import screen_probes

    if "malloc" not in screen_probes():
        pytest.skip("malloc needs glibc's mallinfo2")
    kept: list[object] = []

    def fill() -> None:
        # 64 KiB from malloc, and 64 KiB of fresh pages: the screen keeps glibc's free memory
        # (sweep.driver.ScreenMeasurement), which the buffers alone could reuse unseen by RSS.
        if len(kept) < 22:
            pages = mmap.mmap(-1, 65536)
            pages.write(b"x" * 65536)
            kept.extend((np.ones(8192), pages))

    outcome = sweep(slow(0.012, fill), allowed=0.4, first_call=0.012, most=10.0)
    assert {"malloc", "rss"} <= set(outcome.flagged), outcome.to_dict()
    assert outcome.verdict is SweepVerdict.PASSED, (outcome.verdict, probe_verdicts(outcome))


# A second look at growth the screen saw on malloc alone.


def native_bytes() -> Callable[[int], None]:
    """A body that takes ``size`` bytes from glibc's malloc and never frees them, its
    pointers kept in C memory (no Python object per call). Above glibc's per-thread cache
    (1,032 B): a chunk served from that cache was in use for mallinfo2 already, and its
    bytes in use would not move."""
    import ctypes
    import ctypes.util

    from pytest_membudget.sweep.screen import screen_probes

    if "malloc" not in screen_probes():
        pytest.skip("malloc needs glibc's mallinfo2")
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    kept = (ctypes.c_void_p * 4096)()
    state = [0]

    def take(size: int) -> None:
        kept[state[0] % 4096] = libc.malloc(size)
        state[0] += 1

    return take


def test_a_native_leak_is_looked_at_again_and_then_judged() -> None:
    take = native_bytes()
    outcome = sweep(lambda: take(1600))
    assert set(outcome.flagged) == {"malloc"}, outcome.to_dict()
    look = outcome.second_look
    assert look is not None and look.goes_on and look.every_call, outcome.to_dict()
    assert outcome.verdict is SweepVerdict.LEAK, probe_verdicts(outcome)


def test_native_growth_that_stops_after_the_screen_passes_on_a_second_look() -> None:
    take = native_bytes()
    calls = [0]

    def fill() -> None:
        # 1,600 B a call through the screen's warm-up and its calls, then nothing: a cache
        # of native memory that is full.
        calls[0] += 1
        if calls[0] <= SCREEN_WARMUP + SCREEN_CALLS:
            take(1600)

    outcome = sweep(fill)
    assert set(outcome.flagged) == {"malloc"}, outcome.to_dict()
    look = outcome.second_look
    assert look is not None and not look.goes_on, outcome.to_dict()
    assert outcome.verdict is SweepVerdict.PASSED and outcome.result is None
    # The screen's calls, then the second look's (one unread, as the screen's), and no
    # full verdict.
    assert outcome.calls == SCREEN_WARMUP + 2 * SCREEN_CALLS + 1
    assert outcome.to_dict()["second_look"]["full_verdict"] is False


def screened_then(take: Callable[[int], None], after: Callable[[int], bool]
                  ) -> Callable[[], None]:
    """A body that takes 1,600 B on each call of the screen's warm-up and calls, then two
    such chunks on each call ``n`` (counted from the first after the screen, each round of
    the second look's unread call first) where ``after(n)`` holds: on every second call,
    the screen's rate, never on every call."""
    calls = [0]

    def body() -> None:
        calls[0] += 1
        n = calls[0] - (SCREEN_WARMUP + SCREEN_CALLS)
        if n <= 0:
            take(1600)
        elif after(n):
            take(1600)
            take(1600)

    return body


def test_growth_that_keeps_its_rate_on_the_first_round_only_passes_on_the_second() -> None:
    take = native_bytes()
    # The first round of the look keeps the screen's rate on every second call; the second
    # reads nothing: a fill that ended within the first round.
    outcome = sweep(screened_then(take, lambda n: n <= SCREEN_CALLS and n % 2 == 0))
    assert set(outcome.flagged) == {"malloc"}, outcome.to_dict()
    look = outcome.second_look
    assert look is not None and not look.goes_on and not look.every_call, outcome.to_dict()
    assert len(look.rounds) == 2 and look.rounds[0] >= 0.5 * look.first, look
    assert look.rounds[1] < 0.5 * look.rounds[0], look
    assert outcome.verdict is SweepVerdict.PASSED and outcome.result is None
    assert outcome.calls == SCREEN_WARMUP + 3 * SCREEN_CALLS + 2


def test_growth_that_keeps_its_rate_on_both_rounds_gets_the_full_verdict() -> None:
    take = native_bytes()
    # A native leak of the screen's rate that comes in bursts after it: never on every
    # call, so both rounds are made, and the full verdict confirms it.
    outcome = sweep(screened_then(take, lambda n: n % 2 == 0))
    look = outcome.second_look
    assert look is not None and look.goes_on and not look.every_call, outcome.to_dict()
    assert len(look.rounds) == 2, look
    assert outcome.verdict is SweepVerdict.LEAK, probe_verdicts(outcome)


def test_a_second_round_is_not_started_without_the_time_for_it() -> None:
    take = native_bytes()
    leak = screened_then(take, lambda n: n % 2 == 0)

    def slow_leak() -> None:
        time.sleep(0.01)
        leak()

    # Ten screened calls and eight looked at take over 0.18 s: a second round would pass
    # half of the allowed 0.3 s, so the test goes on as the first round left it.
    outcome = sweep(slow_leak, allowed=0.3)
    look = outcome.second_look
    assert look is not None and len(look.rounds) == 1 and look.goes_on, outcome.to_dict()
    assert outcome.verdict is not SweepVerdict.PASSED, outcome.to_dict()


def test_the_verbose_list_says_a_second_look_cleared_a_test() -> None:
    from pytest_membudget.sweep.table import passed_text

    record = {"flagged": {"malloc": 768.0},
              "second_look": {"probe": "malloc", "first_per_call": 96.0,
                              "then_per_call": 0.0, "every_call": False,
                              "full_verdict": False}}
    assert passed_text(record) == (
        "malloc; its growth stopped on a second look (96 B/call on the screen, 0 B/call then)")
    record["second_look"].update(rounds_per_call=[64.0, 0.0])
    assert passed_text(record) == (
        "malloc; its growth stopped on a second look (96 B/call on the screen, 64 B/call, "
        "0 B/call then)")
