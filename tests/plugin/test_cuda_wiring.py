"""CUDA budgets through the plugin, on every machine: the torch that the inner runs import is
the stand-in of tests/support/fake_torch.py, set up as a machine without a usable device, with
the cudaMallocAsync backend, or with expandable segments (the real device is tests/cuda's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support import fake_torch

UNIT = Path(fake_torch.__file__).parents[1]

SOURCE = """
import pytest

@pytest.mark.membudget(cuda_small_pool=0)
def test_gpu(membudget):
    membudget.run(lambda: None)

@pytest.mark.membudget(rss_peak="1 TiB", iterations=5)
def test_cpu():
    pass
"""


def fake(monkeypatch: pytest.MonkeyPatch, **allocator: object) -> fake_torch.FakeAllocator:
    torch, state = fake_torch.make(**allocator)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "torch", torch)
    return state


@pytest.fixture
def no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    fake(monkeypatch, available=False)


@pytest.mark.usefixtures("no_device")
def test_cuda_budget_is_skipped_with_a_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SOURCE)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*the cuda_small_pool budget cannot be measured here:*"
                                 "is_available() is False*"])


@pytest.mark.usefixtures("no_device")
@pytest.mark.parametrize("how", ["flag", "ini"])
def test_require_cuda_turns_the_skip_into_a_failure(pytester: pytest.Pytester, how: str) -> None:
    pytester.makepyfile(SOURCE)
    if how == "ini":
        pytester.makeini("[pytest]\nmembudget_require_cuda = true\n")
    args = ["--membudget-require-cuda"] if how == "flag" else []
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*test_gpu: membudget: the cuda_small_pool budget cannot be "
                                 "measured here*--membudget-require-cuda is set*"])


@pytest.mark.usefixtures("no_device")
def test_cuda_history_setting_is_read(pytester: pytest.Pytester, recorded) -> None:
    pytester.makeini("[pytest]\nmembudget_cuda_history = true\n")
    pytester.makepyfile(SOURCE)
    pytester.runpytest("-p", "no:cacheprovider")
    assert recorded()["test_cpu"]["data"]["settings"]["cuda_history"] is True


@pytest.mark.usefixtures("no_device")
def test_unknown_device_value_type(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.membudget(cuda_small_pool=0, device=[0])
        def test_gpu():
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*device=[[]0[]] in the membudget marker: expected a device*"])


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_a_device_that_is_not_cuda_is_a_setup_error(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     device: str) -> None:
    fake(monkeypatch)
    pytester.makepyfile(f"""
        import pytest
        @pytest.mark.membudget(cuda_small_pool=0, device={device!r})
        def test_gpu(membudget):
            membudget.run(lambda: None)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*test_gpu: device='{device}' in the membudget marker: not a "
                                 "CUDA device*"])


ASYNC_SOURCE = """
import pytest
import torch

@pytest.mark.membudget(cuda_small_pool=0, cuda_allocated=0)
def test_pools(membudget):
    membudget.run(torch.fake_allocator.step)

@pytest.mark.membudget(cuda_allocated=0, cuda_reserved=0, cuda_device_used=0)
def test_totals(membudget):
    membudget.run(torch.fake_allocator.step)

@pytest.mark.membudget(cuda_allocated=0, cuda_history=True)
def test_leak(membudget):
    membudget.run(torch.fake_allocator.step)
"""


def test_async_backend_skips_pool_budgets_naming_it(pytester: pytest.Pytester,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    allocator = fake(monkeypatch, backend="cudaMallocAsync")
    pytester.makepyfile(ASYNC_SOURCE.replace("test_leak", "test_flat"))
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*the cuda_small_pool budget cannot be measured here: "
                                 "the CUDA allocator backend is cudaMallocAsync*"])
    assert not allocator.history_calls


def test_async_backend_fails_pool_budgets_when_cuda_is_required(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    fake(monkeypatch, backend="cudaMallocAsync", leak=4096)
    pytester.makepyfile(ASYNC_SOURCE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--membudget-require-cuda")
    result.assert_outcomes(failed=2, errors=1)
    result.stdout.fnmatch_lines([
        "*test_pools: membudget: the cuda_small_pool budget cannot be measured here: the CUDA "
        "allocator backend is cudaMallocAsync*--membudget-require-cuda is set*",
    ])
    result.stdout.fnmatch_lines(["*no CUDA allocator history: the cudaMallocAsync allocator "
                                 "backend records no allocation history*"])
    assert "does not yet support" not in result.stdout.str()  # no error of torch's


@pytest.mark.parametrize("required", [False, True], ids=["skipped", "required"])
def test_caching_allocator_off_skips_stats_budgets_or_fails_them(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, required: bool) -> None:
    monkeypatch.setenv("PYTORCH_NO_CUDA_MEMORY_CACHING", "1")
    fake(monkeypatch, leak=4096)
    pytester.makepyfile("""
        import pytest
        import torch

        @pytest.mark.membudget(cuda_allocated=0)
        def test_allocated(membudget):
            membudget.run(torch.fake_allocator.step)

        @pytest.mark.membudget(cuda_device_used="1 GiB/iter")
        def test_device_used(membudget):
            membudget.run(torch.fake_allocator.step)
    """)
    args = ["--membudget-require-cuda"] if required else ["-rs"]
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    message = ("the cuda_allocated budget cannot be measured here: the CUDA caching allocator "
               "is off (PYTORCH_NO_CUDA_MEMORY_CACHING is set*")
    if required:
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines([f"*test_allocated: membudget: {message}"
                                     "--membudget-require-cuda is set*"])
    else:
        result.assert_outcomes(passed=1, skipped=1)
        result.stdout.fnmatch_lines([f"SKIPPED*{message}"])


def test_expandable_segments_skip_the_segments_budget(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    fake(monkeypatch, expandable=True)
    pytester.makepyfile("""
        import pytest
        import torch

        @pytest.mark.membudget(cuda_segments=0)
        def test_segments(membudget):
            membudget.run(torch.fake_allocator.step)

        @pytest.mark.membudget(cuda_reserved=0)
        def test_reserved(membudget):
            membudget.run(torch.fake_allocator.step)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*the cuda_segments budget cannot be measured here: "
                                 "expandable segments are on*"])


def test_device_wide_probe_warns_once_per_worker_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(f"""
        import sys
        sys.path.insert(0, {str(UNIT)!r})
        from support import fake_torch
        sys.modules["torch"] = fake_torch.make(available=False)[0]
    """)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.parametrize("n", range(4))
        @pytest.mark.membudget(cuda_device_used=0)
        def test_gpu(membudget, n):
            membudget.run(lambda: None)
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-p", "xdist")
    result.assert_outcomes(skipped=4, warnings=2)
    result.stdout.fnmatch_lines(["*DeviceWideWarning*cuda_device_used is device-wide*"])
    serial = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert "DeviceWideWarning" not in serial.stdout.str()
