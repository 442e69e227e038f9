"""Drive the evidence rerun (a generator) over a step, as the measuring loop does."""

from __future__ import annotations

from typing import Any

from pytest_membudget.evidence.rerun import collect


def evidence_of(step: Any, failing: set[str], iterations: int = 40) -> dict[str, Any]:
    rerun = collect(failing, iterations=iterations, start_iteration=0)
    try:
        while True:
            next(rerun)
            step()
    except StopIteration as done:
        result: dict[str, Any] = done.value
    return result
