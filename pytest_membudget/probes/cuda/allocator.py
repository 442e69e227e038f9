"""Questions put to torch's CUDA caching allocator without touching the device: which figure
a probe reads from ``memory_stats``, which backend and settings are in force, and why a probe
cannot measure here."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

#: probe name -> key in torch.cuda.memory_stats()
STAT_KEYS: dict[str, str] = {
    "cuda_allocated": "allocated_bytes.all.current",
    "cuda_reserved": "reserved_bytes.all.current",
    "cuda_small_pool": "active_bytes.small_pool.current",
    "cuda_large_pool": "active_bytes.large_pool.current",
    "cuda_small_blocks": "active.small_pool.current",
    "cuda_large_blocks": "active.large_pool.current",
    "cuda_segments": "segment.all.current",
    "cuda_alloc_retries": "num_alloc_retries",
}
#: The probes that still measure under an allocator backend other than the native caching
#: allocator: cudaMallocAsync books only the all-pool totals and reports every pool, block,
#: segment and retry figure as 0.
BACKEND_NEUTRAL = ("cuda_allocated", "cuda_reserved", "cuda_device_used")
NATIVE = "native"
#: Where torch reads the allocator's settings from, the newer name first.
CONF_VARIABLES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")


def stat(stats: Mapping[str, Any], probe: str) -> float:
    """One probe's figure from a memory_stats dict. Once CUDA is initialised the dict holds
    every key whatever was allocated (it is ``{}`` before: the probes initialise CUDA first)."""
    return float(stats.get(STAT_KEYS[probe], 0))


def allocator_backend(torch: Any) -> str:
    """``native`` or ``cudaMallocAsync``, as torch reports it (no CUDA context is created)."""
    query = getattr(torch.cuda.memory, "get_allocator_backend", None)
    return str(query()) if query is not None else NATIVE


def allocator_settings(torch: Any) -> str:
    """The allocator's settings string: the one in force where torch can say (it may have
    been changed at run time), else the environment's."""
    query = getattr(torch._C, "_accelerator_getAllocatorSettings", None)
    if query is not None:
        return str(query())
    return next((os.environ[name] for name in CONF_VARIABLES if os.environ.get(name)), "")


def expandable_segments(settings: str) -> bool:
    """Whether ``expandable_segments:True`` is among the allocator settings."""
    for item in settings.split(","):
        key, _, value = item.partition(":")
        if key.strip() == "expandable_segments":
            return value.strip().lower() == "true"
    return False


def unavailable_reason(device: str | None, probe: str | None = None) -> str | None:
    """Why CUDA (or ``probe`` on this allocator) cannot be measured here, or None."""
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install 'pytest-membudget[torch]')"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False (no CUDA device, or a CPU build of torch)"
    if device is not None:
        try:
            index = torch.device(f"cuda:{device}" if device.isdigit() else device).index
        except (RuntimeError, ValueError) as exc:
            return f"device={device!r} is not a CUDA device ({exc})"
        if index is not None and index >= torch.cuda.device_count():
            return f"device={device!r} but only {torch.cuda.device_count()} CUDA device(s) exist"
    if probe is None or probe in BACKEND_NEUTRAL:
        return None
    backend = allocator_backend(torch)
    if backend != NATIVE:
        return (f"the CUDA allocator backend is {backend} (set in {' or '.join(CONF_VARIABLES)}), "
                "which keeps no pool, block, segment or retry figures: torch reports them as 0. "
                f"Only {', '.join(BACKEND_NEUTRAL)} measure under it")
    if probe == "cuda_segments" and expandable_segments(allocator_settings(torch)):
        return ("expandable segments are on (expandable_segments:True in the allocator "
                "settings): segments grow in place, so their count never moves; budget "
                "cuda_reserved instead")
    return None
