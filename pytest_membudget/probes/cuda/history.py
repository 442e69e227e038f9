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

from collections.abc import Mapping
from typing import Any, TypedDict

from pytest_membudget.probes.cuda.allocator import (
    NATIVE,
    REFUSALS,
    allocator_backend,
    caching_off,
)
from pytest_membudget.probes.cuda.peak import PeakBlocks, ReservedAtPeak, peak_blocks
from pytest_membudget.probes.cuda.snapshot import BlockRow, live_keys, live_window_blocks

#: Events kept in the allocator's trace when a peak must be replayed from it (torch keeps the
#: latest this many: a window of more events loses its earliest).
TRACE_ENTRIES = 1_000_000


class CudaEvidence(TypedDict, total=False):
    """What the allocator tells, under the keys of the evidence: of a failing window, the
    blocks it left live (``cuda_blocks``); of a failing peak, what the reserve was made of
    there (``cuda_reserved``) and the blocks live at it (``cuda_peak``); or why it cannot
    (``cuda_history``)."""

    cuda_history: str
    cuda_blocks: list[BlockRow]
    cuda_reserved: ReservedAtPeak
    cuda_peak: PeakBlocks


class History:
    """Started right before the window (after the cuBLAS workspaces were released), asked for
    evidence at most once, stopped at the end of the run."""

    def __init__(self, torch: Any, index: int, trace: bool = False) -> None:
        self.torch = torch
        self.index = index
        #: Record every allocation and free (the trace a peak is replayed from), not only
        #: the frames of live blocks.
        self.trace = trace
        #: Whether this run switched recording on (and so switches it off again).
        self.ours = False
        #: Why there is no history, in words for the report.
        self.problem: str | None = None
        #: Every block live when the window opened (with or without frames): not the window's
        #: growth, whoever allocated it.
        self.before: frozenset[tuple[Any, ...]] = frozenset()
        self.found: CudaEvidence | None = None
        #: torch's snapshot after the window, or why there is none.
        self.taken: Mapping[str, Any] | str | None = None

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
                if self.trace:
                    memory._record_memory_history(enabled="all", context="all",
                                                  stacks="python", max_entries=TRACE_ENTRIES)
                else:
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

    def evidence(self) -> CudaEvidence:
        """One snapshot per failing run, however many CUDA budgets failed."""
        if self.found is None:
            self.found = {"cuda_history": self.problem} if self.problem else self._blocks()
        return self.found

    def _snapshot(self) -> Mapping[str, Any] | str:
        """The run's one snapshot after the window (its growth and its peak are both read
        from it), or why torch gave none."""
        if self.taken is None:
            try:
                self.taken = self.torch.cuda.memory._snapshot()
            except REFUSALS as exc:
                self.taken = f"torch could not take a memory snapshot ({_said(exc)})"
        return self.taken

    def _blocks(self) -> CudaEvidence:
        snapshot = self._snapshot()
        if isinstance(snapshot, str):
            return {"cuda_history": snapshot}
        return {"cuda_blocks": live_window_blocks(snapshot, device=self.index,
                                                  exclude=self.before)}

    def peak_evidence(self) -> CudaEvidence:
        """The blocks live at the peak of the window's allocations, replayed from the trace
        (cuda/peak.py); the reason where there is none."""
        if self.problem:
            return {"cuda_history": self.problem}
        if not self.trace:
            return {}
        snapshot = self._snapshot()
        if isinstance(snapshot, str):
            return {"cuda_history": snapshot}
        return {"cuda_peak": peak_blocks(snapshot, self.index)}

    def stop(self) -> None:
        if self.ours:
            self.ours = False
            self.torch.cuda.memory._record_memory_history(enabled=None)


def _said(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {first[0]}" if first else type(exc).__name__
