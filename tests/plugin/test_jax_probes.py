"""The jax_* budgets through the plugin on JAX's CPU build: the arrays, the compilations, and
a device budget where JAX keeps no device statistics (test_jax_device.py has a GPU's)."""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax", reason="JAX is not installed for this Python (JAX 0.10 needs "
                          "Python 3.11 or later)")

LEAKS = """
import jax.numpy as jnp
import pytest

KEEP = []

def leak():
    KEEP.append(jnp.ones((256,), jnp.float32) + 1.0)  # LEAK

@pytest.mark.membudget(jax_arrays=0, jax_array_bytes=0)
def test_array_leak(membudget):
    membudget.run(leak)

def clean():
    x = jnp.ones((256,), jnp.float32)
    (x + 1.0).block_until_ready()

@pytest.mark.membudget(jax_arrays=0, jax_array_bytes=0)
def test_clean(membudget):
    membudget.run(clean)
"""

RECOMPILES = """
import functools
import jax
import numpy as np
import pytest

@jax.jit
def total(x):
    return (x * 2.0).sum()

@functools.partial(jax.jit, static_argnums=1)
def power(x, n):
    return x ** n

def counters():
    state = {"n": 1}
    def grow():
        state["n"] += 1
        total(np.ones(state["n"], np.float32))  # GROW
    def static():
        state["n"] += 1
        power(np.ones(3, np.float32), state["n"])  # STATIC
    return grow, static

@pytest.mark.membudget(jax_compiles=0)
def test_growing_shape(membudget):
    membudget.run(counters()[0])

@pytest.mark.membudget(jax_compiles=0)
def test_new_static_value(membudget):
    membudget.run(counters()[1])

@pytest.mark.membudget(jax_compiles=0)
def test_same_shape(membudget):
    x = np.ones(8, np.float32)
    membudget.run(lambda: total(x).block_until_ready())
"""


def test_an_array_kept_per_call_fails_naming_its_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_leaks=LEAKS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*jax_arrays still grows 1 arrays/iter*",
        "*jax_array_bytes still grows 1 KiB/iter*",
        "*live JAX arrays made in the window and still alive*",
        "*test_leaks.py:7 in leak: * arrays, *",
        "*# LEAK",
        "*x float32?256? (*",
        "*jax.Array (+*): module test_leaks.py: KEEP (list)*",
    ])


def test_a_recompiling_jit_fails_naming_the_function_the_change_and_the_remedy(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recompiles=RECOMPILES)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*jax_compiles still grows*",
        "*jit(total): * compilations, called at test_recompiles.py:18, defined at "
        "test_recompiles.py:*",
        "*# GROW",
        "*shape of x changed: now f32[[]*[]], before f32[[]*[]]",
        "*remedy: pad or bucket the shapes*",
    ])
    result.stdout.fnmatch_lines([
        "*jit(power): * compilations, called at test_recompiles.py:21*",
        "*# STATIC",
        "*value of argument 1 changed: now *, before *",
        "*remedy: this static argument takes a new value on each call*",
    ])


def test_a_device_budget_on_jax_s_cpu_build_is_skipped_with_the_reason(
        pytester: pytest.Pytester) -> None:
    if jax.default_backend() != "cpu":
        pytest.skip("JAX here has a device with statistics")
    pytester.makepyfile("""
        import pytest
        @pytest.mark.membudget(jax_device_used=0)
        def test_device(membudget):
            membudget.run(lambda: None)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*the jax_device_used budget cannot be measured here: JAX's "
                                 "cpu backend keeps no allocator statistics*"])
    failed = pytester.runpytest("-p", "no:cacheprovider", "--membudget-require-cuda")
    failed.assert_outcomes(errors=1)
