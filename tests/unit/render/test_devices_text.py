"""The text of the device stacks' evidence: arguments named as a person reads them, a remedy
for every kind of change, the peak's mark that did not move, CuPy's lines."""

from __future__ import annotations

from pytest_membudget.render.devices import (
    REMEDIES,
    argument,
    compile_lines,
    cupy_lines,
    jax_peak_lines,
)
from pytest_membudget.vocabulary import Recompile


def test_jax_s_argument_paths_read_as_arguments() -> None:
    assert argument("[0][1]") == "argument 1"
    assert argument("[1]['n']") == "argument n"
    assert argument("batch['obs']") == "batch['obs']"


def test_every_kind_of_change_has_a_remedy() -> None:
    assert set(REMEDIES) == {kind.value for kind in Recompile}


def test_a_function_without_an_explanation_gets_the_general_remedy() -> None:
    lines = compile_lines({"total": 3, "functions": [
        {"function": "jit(broadcast_in_dim)", "compiles": 3, "call_file": "/p/train.py",
         "call_line": 9, "call_code": "x = jnp.ones(n)"}]})
    assert "jit(broadcast_in_dim): 3 compilations, called at" in lines[1]
    assert lines[2].strip() == "x = jnp.ones(n)"
    assert lines[3].strip() == "remedy: " + REMEDIES[Recompile.OTHER.value]


def test_a_mark_that_did_not_move_is_said() -> None:
    lines = jax_peak_lines({"jax_device": {"mark_before": 2.0**30, "mark_after": 2.0**30,
                                           "highest_sample": 2.0**20}})
    assert "high-water mark 1 GiB before the run, 1 GiB after it" in lines[0]
    assert "the mark did not move" in lines[1]


def test_cupy_blocks_by_line() -> None:
    lines = cupy_lines({"cupy": {"rows": [{"file": "/p/step.py", "line": 4, "function": "step",
                                           "count": 2, "bytes": 4096}]}})
    assert lines[1].endswith("step.py:4 in step: 2 blocks, 4 KiB")
