"""The evidence's deadlines: one per kind of evidence, each step's time its share of the
deadline at hand, and a step whose estimated cost does not fit what is left skipped."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from pytest_membudget.evidence import steps
from pytest_membudget.evidence.peak import PeakCensus
from pytest_membudget.evidence.steps import Deadline


def test_each_step_gets_its_share_of_its_kinds_deadline() -> None:
    growth, footprint = Deadline(10.0), Deadline(10.0, "footprint")
    assert growth.seconds == steps.EVIDENCE_SECONDS["growth"]
    assert footprint.seconds == steps.EVIDENCE_SECONDS["footprint"]
    assert set(steps.SHARE) == steps.STEPS["growth"] | steps.STEPS["footprint"]
    assert not steps.STEPS["growth"] & steps.STEPS["footprint"]
    for step in steps.STEPS["growth"]:
        assert growth.seconds_for(step) == steps.SHARE[step] * steps.EVIDENCE_SECONDS["growth"]
    for fstep in steps.STEPS["footprint"]:
        share = steps.SHARE[fstep]
        assert footprint.seconds_for(fstep) == share * steps.EVIDENCE_SECONDS["footprint"]
        assert footprint.until(fstep) == 10.0 + share * steps.EVIDENCE_SECONDS["footprint"]
    assert growth.end == 10.0 + steps.EVIDENCE_SECONDS["growth"]


def test_the_shares_keep_the_limits_the_steps_had() -> None:
    """The limits that were constants of their own: the retaining-path search from a
    probe's objects (1 s), the cut of the peak's traced call (0.8 s) and its census's
    copies (0.3 s)."""
    assert Deadline(0.0).seconds_for("path_from") == pytest.approx(1.0)
    assert Deadline(0.0, "footprint").until("tracing") == pytest.approx(0.8)
    assert Deadline(0.0, "footprint").seconds_for("copies") == pytest.approx(0.3)


def test_a_share_follows_the_deadline_at_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(steps.EVIDENCE_SECONDS, "footprint", 60.0)
    monkeypatch.setitem(steps.EVIDENCE_SECONDS, "growth", 0.2)
    assert Deadline(0.0, "footprint").seconds_for("copies") == pytest.approx(18.0)
    assert Deadline(0.0).seconds_for("path_from") == pytest.approx(0.25)
    assert steps.seconds("whole_listing") == pytest.approx(0.0625)


def test_a_step_of_another_kind_has_no_share() -> None:
    with pytest.raises(KeyError, match="'copies' is no step of the growth evidence"):
        Deadline(0.0).seconds_for("copies")
    with pytest.raises(KeyError, match="'rerun' is no step of the footprint evidence"):
        Deadline(0.0, "footprint").share("rerun")


def test_a_step_whose_cost_does_not_fit_what_is_left_is_skipped() -> None:
    now = Deadline(time.perf_counter(), "footprint")  # about 1 s left
    assert now.fits(0.5, "tracing") and now.fits(0.9)
    assert not now.fits(0.9, "tracing")  # past its share of what is left
    assert not now.fits(1.5)
    spent = Deadline(time.perf_counter() - 2.0, "footprint")
    assert not spent.fits(0.0) and spent.left() < 0


def test_the_census_copies_no_more_once_its_share_is_spent() -> None:
    """Past ``copying`` seconds of copies, a higher traced total is not copied again (the
    call's end still is: its copy is the last word)."""
    if tracemalloc.is_tracing():
        pytest.skip("a tracer of the session's own")
    tracemalloc.start()
    try:
        spent = PeakCensus(least=1.0, copying=-1.0)
        held = bytearray(1024 * 1024)
        spent.tick()
        fresh = PeakCensus(least=1.0, copying=Deadline(0.0, "footprint").seconds_for("copies"))
        fresh.tick()
        del held
    finally:
        tracemalloc.stop()
    assert spent.copies == 0 and spent.snapshot is None
    assert fresh.copies == 1 and fresh.snapshot is not None
