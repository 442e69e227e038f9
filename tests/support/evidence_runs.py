"""Drive the evidence rerun (a generator) over a step, as the measuring loop does."""

from __future__ import annotations

from typing import Any

from pytest_membudget.evidence.rerun import collect


def evidence_of(step: Any, failing: set[str], iterations: int = 40) -> dict[str, Any]:
    # Called once before, as the measured run always has before its evidence: on Python
    # 3.10 a function's first call leaves a frame cached on its code object (a zombie frame,
    # gone in 3.11), which a first call inside the rerun would show as a growing line.
    step()
    rerun = collect(failing, iterations=iterations, start_iteration=0)
    try:
        while True:
            next(rerun)
            step()
    except StopIteration as done:
        result: dict[str, Any] = done.value
    return result
