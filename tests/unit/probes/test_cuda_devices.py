"""Which device the CUDA probes read: a CUDA device only, the default one resolved to its
index (torch.device("cuda").index is None), and no CUDA context created just to name it."""

from __future__ import annotations

import pytest
from support import fake_torch
from support.cuda_runs import install, run

from pytest_membudget.artifacts.document import cuda_device
from pytest_membudget.judge.spec import SpecError, build_spec, parse_device
from pytest_membudget.settings import default_run

OTHER_DEVICE_SITE = ("/work/project/other_gpu.py", 9, "shard")


@pytest.mark.parametrize("value", ["cpu", "meta", "cuda:x", "mps", -1])
def test_a_device_that_is_not_cuda_is_an_error_naming_the_value(value: object) -> None:
    with pytest.raises(SpecError, match=rf"device={value!r} in the membudget marker"):
        build_spec(default_run(), (), {"cuda_small_pool": 0, "device": value},
                   "in the membudget marker")


@pytest.mark.parametrize("value, text", [
    ("cuda", "cuda"), ("cuda:1", "cuda:1"), (1, "1"), ("0", "0"), (None, None),
    (fake_torch.FakeDevice("cuda:1"), "cuda:1"),
])
def test_cuda_devices_are_read(value: object, text: str | None) -> None:
    assert parse_device(value, "in test") == text


def both_devices_leak(allocator: fake_torch.FakeAllocator) -> None:
    allocator.kept.append(allocator.alloc(4096, fake_torch.LEAK_SITE, device=0))
    allocator.kept.append(allocator.alloc(8192, OTHER_DEVICE_SITE, device=1))


@pytest.mark.parametrize("current", [0, 1])
def test_default_device_is_the_current_one_and_evidence_is_filtered_by_it(
        monkeypatch: pytest.MonkeyPatch, current: int) -> None:
    def select(torch: object, allocator: fake_torch.FakeAllocator) -> None:
        allocator.current = current

    result, _ = run(monkeypatch, {"devices": 2}, both_devices_leak,
                    prepare=select, cuda_small_pool=0, cuda_history=True)
    assert result["cuda_small_pool"].slope == pytest.approx(8192 if current else 4096)
    rows = result.evidence_data["cuda_blocks"]
    expected = OTHER_DEVICE_SITE if current else fake_torch.LEAK_SITE
    assert [(r["file"], r["line"]) for r in rows] == [expected[:2]]


def test_the_device_is_fixed_when_the_probes_start(monkeypatch: pytest.MonkeyPatch) -> None:
    def switch_device(allocator: fake_torch.FakeAllocator) -> None:
        both_devices_leak(allocator)
        allocator.current = 1  # the workload changes the current device

    result, _ = run(monkeypatch, {"devices": 2}, switch_device,
                    cuda_small_pool=0)
    assert result["cuda_small_pool"].slope == pytest.approx(4096)


def test_report_names_the_device_only_where_cuda_was_used(
        monkeypatch: pytest.MonkeyPatch) -> None:
    torch, _allocator = install(monkeypatch)
    assert cuda_device() is None
    assert not torch.cuda.is_initialized()  # naming it would have created a context
    torch.cuda.init()
    assert cuda_device() == "cuda:0 Fake GPU"
