"""CUDA budgets on a machine without a usable CUDA device: skipped, or failed on request."""

from __future__ import annotations

import importlib.util

import pytest

torch_cuda = False
if importlib.util.find_spec("torch") is not None:
    import torch

    torch_cuda = torch.cuda.is_available()

pytestmark = pytest.mark.skipif(torch_cuda, reason="these tests describe a machine without CUDA")

SOURCE = """
import pytest

@pytest.mark.membudget(cuda_small_pool=0)
def test_gpu(membudget):
    membudget.run(lambda: None)

@pytest.mark.membudget(rss_peak="1 TiB", iterations=5)
def test_cpu():
    pass
"""


def test_cuda_budget_is_skipped_with_a_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SOURCE)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*the cuda_small_pool budget cannot be measured here:*"])


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


def test_cuda_history_setting_is_read(pytester: pytest.Pytester, recorded) -> None:
    pytester.makeini("[pytest]\nmembudget_cuda_history = true\n")
    pytester.makepyfile(SOURCE)
    pytester.runpytest("-p", "no:cacheprovider")
    assert recorded()["test_cpu"]["data"]["settings"]["cuda_history"] is True


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


def test_device_wide_probe_warns_once_per_worker_under_xdist(pytester: pytest.Pytester) -> None:
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
