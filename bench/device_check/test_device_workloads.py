"""Workloads for bench/device_check.sh, run on a machine with a GPU (JAX's CUDA build, CuPy):
the device probes' verdicts and evidence on the real allocators. Not part of the test suite
(it is collected only by the script). Each test's expected verdict is in EXPECTED; the
script's summary (summary.py) compares them with the JSON report."""

from __future__ import annotations

import importlib.util

import pytest

KEEP: list = []
EXPECTED = {
    "test_jax_device_leak": "failed",
    "test_jax_device_clean": "passed",
    "test_jax_device_spike_inside_a_call": "failed",
    "test_jax_arrays_leak_on_the_gpu": "failed",
    "test_jax_recompiles_on_the_gpu": "failed",
    "test_cupy_leak": "failed",
    "test_cupy_clean": "passed",
    "test_cupy_peak_inside_a_call": "failed",
}
HAS_CUPY = importlib.util.find_spec("cupy") is not None
cupy_only = pytest.mark.skipif(not HAS_CUPY, reason="CuPy is not installed")


@pytest.fixture(autouse=True)
def _clear():
    yield
    KEEP.clear()


@pytest.mark.membudget(jax_device_used=0, jax_device_reserved=0)
def test_jax_device_leak(membudget):
    import jax.numpy as jnp

    membudget.run(lambda: KEEP.append(jnp.ones((64, 1024), jnp.float32) + 1))  # JAX LEAK


@pytest.mark.membudget(jax_device_used=0, jax_arrays=0, jax_compiles=0)
def test_jax_device_clean(membudget):
    import jax
    import jax.numpy as jnp

    step = jax.jit(lambda x: (x @ x.T).sum())
    x = jnp.ones((256, 256), jnp.float32)
    membudget.run(lambda: step(x).block_until_ready())


@pytest.mark.membudget(jax_device_used_rise="64 MiB")
def test_jax_device_spike_inside_a_call(membudget):
    import jax
    import jax.numpy as jnp

    # A 256 MiB intermediate inside one computation: only the allocator's mark sees it.
    big = jax.jit(lambda x: jnp.outer(x, x).sum())
    x = jnp.ones((8192,), jnp.float32)
    membudget.run(lambda: big(x).block_until_ready())


@pytest.mark.membudget(jax_array_bytes=0, jax_arrays=0)
def test_jax_arrays_leak_on_the_gpu(membudget):
    import jax.numpy as jnp

    membudget.run(lambda: KEEP.append(jnp.ones((256,), jnp.float32) * 2))  # ARRAY LEAK


@pytest.mark.membudget(jax_compiles=0)
def test_jax_recompiles_on_the_gpu(membudget):
    import jax
    import numpy as np

    step = jax.jit(lambda x: (x * 2).sum())
    n = [8]

    def grow():
        n[0] += 1
        step(np.ones(n[0], np.float32)).block_until_ready()  # GROW

    membudget.run(grow)


@cupy_only
@pytest.mark.membudget(cupy_used=0, cupy_total=0)
def test_cupy_leak(membudget):
    import cupy

    membudget.run(lambda: KEEP.append(cupy.ones((64, 1024), cupy.float32)))  # CUPY LEAK


@cupy_only
@pytest.mark.membudget(cupy_used=0, cupy_total=0, cupy_free_blocks=0)
def test_cupy_clean(membudget):
    import cupy

    x = cupy.ones((256, 256), cupy.float32)
    membudget.run(lambda: float((x @ x).sum()))


@cupy_only
@pytest.mark.membudget(cupy_used_rise="64 MiB")
def test_cupy_peak_inside_a_call(membudget):
    import cupy

    membudget.run(lambda: float(cupy.ones((8192, 8192), cupy.float32).sum()))
