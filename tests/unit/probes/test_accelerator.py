"""The xpu_* and mps_* probes on the stand-in of tests/support/fake_accelerator.py (torch's
accelerator API on an XPU or an MPS device), and on this machine's torch, which sees none."""

from __future__ import annotations

import sys

import pytest
from support import fake_accelerator

from pytest_membudget.probes import create

MiB = 1024 * 1024


def fake(monkeypatch: pytest.MonkeyPatch, kind: str | None, legacy: bool = False):
    torch, allocator = fake_accelerator.make(kind, legacy)
    monkeypatch.setitem(sys.modules, "torch", torch)
    return allocator


def read(names: tuple[str, ...], work, footprint: tuple[str, ...] = ()) -> dict[str, tuple]:
    probes = {name: create(name, {"footprint": footprint}) for name in names}
    for probe in probes.values():
        assert probe.unavailable() is None, probe.unavailable()
        probe.start()
    work()
    try:
        for probe in probes.values():
            probe.sync()
        return {name: (p.read(), p.peak()) for name, p in probes.items()}
    finally:
        for probe in probes.values():
            probe.stop()


def test_xpu_books_cuda_s_figures_per_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    allocator = fake(monkeypatch, "xpu")
    names = ("xpu_allocated", "xpu_small_pool", "xpu_large_pool", "xpu_small_blocks",
             "xpu_large_blocks", "xpu_segments", "xpu_reserved")
    found = read(names, lambda: (allocator.alloc(4096), allocator.alloc(4 * MiB)))
    values = {name: value for name, (value, _) in found.items()}
    assert values == {"xpu_allocated": 4096 + 4 * MiB, "xpu_small_pool": 4096,
                      "xpu_large_pool": 4 * MiB, "xpu_small_blocks": 1,
                      "xpu_large_blocks": 1, "xpu_segments": 3, "xpu_reserved": 6 * MiB}


def test_a_peak_is_read_where_a_footprint_is_budgeted(monkeypatch: pytest.MonkeyPatch) -> None:
    allocator = fake(monkeypatch, "xpu")
    found = read(("xpu_allocated",), lambda: allocator.free(allocator.alloc(8 * MiB)),
                 footprint=("xpu_allocated",))
    assert found["xpu_allocated"] == (0, 8 * MiB)


def test_mps_with_the_generic_allocator_and_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    allocator = fake(monkeypatch, "mps")
    found = read(("mps_allocated", "mps_reserved", "mps_driver"), lambda: allocator.alloc(MiB))
    assert {name: value for name, (value, _) in found.items()} == {
        "mps_allocated": MiB, "mps_reserved": 2 * MiB, "mps_driver": 4 * MiB}
    allocator = fake(monkeypatch, "mps", legacy=True)
    found = read(("mps_allocated", "mps_driver"), lambda: allocator.alloc(MiB))
    assert found["mps_allocated"][0] == MiB
    assert "needs torch.accelerator.memory" in str(create("mps_reserved").unavailable())


def test_the_other_device_s_probes_say_which_to_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    fake(monkeypatch, "xpu")
    assert "budget the xpu_* probes" in str(create("mps_allocated").unavailable())


def test_with_no_accelerator_a_clear_note(monkeypatch: pytest.MonkeyPatch) -> None:
    fake(monkeypatch, None)
    reason = create("xpu_allocated").unavailable()
    assert reason is not None and "torch sees no accelerator" in reason


def test_this_machine_s_torch_sees_none() -> None:
    torch = pytest.importorskip("torch")
    if torch.accelerator.is_available():
        pytest.skip("this torch has an accelerator")
    with pytest.raises(RuntimeError):
        torch.accelerator.memory.memory_stats()
    reason = create("xpu_allocated").unavailable()
    assert reason is not None and "torch.accelerator.is_available() is False" in reason
