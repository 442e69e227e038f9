"""The CUDA allocator's history over one measured window, for the evidence of a failing
``cuda_*`` budget: which Python lines allocated the blocks live at the window's end that were
not live at its start.

Only what the evidence reads is recorded: the frames of live blocks (``enabled="state"``,
``context="state"``; torch then keeps at most one trace entry), not a trace of every event.
Recording is process-wide. A recording that was already on (the user's own) is left on and
its buffer intact; one this module starts, it stops. It needs torch 2.1 or later (torch 2.0's
``_record_memory_history`` takes none of these arguments).
"""

from __future__ import annotations

from typing import Any

from pytest_membudget.probes.cuda.allocator import (
    NATIVE,
    REFUSALS,
    allocator_backend,
    caching_off,
)
from pytest_membudget.probes.cuda.snapshot import live_keys, live_window_blocks


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
        #: Every block live when the window opened (with or without frames): not the window's
        #: growth, whoever allocated it.
        self.before: frozenset[tuple[Any, ...]] = frozenset()
        self.found: dict[str, Any] | None = None

    def start(self) -> None:
        self.problem = self._refusal()
        if self.problem:
            return
        torch = self.torch
        enabled = getattr(torch._C, "_cuda_isHistoryEnabled", None)
        already_on = bool(enabled()) if enabled is not None else False
        memory = torch.cuda.memory
        try:
            self.before = live_keys(memory._snapshot(), self.index)
            if not already_on:
                memory._record_memory_history(enabled="state", context="state",
                                              stacks="python")
                self.ours = True
        except TypeError as exc:
            self.problem = (f"torch could not record the allocator history ({_said(exc)}); "
                            "cuda_history needs torch 2.1 or later")
        except REFUSALS as exc:
            self.problem = f"torch could not record the allocator history ({_said(exc)})"

    def _refusal(self) -> str | None:
        backend = allocator_backend(self.torch)
        if backend != NATIVE:
            return (f"the {backend} allocator backend records no allocation history (torch "
                    "refuses to record or snapshot it); the evidence of cuda_history needs "
                    "the native caching allocator")
        off = caching_off(self.torch)
        if off:
            return (f"{off}: torch allocates with cudaMalloc directly, so its snapshots hold "
                    "no block; the evidence of cuda_history needs the caching allocator")
        return None

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
