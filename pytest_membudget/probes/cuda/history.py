"""The CUDA allocator's history over one measured window, for the evidence of a failing
``cuda_*`` budget: which Python lines allocated the blocks live at the window's end that were
not live at its start.

Only what the evidence reads is recorded: the frames of live blocks (``enabled="state"``,
``context="state"``; torch then keeps at most one trace entry), not a trace of every event.
Recording is process-wide. A recording that was already on (the user's own) is left on and
its buffer intact; one this module starts, it stops.
"""

from __future__ import annotations

from typing import Any

from pytest_membudget.probes.cuda.allocator import NATIVE, allocator_backend
from pytest_membudget.probes.cuda.snapshot import framed_blocks, live_window_blocks

#: What torch may raise when asked for history it cannot give (an allocator backend without
#: it, a torch without the call or the argument).
REFUSALS = (RuntimeError, TypeError, ValueError, AttributeError)


class History:
    """Started right before the window (after the cuBLAS workspaces were released), asked for
    evidence at most once, stopped at the end of the run."""

    def __init__(self, torch: Any, index: int) -> None:
        self.torch = torch
        self.index = index
        #: Whether this run switched recording on (and so switches it off again).
        self.ours = False
        #: Why there is no history, in words for the report.
        self.problem: str | None = None
        #: Blocks that already carried frames when the window opened: an earlier recording's
        #: (an earlier test's, the user's), not this window's growth.
        self.before: frozenset[tuple[Any, ...]] = frozenset()
        self.found: dict[str, Any] | None = None

    def start(self) -> None:
        torch = self.torch
        backend = allocator_backend(torch)
        if backend != NATIVE:
            self.problem = (f"the {backend} allocator backend records no allocation history "
                            "(torch refuses to record or snapshot it); the evidence of "
                            "cuda_history needs the native caching allocator")
            return
        enabled = getattr(torch._C, "_cuda_isHistoryEnabled", None)
        already_on = bool(enabled()) if enabled is not None else False
        memory = torch.cuda.memory
        try:
            self.before = framed_blocks(memory._snapshot(), self.index)
            if not already_on:
                memory._record_memory_history(enabled="state", context="state",
                                              stacks="python")
                self.ours = True
        except REFUSALS as exc:
            self.problem = f"torch could not record the allocator history ({_said(exc)})"

    def evidence(self) -> dict[str, Any]:
        """One snapshot per failing run, however many CUDA budgets failed."""
        if self.found is None:
            self.found = {"cuda_history": self.problem} if self.problem else self._blocks()
        return self.found

    def _blocks(self) -> dict[str, Any]:
        try:
            snapshot = self.torch.cuda.memory._snapshot()
        except REFUSALS as exc:
            return {"cuda_history": f"torch could not take a memory snapshot ({_said(exc)})"}
        return {"cuda_blocks": live_window_blocks(snapshot, device=self.index,
                                                  exclude=self.before)}

    def stop(self) -> None:
        if self.ours:
            self.ours = False
            self.torch.cuda.memory._record_memory_history(enabled=None)


def _said(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {first[0]}" if first else type(exc).__name__
