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
#: The only one a torch whose snapshot has no ``allocator_settings`` (before 2.5) reads.
LEGACY_CONF_VARIABLE = "PYTORCH_CUDA_ALLOC_CONF"
#: Set to any value, torch allocates with cudaMalloc directly, past the caching allocator.
NO_CACHING_VARIABLE = "PYTORCH_NO_CUDA_MEMORY_CACHING"
#: What torch may raise when asked for what it cannot give (an allocator backend without it,
#: a torch without the call or the argument).
REFUSALS = (RuntimeError, TypeError, ValueError, AttributeError)


def stat(stats: Mapping[str, Any], probe: str) -> float:
    """One probe's figure from a memory_stats dict. Once CUDA is initialised the dict holds
    every key whatever was allocated (it is ``{}`` before: the probes initialise CUDA first)."""
    return float(stats.get(STAT_KEYS[probe], 0))


def allocator_backend(torch: Any) -> str:
    """``native`` or ``cudaMallocAsync``, as torch reports it (no CUDA context is created)."""
    query = getattr(torch.cuda.memory, "get_allocator_backend", None)
    return str(query()) if query is not None else NATIVE


def caching_off(torch: Any) -> str | None:
    """How the caching allocator is bypassed, in words, or None when it is in use. torch's
    own query sees both ways (the variable, and ``caching_allocator_enable(False)`` at run
    time); a torch without it is asked through the variable."""
    query = getattr(torch._C, "_cuda_cudaCachingAllocator_is_enabled", None)
    if query is not None:
        try:
            enabled = bool(query())
        except REFUSALS:
            enabled = True
        return None if enabled else (
            f"the CUDA caching allocator is off ({NO_CACHING_VARIABLE} is set, or "
            "torch.cuda.memory.caching_allocator_enable(False) was called)")
    value = os.environ.get(NO_CACHING_VARIABLE)
    return None if value is None else (
        f"the CUDA caching allocator is off ({NO_CACHING_VARIABLE}={value!r}: torch reads "
        "any value as set)")


def expandable_segments(settings: str) -> bool:
    """Whether an allocator settings string turns expandable segments on: as torch parses it,
    spaces dropped and the last of repeated keys in force."""
    on = False
    for item in settings.replace(" ", "").split(","):
        key, _, value = item.partition(":")
        if key == "expandable_segments":
            on = value == "True"
    return on


def expandable_segments_on(torch: Any) -> bool:
    """Whether expandable segments are in force: the allocator's own configuration, from its
    snapshot (torch 2.5 and later: it sees a change made at run time, which the settings
    string of the last change may not name), else the environment as such a torch reads it."""
    try:
        in_force = torch.cuda.memory._snapshot().get("allocator_settings", {})
    except REFUSALS:
        in_force = {}
    if "expandable_segments" in in_force:
        return bool(in_force["expandable_segments"])
    return expandable_segments(os.environ.get(LEGACY_CONF_VARIABLE, ""))


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
    if probe is None:
        return None
    if probe != "cuda_device_used" and (off := caching_off(torch)):
        return (f"{off}: torch allocates with cudaMalloc directly and books nothing, so "
                "memory_stats stays at 0 and snapshots hold no block. Only cuda_device_used "
                "measures under it")
    if probe in BACKEND_NEUTRAL:
        return None
    backend = allocator_backend(torch)
    if backend != NATIVE:
        return (f"the CUDA allocator backend is {backend} (set in {' or '.join(CONF_VARIABLES)}), "
                "which keeps no pool, block, segment or retry figures: torch reports them as 0. "
                f"Only {', '.join(BACKEND_NEUTRAL)} measure under it")
    if probe == "cuda_segments" and expandable_segments_on(torch):
        return ("expandable segments are on (expandable_segments:True in the allocator's "
                "settings in force): segments grow in place, so their count never moves; budget "
                "cuda_reserved instead")
    return None
