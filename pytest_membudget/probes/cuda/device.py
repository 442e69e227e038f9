"""One device's allocator, shared by every CUDA probe of a run (reference-counted)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pytest_membudget.probes.cuda.history import CudaEvidence, History
from pytest_membudget.probes.cuda.peak import reserved_at_peak
from pytest_membudget.probes.shared import SharedSource

#: The suffix of torch's peak figures in memory_stats.
PEAK = ".peak"


class DeviceStats(SharedSource):
    """One device's allocator, shared by every CUDA probe of a run: memory_stats fetched once
    per sample, the device synchronized only where a probe asks the driver, and the
    allocator history of the window (for evidence)."""

    def __init__(self, device: str | None) -> None:
        import torch

        super().__init__(device)
        self.torch = torch
        self.option = device
        #: Resolved when CUDA is initialised: torch.device("cuda").index is None.
        self.device: Any = None
        self.index = 0
        self.stats: Mapping[str, Any] = {}
        #: Users that read ``stats``; before each fetch, cuBLAS workspaces are cleared.
        self.stat_users = 0
        #: Users that read the driver (cudaMemGetInfo), which needs the device drained.
        self.sync_users = 0
        self.ready = False
        self.clear_workspaces = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        self.history: History | None = None
        #: The open peak marks: each holder's highest figures, kept across the resets of
        #: the holders opened after it (a phase inside a run).
        self.marks: list[dict[str, float]] = []

    @classmethod
    def for_device(cls, device: str | None, reads_stats: bool, syncs: bool) -> DeviceStats:
        return cls.acquire(device, lambda: cls(device), stat_users=reads_stats,
                           sync_users=syncs)

    def close(self) -> None:
        self.stop_history()

    def init_context(self) -> None:
        """Create the CUDA context before warm-up, and fix the device: a workload that
        switches the current device does not switch what the probes read."""
        if self.ready:
            return
        self.ready = True
        torch = self.torch
        torch.cuda.init()
        option = self.option
        requested = torch.device(f"cuda:{option}" if option and option.isdigit()
                                 else (option or "cuda"))
        self.index = requested.index if requested.index is not None else (
            torch.cuda.current_device())
        self.device = torch.device("cuda", self.index)
        torch.empty(1, device=self.device)
        torch.cuda.synchronize(self.device)

    def refresh(self) -> None:
        if self.stat_users:
            self.release_workspaces()
            self.stats = self.torch.cuda.memory_stats(self.device)
        if self.sync_users:
            self.torch.cuda.synchronize(self.device)

    def release_workspaces(self) -> None:
        """Hand cuBLAS workspaces back to the allocator's cache: the next cuBLAS call takes
        one again, so no reading counts a workspace and none is live in a snapshot."""
        if self.clear_workspaces is not None:
            self.clear_workspaces()

    def start_history(self, trace: bool = False) -> None:
        if self.history is None:
            self.release_workspaces()
            self.history = History(self.torch, self.index, trace)
            self.history.start()

    def evidence(self) -> CudaEvidence | None:
        if self.history is None:
            return None
        self.release_workspaces()
        return self.history.evidence()

    # -- peaks --------------------------------------------------------------------------------

    def open_mark(self) -> dict[str, float]:
        """A peak mark from now: the open marks take the device's peaks so far, then torch's
        peak figures start again (``reset_peak_memory_stats``: process-wide)."""
        self._fold()
        reset = getattr(self.torch.cuda, "reset_peak_memory_stats", None)
        if reset is not None:
            reset(self.device)
        mark: dict[str, float] = {}
        self.marks.append(mark)
        return mark

    def _fold(self) -> None:
        if not self.marks:
            return
        stats = self.torch.cuda.memory_stats(self.device)
        for mark in self.marks:
            for key, value in stats.items():
                if key.endswith(PEAK) and value > mark.get(key, -math.inf):
                    mark[key] = float(value)

    def peaks(self, mark: dict[str, float]) -> dict[str, float]:
        """Every peak figure of ``mark``: torch's since the latest reset, or what an earlier
        reset folded in, whichever is higher; and the retries so far."""
        stats = self.torch.cuda.memory_stats(self.device)
        found = {key: max(float(value), mark.get(key, -math.inf))
                 for key, value in stats.items() if key.endswith(PEAK)}
        found["num_alloc_retries"] = float(stats.get("num_alloc_retries", 0))
        return found

    def close_mark(self, mark: dict[str, float]) -> None:
        if mark in self.marks:
            self.marks.remove(mark)

    def peak_evidence(self, mark: dict[str, float] | None) -> CudaEvidence:
        """What the reserve was made of at its peak, and, with the allocator's trace, the
        blocks live at the peak of the window's allocations."""
        found: CudaEvidence = {}
        if mark is not None:
            found["cuda_reserved"] = reserved_at_peak(self.peaks(mark))
        if self.history is not None:
            self.release_workspaces()
            found.update(self.history.peak_evidence())
        return found

    def stop_history(self) -> None:
        if self.history is not None:
            self.history.stop()
            self.history = None
