"""The compile log of the jax_compiles probe on JAX's CPU build: it counts compilations,
names the jitted function and the line that called it, keeps JAX's explanation of what
changed, and leaves JAX's option and the user's log as it found them."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from pytest_membudget.probes.jax.compiles import EXPLAIN_OPTION, CompileLog
from pytest_membudget.vocabulary import Recompile

jax = pytest.importorskip("jax", reason="JAX is not installed for this Python (JAX 0.10 needs "
                          "Python 3.11 or later)")


def _fresh():
    @jax.jit
    def scaled(x, factor):
        return x * factor

    return scaled


def test_a_new_shape_per_call_is_counted_named_and_explained(
        caplog: pytest.LogCaptureFixture) -> None:
    scaled = _fresh()
    log = CompileLog(jax)
    log.start()
    try:
        scaled(np.ones(2, np.float32), 2.0)
        log.open_window()
        before = log.count
        for n in range(3, 6):
            scaled(np.ones(n, np.float32), 2.0)  # CALL
        assert log.count - before == 3
        found = log.evidence()
    finally:
        log.stop()
    row = found["functions"][0]
    assert (row["function"], row["compiles"]) == ("jit(scaled)", 3)
    assert row["call_file"] == __file__ and "CALL" in row["call_code"]
    assert row["kind"] == Recompile.SHAPE.value
    assert row["changes"][-1] == {"arg": "x", "now": "f32[5]", "before": "f32[4]",
                                  "kind": Recompile.SHAPE.value}
    assert not [r for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()]


def test_nothing_recompiles_on_a_seen_shape() -> None:
    scaled = _fresh()
    log = CompileLog(jax)
    log.start()
    try:
        scaled(np.ones(2, np.float32), 2.0)
        log.open_window()
        before = log.count
        for _ in range(5):
            scaled(np.ones(2, np.float32), 3.0)
        assert log.count == before
        assert log.evidence()["functions"] == []
    finally:
        log.stop()


def test_the_option_and_the_user_s_own_explanations_are_left_alone(
        caplog: pytest.LogCaptureFixture) -> None:
    assert not getattr(jax.config, EXPLAIN_OPTION)
    log = CompileLog(jax)
    log.start()
    log.stop()
    assert not getattr(jax.config, EXPLAIN_OPTION)
    jax.config.update(EXPLAIN_OPTION, True)
    scaled = _fresh()
    try:
        log = CompileLog(jax)
        log.start()
        caplog.set_level(logging.WARNING)
        scaled(np.ones(2, np.float32), 2.0)
        log.stop()
        assert getattr(jax.config, EXPLAIN_OPTION)
    finally:
        jax.config.update(EXPLAIN_OPTION, False)
    assert [r for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()]
