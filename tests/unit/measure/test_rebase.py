"""A judgement inside the window runs no iteration of the workload, but leaves memory behind
(the interpreter's free lists, numpy's small-buffer cache): the loop takes what it leaves out
of the probes of the process's memory, so that it never reads as the workload's growth."""

from __future__ import annotations

import time

import numpy as np
import pytest

from pytest_membudget.judge.spec import build_spec
from pytest_membudget.measure.loop import capacity_for, measure
from pytest_membudget.measure.results import build_result
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.probes import Probe
from pytest_membudget.settings import default_run

#: What each judgement leaves behind, in each probe's unit.
LEFT = 40.0


class Counter(Probe):
    """Reads a count that only the judgements below move."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.count = 1000.0

    def read(self) -> float:
        return self.count


def run(monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]) -> tuple[Measurement, int]:
    spec = build_spec(default_run(max_seconds=600.0, gc="off", evidence=False), (),
                      dict.fromkeys(names, 0), "in test")
    probes: dict[str, Probe] = {name: Counter(name) for name in names}
    judged = 0
    facts = Measurement.facts

    def leaving(m: Measurement, *args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal judged
        judged += 1
        for probe in probes.values():
            probe.count += LEFT  # type: ignore[attr-defined]
        return facts(m, *args, **kwargs)

    # Each judgement reads the window's facts once.
    monkeypatch.setattr(Measurement, "facts", leaving)
    m = Measurement(spec, probes, capacity_for(spec))
    for _ in measure(spec, probes, m):
        until = time.perf_counter() + 0.0002
        while time.perf_counter() < until:
            pass
    return m, judged


def test_what_a_judgement_leaves_in_the_heap_is_no_growth(
        monkeypatch: pytest.MonkeyPatch) -> None:
    m, judged = run(monkeypatch, ("py_blocks", "malloc"))
    assert judged >= 3  # checkpoints inside the window, then the final verdict
    _, series = m.window()
    for name, y in series.items():
        # Flat across every checkpoint: the window's samples differ by nothing.
        assert np.ptp(y) == 0.0, (name, np.unique(np.diff(y)))
    assert build_result(m).passed


def test_a_probe_the_judgement_cannot_move_is_left_as_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Threads are not memory objects: a judgement starts none, so their readings stay raw.
    m, judged = run(monkeypatch, ("threads",))
    _, series = m.window()
    steps = np.diff(series["threads"])
    # A step after each judgement that a sample followed (not the last, after the window).
    assert 1 <= np.count_nonzero(steps) <= judged - 1
    assert set(steps[steps != 0]) == {LEFT}


def test_a_judgements_temporaries_are_not_the_workloads_peak(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_membudget.probes.heap import HeapProbe

    spec = build_spec(default_run(max_seconds=600.0, evidence=False), (), {"heap": 0},
                      "in test")
    facts = Measurement.facts

    def with_temporaries(m: Measurement, *args, **kwargs):  # type: ignore[no-untyped-def]
        scratch = bytearray(16 * 1024**2)  # traced, and freed before the next iteration
        del scratch
        return facts(m, *args, **kwargs)

    monkeypatch.setattr(Measurement, "facts", with_temporaries)
    probes: dict[str, Probe] = {"heap": HeapProbe()}
    m = Measurement(spec, probes, capacity_for(spec))
    for _ in measure(spec, probes, m):
        pass
    result = build_result(m)
    assert result.passed
    # The peak is the workload's: a few KiB above the samples, not the judgement's 16 MiB.
    assert result["heap"].peak < float(m.values[: m.rows, 0].max()) + 1024**2
