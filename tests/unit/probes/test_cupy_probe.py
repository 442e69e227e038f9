"""The cupy_* probes on the stand-in of tests/support/fake_cupy.py, which follows CuPy's
pools and memory hooks."""

from __future__ import annotations

import sys

import pytest
from support import fake_cupy

from pytest_membudget.probes import create


@pytest.fixture
def cupy(monkeypatch: pytest.MonkeyPatch):
    module = fake_cupy.make()
    monkeypatch.setitem(sys.modules, "cupy", module)
    yield module
    for probe in STARTED:
        probe.stop()
    STARTED.clear()


STARTED: list = []


def started(*names: str):
    probes = {name: create(name, {}) for name in names}
    for probe in probes.values():
        assert probe.unavailable() is None
        probe.start()
        STARTED.append(probe)
    return probes


def test_used_total_and_free_blocks(cupy) -> None:
    probes = started("cupy_used", "cupy_total", "cupy_free_blocks", "cupy_pinned_free_blocks")
    pool = cupy.get_default_memory_pool()
    kept = pool.malloc(1000)  # rounded to 1024
    pool.malloc(4096).free()  # cached: held, free
    cupy.get_default_pinned_memory_pool().free_blocks = 2
    values = {name: probe.read() for name, probe in probes.items()}
    assert values == {"cupy_used": 1024, "cupy_total": 1024 + 4096, "cupy_free_blocks": 1,
                      "cupy_pinned_free_blocks": 2}
    kept.free()
    for probe in probes.values():
        probe.stop()


def test_the_hook_s_high_water_mark_sees_a_peak_inside_a_call(cupy) -> None:
    (probe,) = started("cupy_used").values()
    pool = cupy.get_default_memory_pool()
    pool.malloc(64 * 1024 * 1024).free()  # freed before the sample
    probe.after_sample()
    assert probe.read() == 0
    assert probe.peak() == 64 * 1024 * 1024
    probe.stop()


def test_blocks_of_the_window_still_in_use_by_line(cupy) -> None:
    (probe,) = started("cupy_used").values()
    pool = cupy.get_default_memory_pool()
    before = pool.malloc(512)  # before the window: not the window's growth
    probe.before_window()
    kept = [pool.malloc(2048) for _ in range(3)]
    pool.malloc(512).free()
    rows = probe.evidence()["cupy"]["rows"]
    assert [(row["file"], row["count"], row["bytes"]) for row in rows] == [
        (__file__, 3, 3 * 2048)]
    probe.stop()
    assert kept and before


def test_the_hook_leaves_with_the_last_probe(cupy) -> None:
    probes = started("cupy_used", "cupy_total")
    assert list(fake_cupy._registry()) == ["pytest_membudget"]
    for probe in probes.values():
        probe.stop()
    assert list(fake_cupy._registry()) == []


def test_no_cupy_no_device_and_another_allocator_are_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert "CuPy is not installed" in str(create("cupy_used").unavailable())
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy.make(available=False))
    assert "is_available() is False" in str(create("cupy_used").unavailable())
    other = fake_cupy.make()
    other.cuda.set_allocator(None)
    monkeypatch.setitem(sys.modules, "cupy", other)
    assert "another allocator" in str(create("cupy_total").unavailable())
