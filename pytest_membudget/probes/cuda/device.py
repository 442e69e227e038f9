"""One device's allocator, shared by every CUDA probe of a run (reference-counted)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_membudget.probes.cuda.history import History
from pytest_membudget.probes.shared import SharedSource


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

    def start_history(self) -> None:
        if self.history is None:
            self.release_workspaces()
            self.history = History(self.torch, self.index)
            self.history.start()

    def evidence(self) -> dict[str, Any] | None:
        if self.history is None:
            return None
        self.release_workspaces()
        return self.history.evidence()

    def stop_history(self) -> None:
        if self.history is not None:
            self.history.stop()
            self.history = None
