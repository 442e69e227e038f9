"""The cupy_* probes: CuPy's default device memory pool (``cupy.get_default_memory_pool()``)
and pinned host pool, read on the current device. A hook follows the device pool between
samples: its high-water mark is ``cupy_used``'s peak, and the blocks of the window still in
use are the evidence, by the line that allocated them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_membudget.probes import Probe, ProbeError
from pytest_membudget.probes.cupy.hook import live_rows, make_hook
from pytest_membudget.probes.records import CupyEvidence
from pytest_membudget.probes.shared import SharedSource

INSTALL = "install CuPy for your CUDA (or ROCm) version, e.g. pip install cupy-cuda12x"
#: What CuPy may raise without a driver or a device.
REFUSALS = (RuntimeError, OSError, AttributeError, ImportError)


def unavailable_reason() -> str | None:
    """Why CuPy's pools cannot be read here, or None."""
    try:
        import cupy
    except ImportError:
        return f"CuPy is not installed ({INSTALL})"
    except REFUSALS as exc:  # a build without its CUDA libraries
        return f"CuPy could not be imported ({type(exc).__name__}: {exc})"
    try:
        available = bool(cupy.cuda.is_available())
    except REFUSALS as exc:
        return f"CuPy found no usable CUDA device ({type(exc).__name__}: {exc})"
    if not available:
        return "cupy.cuda.is_available() is False (no CUDA device or driver)"
    pool = cupy.get_default_memory_pool()
    allocator = cupy.cuda.get_allocator()
    if getattr(allocator, "__self__", None) is not pool:
        return ("CuPy allocates through another allocator than its default memory pool "
                "(cupy.cuda.set_allocator was called), so the pool's figures say nothing of "
                "the workload's memory")
    return None


class CupyPools(SharedSource):
    """CuPy's pools for every cupy_* probe of a run, and the one hook on the device pool,
    entered on the workload's thread when the first probe starts and left with the last."""

    def __init__(self) -> None:
        import cupy

        super().__init__(None)
        self.cupy = cupy
        self.pool = cupy.get_default_memory_pool()
        self.hook = make_hook(cupy, self.pool)
        try:
            self.hook.__enter__()
        except KeyError as exc:  # a run inside a run: the outer one follows the pool
            raise ProbeError(f"the membudget memory hook is entered already ({exc})") from exc

    def close(self) -> None:
        self.hook.__exit__(None, None, None)


class CupyProbe(Probe):
    """One figure of CuPy's pools."""

    def __init__(self, options: Mapping[str, Any] | None = None, name: str = "") -> None:
        super().__init__(options)
        self.name = name
        self.source: CupyPools | None = None

    def unavailable(self) -> str | None:
        return unavailable_reason()

    def start(self) -> None:
        self.source = CupyPools.acquire(None, CupyPools)

    def before_window(self) -> None:
        assert self.source is not None
        hook = self.source.hook
        if not hook.lines:
            hook.resync()
            hook.live.clear()
            hook.lines = True

    def read(self) -> float:
        assert self.source is not None
        pool = self.source.pool
        if self.name == "cupy_used":
            return float(pool.used_bytes())
        if self.name == "cupy_total":
            return float(pool.total_bytes())
        if self.name == "cupy_free_blocks":
            return float(pool.n_free_blocks())
        return float(self.source.cupy.get_default_pinned_memory_pool().n_free_blocks())

    def after_sample(self) -> None:
        if self.source is not None:
            self.source.hook.resync()

    def peak(self) -> float | None:
        """The highest bytes in use the hook saw (cupy_used), a peak inside a call
        included."""
        if self.source is None or self.name != "cupy_used":
            return None
        return float(self.source.hook.highest)

    def evidence(self) -> dict[str, CupyEvidence] | None:
        if self.source is None or self.name not in ("cupy_used", "cupy_total"):
            return None
        return {"cupy": {"rows": live_rows(self.source.hook.live)}}

    def stop(self) -> None:
        if self.source is not None:
            self.source.release()
            self.source = None


def _factory(name: str) -> type[Probe]:
    class Named(CupyProbe):
        def __init__(self, options: Mapping[str, Any] | None = None) -> None:
            super().__init__(options, name=name)

    Named.__name__ = Named.__qualname__ = f"CupyProbe[{name}]"
    return Named


PROBE_CLASSES: dict[str, type[Probe]] = {
    name: _factory(name)
    for name in ("cupy_used", "cupy_total", "cupy_free_blocks", "cupy_pinned_free_blocks")}
