"""Sample storage: thinned in place when an auto run outgrows it, never reallocated."""

from __future__ import annotations

import numpy as np

from pytest_membudget.judge.spec import build_spec
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.measure.stride import Stride
from pytest_membudget.probes import Probe
from pytest_membudget.settings import default_run


class Constant(Probe):
    name = "threads"

    def read(self) -> float:
        return 1.0


def storage(capacity: int) -> Measurement:
    spec = build_spec(default_run(), (), {"threads": 0}, "in test")
    return Measurement(spec, {"threads": Constant()}, capacity)


def fill(m: Measurement, window_row: int, rows: int) -> None:
    m.x[:rows] = np.arange(rows) * 10
    m.values[:rows, 0] = np.arange(rows) * 100.0
    m.window_row, m.rows = window_row, rows


def test_thinning_keeps_every_other_window_sample_and_the_warm_up_whole() -> None:
    m = storage(40)
    fill(m, window_row=3, rows=40)
    x_before, values_before = m.x.copy(), m.values.copy()
    assert not m.fits(1) and m.thin()
    assert m.rows == 3 + 19  # 37 window samples -> 19: the 1st, 3rd, ..., 37th
    assert list(m.x[:3]) == list(x_before[:3])
    assert list(m.x[3:m.rows]) == list(x_before[3:40:2])
    assert list(m.values[3:m.rows, 0]) == list(values_before[3:40:2, 0])
    assert m.fits(18) and not m.fits(19)


def test_thinning_reuses_the_same_arrays() -> None:
    m = storage(2000)
    fill(m, window_row=6, rows=2000)
    x, values = m.x, m.values
    while m.thin():
        assert m.x is x and m.values is values
        assert np.all(np.diff(m.x[6:m.rows]) > 0)
    assert m.rows - 6 <= 2


def test_the_stride_widens_with_the_thinned_samples() -> None:
    stride = Stride(1e-3, most=31)
    stride.calibrate(1e-6)
    assert stride.every == 1
    assert stride.thinned() == 2 and stride.thinned() == 4
    # Cheap samples would ask for a stride of 1: it stays at the thinned spacing.
    stride.sampled(1e-6, 1e-3)
    assert stride.rethink(measured=10) == 4
    # And it may grow past the most a run without thinning allows.
    for _ in range(4):
        stride.thinned()
    assert stride.every == 64 > stride.most
