"""What would settle an inconclusive budget, and the line that says so."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_membudget.measure.results import (
    BudgetOutcome,
    MembudgetResult,
    ProbeResult,
    remedies_for,
)
from pytest_membudget.render.session import inconclusive_lines
from pytest_membudget.vocabulary import BudgetKind, ProbeVerdict, Remedy, Status, StopReason


def result(stopped: StopReason, *, probes: tuple[str, ...] = ("rss",), iterations: int = 2000,
           max_iterations: int | None = None, complete: bool = True) -> MembudgetResult:
    def probe(name: str) -> ProbeResult:
        outcome = BudgetOutcome(name, BudgetKind.SLOPE, 0.0, Status.AMBIGUOUS, 40.0)
        return ProbeResult(name, "B", 40.0, (-3.0, 90.0), 5e7, 1e4, np.zeros(3),
                           np.zeros(3, dtype=np.int64), ProbeVerdict.INCONCLUSIVE,
                           outcomes=(outcome,))
    return MembudgetResult(iterations, 5, stopped, 60.2, {n: probe(n) for n in probes},
                           complete=complete,
                           settings={"max_iterations": max_iterations, "max_seconds": 60.0})


def test_an_auto_run_out_of_time_needs_more_time_and_rss_an_exact_probe() -> None:
    (unsettled,) = result(StopReason.CAP).unsettled
    assert unsettled.remedies == (Remedy.MAX_SECONDS, Remedy.EXACT_PROBE)
    assert unsettled.probes == ("py_blocks", "malloc")


def test_an_auto_run_at_its_cap_needs_a_higher_cap() -> None:
    (unsettled,) = result(StopReason.CAP, max_iterations=2000).unsettled
    assert unsettled.remedies[0] is Remedy.MAX_ITERATIONS


def test_a_fixed_run_needs_more_iterations_and_exact_probes_already_budgeted_are_not_offered(
        ) -> None:
    unsettled = result(StopReason.FIXED, probes=("rss", "py_blocks")).unsettled
    rss = next(u for u in unsettled if u.outcome.probe == "rss")
    assert rss.remedies == (Remedy.ITERATIONS, Remedy.EXACT_PROBE) and rss.probes == ("malloc",)
    blocks = next(u for u in unsettled if u.outcome.probe == "py_blocks")
    assert blocks.remedies == (Remedy.ITERATIONS,)  # an exact probe: nothing finer to offer


def test_a_run_cut_short_is_unjudged_not_inconclusive() -> None:
    assert result(StopReason.RUNNING, complete=False).unsettled == []


def test_remedies_keep_the_outcome() -> None:
    r = result(StopReason.CAP)
    outcome = r["rss"].outcomes[0]
    assert remedies_for(outcome, r).outcome is outcome


@pytest.mark.parametrize(("stopped", "cap", "text"), [
    (StopReason.CAP, None, "settle it with more time (max_seconds=120; it ran out of its 60 s); "
                           "or an exact probe beside it: py_blocks=0 for Python objects or "
                           "malloc=0 for native memory"),
    (StopReason.CAP, 2000, "a higher max_iterations (it stopped at 2000), or "
                           "max_iterations='none' to let max_seconds decide"),
    (StopReason.FIXED, None, "a longer run (iterations=4000) or iterations='auto'"),
])
def test_the_line_names_the_test_the_budget_and_the_remedies(stopped: StopReason,
                                                             cap: int | None, text: str) -> None:
    data = result(stopped, max_iterations=cap).to_dict(samples=False)
    (line,) = inconclusive_lines("t.py::test_x", data)
    assert line.startswith("t.py::test_x: rss=0 B/iter inconclusive (measured 40 B/iter) after "
                           "2000 iterations")
    assert text in line
