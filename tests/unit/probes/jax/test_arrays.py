"""The live arrays as the jax_arrays and jax_array_bytes probes count them, and the lines
that created them (on JAX's CPU build)."""

from __future__ import annotations

import pytest
from support.fake_jax import Frame

from pytest_membudget.probes.jax.arrays import by_line, creation_lines, new_since, remember, tally

jax = pytest.importorskip("jax", reason="JAX is not installed for this Python (JAX 0.10 needs "
                          "Python 3.11 or later)")
jnp = jax.numpy

USER = Frame("/work/project/train.py", "step", 12)
LIBRARY = Frame("/venv/lib/python3.11/site-packages/optax/_src/transform.py", "update", 88)
JAX = Frame("/venv/lib/python3.11/site-packages/jax/_src/numpy/array_creation.py", "ones", 40)
PYTEST = Frame("/venv/lib/python3.11/site-packages/_pytest/python.py", "runtest", 1)


def test_count_and_bytes_of_the_live_arrays() -> None:
    made = [jnp.ones((256,), jnp.float32), jnp.zeros((4, 8), jnp.int8), jax.random.key(0)]
    count, size = tally(made)
    assert (count, size) == (3, 1024 + 32 + made[2].nbytes)


def test_arrays_made_since_a_window_opened() -> None:
    old = jnp.ones(3)
    before = remember([old])
    new = jnp.ones(4)
    assert new_since([old, new], before) == [new]


def test_the_user_s_line_first_and_the_library_s_under_it() -> None:
    assert creation_lines([JAX, LIBRARY, USER, PYTEST]) == (USER, LIBRARY)
    assert creation_lines([JAX, USER, PYTEST]) == (USER, None)
    assert creation_lines([JAX]) == (None, None)


def test_by_line_names_the_line_its_shapes_and_bytes() -> None:
    made = [jnp.ones((256,), jnp.float32) for _ in range(3)]  # LINE
    rows = by_line(made)
    assert len(rows) == 1
    row = rows[0]
    assert row["file"] == __file__ and "LINE" in row["code"]
    assert (row["count"], row["bytes"]) == (3, 3 * 1024)
    assert row["shapes"] == [{"aval": "float32[256]", "count": 3, "bytes": 3 * 1024}]
