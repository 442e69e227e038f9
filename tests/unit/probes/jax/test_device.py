"""JAX's device allocator as the jax_device_* probes read it, on the stand-in of
tests/support/fake_jax.py (a GPU's Device.memory_stats()) and on the CPU."""

from __future__ import annotations

import pytest
from support.fake_jax import Device, FakeJax, MiB

from pytest_membudget.probes.jax.device import DeviceAllocator
from pytest_membudget.probes.jax.runtime import device_reason


def test_bytes_in_use_and_the_pool_summed_over_the_devices() -> None:
    jax = FakeJax(devices=[Device(preallocate=False), Device(preallocate=False)])
    allocator = DeviceAllocator(jax)
    allocator.start(peaks=False)
    jax.array((1024, 1024))
    jax.devices[1].take(3 * MiB)
    allocator.refresh()
    assert allocator.read("jax_device_used") == 7 * MiB
    assert allocator.read("jax_device_reserved") == 6 * MiB + 6 * MiB  # 2 + 4 MiB regions each


def test_preallocation_holds_the_pool_flat() -> None:
    jax = FakeJax()
    allocator = DeviceAllocator(jax)
    allocator.start(peaks=False)
    before = allocator.read("jax_device_reserved")
    for _ in range(10):
        jax.array((256, 1024))
    allocator.refresh()
    assert allocator.read("jax_device_reserved") == before == 768 * MiB


def test_a_peak_inside_a_call_is_read_where_the_run_moved_the_mark() -> None:
    jax = FakeJax()
    allocator = DeviceAllocator(jax)
    allocator.start(peaks=True)
    jax.temporary(64 * MiB)  # a computation's buffer, freed before the call returns
    assert allocator.peak("jax_device_used") == 64 * MiB


def test_a_mark_an_earlier_test_set_is_not_this_run_s_peak() -> None:
    jax = FakeJax()
    jax.temporary(512 * MiB)  # an earlier test, in the same process
    allocator = DeviceAllocator(jax)
    allocator.start(peaks=True)
    jax.temporary(64 * MiB)
    assert allocator.peak("jax_device_used") is None
    evidence = allocator.peak_evidence()
    assert evidence["mark_before"] == evidence["mark_after"] == 512 * MiB


def test_the_arrays_alive_at_the_highest_sample_by_line() -> None:
    jax = FakeJax()
    allocator = DeviceAllocator(jax)
    allocator.start(peaks=True)
    kept = []
    for _ in range(3):
        kept.append(jax.array((1024,)))  # the line of this test
    allocator.refresh()
    allocator.after_sample()
    for array in kept:
        jax.free(array)
    allocator.refresh()
    allocator.after_sample()  # lower: the census stays the highest sample's
    rows = allocator.peak_evidence()["arrays"]
    assert [(row["function"], row["count"], row["bytes"]) for row in rows] == [
        ("test_the_arrays_alive_at_the_highest_sample_by_line", 3, 3 * 4096)]


def test_a_cpu_device_keeps_no_statistics() -> None:
    cpu = Device(platform="cpu")
    reason = device_reason("jax_device_used", [cpu], [cpu.memory_stats()])
    assert reason is not None and "cpu backend keeps no allocator statistics" in reason


def test_the_platform_allocator_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLA_PYTHON_CLIENT_ALLOCATOR", "platform")
    gpu = Device()
    reason = device_reason("jax_device_used", [gpu], [None])
    assert reason is not None and "XLA_PYTHON_CLIENT_ALLOCATOR=platform" in reason


def test_a_client_without_a_pool_figure_is_told() -> None:
    reason = device_reason("jax_device_reserved", [Device()], [{"bytes_in_use": 0}])
    assert reason is not None and "budget jax_device_used instead" in reason


def test_a_gpu_s_statistics_are_measurable() -> None:
    gpu = Device()
    assert device_reason("jax_device_used", [gpu], [gpu.memory_stats()]) is None
    assert device_reason("jax_device_reserved", [gpu], [gpu.memory_stats()]) is None


def test_on_this_machine_jax_on_cpu_says_so() -> None:
    jax = pytest.importorskip("jax", reason="JAX is not installed for this Python")
    from pytest_membudget.probes.jax.runtime import unavailable_reason

    if jax.default_backend() != "cpu":
        pytest.skip("JAX here has a device with statistics")
    reason = unavailable_reason("jax_device_used")
    assert reason is not None and "needs JAX on a GPU or TPU" in reason
