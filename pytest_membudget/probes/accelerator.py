"""torch's accelerators other than CUDA, through ``torch.accelerator`` (torch 2.9 and later):
XPU's caching allocator, which books the same figures as CUDA's (``xpu_*``), and MPS
(``mps_*``), whose allocator books only its totals where torch wires it to the generic API.
A torch before that API is read through ``torch.xpu.memory_stats`` and ``torch.mps``'s own
counters. On a torch that sees no accelerator every ``torch.accelerator.memory`` call raises,
so nothing is called before ``torch.accelerator.is_available()`` says yes.

Every figure is this process's allocator's, on the current device of the accelerator,
fixed when the probes start. A peak (``_peak``, ``_rise``) resets the allocator's peaks when
the run starts (process-wide, as torch's reset is) and reads them at its end.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_membudget.probes import Probe
from pytest_membudget.probes.shared import SharedSource

#: The figure of each probe (after its ``xpu_``/``mps_`` prefix) in memory_stats.
STAT_KEYS: dict[str, str] = {
    "allocated": "allocated_bytes.all.current",
    "reserved": "reserved_bytes.all.current",
    "small_pool": "active_bytes.small_pool.current",
    "large_pool": "active_bytes.large_pool.current",
    "small_blocks": "active.small_pool.current",
    "large_blocks": "active.large_pool.current",
    "segments": "segment.all.current",
    "alloc_retries": "num_alloc_retries",
}
XPU_PROBES = tuple(f"xpu_{name}" for name in STAT_KEYS)
MPS_PROBES = ("mps_allocated", "mps_reserved", "mps_driver")
#: What torch raises when asked for what it cannot give.
REFUSALS = (RuntimeError, AttributeError, TypeError, ValueError, NotImplementedError)
INSTALL = "pip install 'pytest-membudget[torch]'"


def stack_of(probe: str) -> str:
    return probe.split("_", 1)[0]


def generic_memory(torch: Any) -> Any:
    """``torch.accelerator.memory`` where this torch has it (2.9 and later), else None."""
    accelerator = getattr(torch, "accelerator", None)
    return getattr(accelerator, "memory", None) if accelerator is not None else None


def current_type(torch: Any) -> str | None:
    """The accelerator torch reports (``xpu``, ``mps``, ``cuda``...), or None."""
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "is_available"):
        if not accelerator.is_available():
            return None
        current = accelerator.current_accelerator()
        return str(current.type) if current is not None else None
    if getattr(getattr(torch, "xpu", None), "is_available", lambda: False)():
        return "xpu"
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    return "mps" if mps is not None and mps.is_available() else None


def unavailable_reason(probe: str) -> str | None:
    """Why ``probe`` cannot measure here, or None."""
    try:
        import torch
    except ImportError:
        return f"torch is not installed ({INSTALL})"
    wanted = stack_of(probe)
    try:
        found = current_type(torch)
    except REFUSALS as exc:
        return f"torch could not tell its accelerator ({type(exc).__name__}: {exc})"
    if found is None:
        return ("torch sees no accelerator (torch.accelerator.is_available() is False: a CPU "
                f"build of torch, or no {wanted.upper()} device); every torch.accelerator."
                "memory call raises here")
    if found != wanted:
        hint = "cuda_*" if found == "cuda" else f"{found}_*"
        return (f"the accelerator torch reports is {found}, not {wanted}: budget the {hint} "
                "probes on this machine")
    memory = generic_memory(torch)
    if probe == "mps_reserved" and memory is None:
        return ("mps_reserved needs torch.accelerator.memory (torch 2.9 or later); "
                "mps_allocated and mps_driver measure on this torch")
    if wanted == "xpu" and memory is None and not hasattr(torch.xpu, "memory_stats"):
        return "this torch has neither torch.accelerator.memory nor torch.xpu.memory_stats"
    if wanted == "mps" and probe in ("mps_allocated", "mps_reserved") and memory is not None:
        return _mps_stats_reason(torch, memory, probe)
    return None


def _mps_stats_reason(torch: Any, memory: Any, probe: str) -> str | None:
    """An MPS torch with the generic API: whether it books this probe's figure there (torch
    wires MPS's allocator to it in later versions; mps_allocated falls back to torch.mps)."""
    try:
        torch.empty(1, device="mps")
        stats = memory.memory_stats()
    except REFUSALS as exc:
        if probe == "mps_allocated":
            return None
        return (f"torch.accelerator.memory.memory_stats() refuses on MPS ({type(exc).__name__}: "
                f"{exc}); mps_allocated and mps_driver measure through torch.mps")
    if probe == "mps_reserved" and STAT_KEYS["reserved"] not in stats:
        return "this torch's MPS allocator books no reserved bytes in memory_stats()"
    return None


class AcceleratorStats(SharedSource):
    """One accelerator's figures, fetched once per sample for every probe of a run."""

    def __init__(self, kind: str) -> None:
        import torch

        super().__init__(kind)
        self.torch = torch
        self.kind = kind
        self.memory = generic_memory(torch)
        self.stats: Mapping[str, Any] = {}
        self.index: int | None = None
        self.peaks = False

    def start(self, peaks: bool) -> None:
        torch = self.torch
        torch.empty(1, device=self.kind)  # the allocator exists before the first reading
        if self.memory is not None:
            self.index = int(torch.accelerator.current_device_index())
        # torch.mps before the generic API keeps no peak figures.
        if peaks and not self.peaks and (self.memory is not None or self.kind == "xpu"):
            self.peaks = True
            self._call("reset_peak_memory_stats")

    def _call(self, name: str) -> Any:
        if self.memory is not None:
            return getattr(self.memory, name)(self.index)
        module = getattr(self.torch, self.kind)
        return getattr(module, name)() if self.kind == "mps" else getattr(module, name)(None)

    def refresh(self) -> None:
        if self.memory is not None:
            try:
                self.stats = self.memory.memory_stats(self.index)
                return
            except REFUSALS:
                if self.kind != "mps":
                    raise
        if self.kind == "xpu":
            self.stats = self.torch.xpu.memory_stats(None)
        else:  # torch.mps's own counter of bytes in tensors
            self.stats = {STAT_KEYS["allocated"]: self.torch.mps.current_allocated_memory()}

    def read(self, probe: str) -> float:
        if probe == "mps_driver":
            return float(self.torch.mps.driver_allocated_memory())
        return float(self.stats.get(STAT_KEYS[probe.split("_", 1)[1]], 0))

    def peak(self, probe: str) -> float | None:
        key = STAT_KEYS.get(probe.split("_", 1)[1], "")
        if not self.peaks or not key.endswith(".current"):
            return None
        self.refresh()
        value = self.stats.get(key[: -len("current")] + "peak")
        return float(value) if value is not None else None


class AcceleratorProbe(Probe):
    """One figure of an accelerator's allocator."""

    def __init__(self, options: Mapping[str, Any] | None = None, name: str = "") -> None:
        super().__init__(options)
        self.name = name
        self.source: AcceleratorStats | None = None

    def unavailable(self) -> str | None:
        return unavailable_reason(self.name)

    def start(self) -> None:
        kind = stack_of(self.name)
        self.source = AcceleratorStats.acquire(kind, lambda: AcceleratorStats(kind))
        self.source.start(self.name in (self.options.get("footprint") or ()))

    def sync(self) -> None:
        assert self.source is not None
        self.source.refresh()

    def read(self) -> float:
        assert self.source is not None
        return self.source.read(self.name)

    def peak(self) -> float | None:
        if self.source is None or self.name not in (self.options.get("footprint") or ()):
            return None
        return self.source.peak(self.name)

    def stop(self) -> None:
        if self.source is not None:
            self.source.release()
            self.source = None


def _factory(name: str) -> type[Probe]:
    class Named(AcceleratorProbe):
        def __init__(self, options: Mapping[str, Any] | None = None) -> None:
            super().__init__(options, name=name)

    Named.__name__ = Named.__qualname__ = f"AcceleratorProbe[{name}]"
    return Named


PROBE_CLASSES: dict[str, type[Probe]] = {name: _factory(name)
                                          for name in (*XPU_PROBES, *MPS_PROBES)}
