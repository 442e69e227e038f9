"""The jax_device_* budgets through the plugin on a GPU, as the stand-in of
tests/support/fake_jax.py models JAX's device allocator (it needs no JAX installed)."""

from __future__ import annotations

import sys

import pytest
from support import fake_jax

GPU = """
import jax
import pytest

KEEP = []

def leak():
    KEEP.append(jax.array((1024,)))  # DEVICE LEAK

def spike():
    jax.temporary(256 * 1024 * 1024)

@pytest.mark.membudget(jax_device_used=0, jax_device_reserved=0)
def test_device_leak(membudget):
    membudget.run(leak)

@pytest.mark.membudget(jax_device_used_rise="64 MiB")
def test_device_spike(membudget):
    membudget.run(spike)

@pytest.mark.membudget(jax_device_used=0)
def test_device_clean(membudget):
    membudget.run(lambda: jax.temporary(4096))
"""


def test_on_a_gpu_a_device_leak_and_a_peak_inside_a_call_fail(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jax", fake_jax.FakeJax())
    pytester.makepyfile(test_gpu=GPU)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*jax_device_used rose 256 MiB above its start*budget 64 MiB",
        "*JAX's device allocator: high-water mark * before the run, * after it",
        "*arrays alive at the highest sample*",
        "*test_gpu.py:7 in leak: * arrays, *",
    ])
    result.stdout.fnmatch_lines(["*jax_device_used still grows 4 KiB/iter*"])
    assert "jax_device_reserved still grows" not in result.stdout.str()  # preallocated
