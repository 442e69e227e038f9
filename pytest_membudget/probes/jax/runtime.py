"""JAX as the probes find it: imported on demand, the devices they read, and why a probe
cannot measure here (JAX missing, or a backend that keeps no allocator statistics)."""

from __future__ import annotations

import os
from typing import Any

INSTALL = "pip install 'pytest-membudget[jax]'"
#: The probes that read JAX's device allocator (Device.memory_stats()).
DEVICE_PROBES = ("jax_device_used", "jax_device_reserved")
#: The figure each device probe reads, and its high-water mark: the first key present.
#: The BFC allocator of JAX's GPU client books the bytes it took from the device as
#: ``pool_bytes``; other clients (TPU's) as ``bytes_reserved``.
CURRENT_KEYS: dict[str, tuple[str, ...]] = {
    "jax_device_used": ("bytes_in_use",),
    "jax_device_reserved": ("pool_bytes", "bytes_reserved"),
}
PEAK_KEYS: dict[str, tuple[str, ...]] = {
    "jax_device_used": ("peak_bytes_in_use",),
    "jax_device_reserved": ("peak_pool_bytes", "peak_bytes_reserved"),
}
#: What JAX may raise when asked for a device or its statistics.
REFUSALS = (RuntimeError, ValueError, AttributeError, TypeError, NotImplementedError)
ALLOCATOR_VARIABLE = "XLA_PYTHON_CLIENT_ALLOCATOR"


def load() -> Any:
    import jax

    return jax


def local_devices(jax: Any) -> list[Any]:
    """The devices of the default backend this process addresses (jax.local_devices())."""
    return list(jax.local_devices())


def first_key(stats: Any, keys: tuple[str, ...]) -> str | None:
    return next((key for key in keys if key in stats), None)


def device_reason(probe: str, devices: list[Any], stats: list[Any]) -> str | None:
    """Why ``probe`` cannot read these devices' statistics (``stats``: what each device's
    memory_stats() returned), or None."""
    platform = str(getattr(devices[0], "platform", "?")) if devices else "?"
    if not devices:
        return "JAX reports no local device"
    if any(s is None for s in stats):
        hint = ""
        if os.environ.get(ALLOCATOR_VARIABLE, "").strip().lower() == "platform":
            hint = (f" ({ALLOCATOR_VARIABLE}=platform: the platform allocator books nothing; "
                    "unset it for the default BFC allocator)")
        return (f"JAX's {platform} backend keeps no allocator statistics "
                f"(Device.memory_stats() is None){hint}; {probe} needs JAX on a GPU or TPU. "
                "jax_arrays and jax_array_bytes measure the arrays alive on any backend, rss "
                "the host's memory")
    if any(first_key(s, CURRENT_KEYS[probe]) is None for s in stats):
        return (f"JAX's {platform} allocator reports none of "
                f"{', '.join(CURRENT_KEYS[probe])} (memory_stats() holds "
                f"{', '.join(sorted(stats[0]))}); budget jax_device_used instead")
    return None


def unavailable_reason(probe: str) -> str | None:
    """Why ``probe`` cannot measure here, or None."""
    try:
        jax = load()
    except ImportError:
        return f"JAX is not installed ({INSTALL})"
    if probe not in DEVICE_PROBES:
        return None
    try:
        devices = local_devices(jax)
        stats = [device.memory_stats() for device in devices]
    except REFUSALS as exc:
        return f"JAX could not read its devices' memory statistics ({type(exc).__name__}: {exc})"
    return device_reason(probe, devices, stats)
