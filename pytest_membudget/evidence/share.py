"""What the evidence explains: the share of a failing memory slope that the traced Python
allocations account for, and what the rest is. Native memory held in use shows in glibc's
bytes in use (the probe with ``native_in_use`` in the catalog); memory that RSS holds while
bytes in use stay flat is memory the allocator keeps free (fragmentation) or memory mapped
outside malloc.
"""

from __future__ import annotations

from pytest_membudget.catalog import PROBES
from pytest_membudget.evidence.records import Explained
from pytest_membudget.vocabulary import most_of

#: What a user can do about memory the allocator keeps free.
FRAGMENTATION_REMEDIES = ("MALLOC_ARENA_MAX=2 in the environment, ctypes.CDLL('libc.so.6')"
                          ".malloc_trim(0) between steps, or another allocator "
                          "(LD_PRELOAD=libjemalloc.so)")


def explain(failing: dict[str, float], traced: float | None,
            native: float | None) -> Explained | None:
    """The share of the steepest failing slope of a probe that sees native memory as well as
    Python's (catalog ``python_share``; ``failing``: probe -> bytes per iteration) that
    ``traced`` (tracemalloc's net growth per iteration in the evidence rerun) accounts for,
    and what the rest is; ``native``: the slope over the same window of the probe that counts
    native memory in use, where it was sampled, else None. None when no such probe failed or
    nothing was traced."""
    shared = {name: slope for name, slope in failing.items()
              if name in PROBES and PROBES[name].python_share and slope > 0}
    if not shared or traced is None:
        return None
    probe = max(shared, key=lambda name: shared[name])
    slope = shared[probe]
    traced = max(traced, 0.0)
    found: Explained = {"probe": probe, "slope": slope, "traced": traced,
                        "share": traced / slope}
    rest = slope - traced
    if most_of(traced, slope):
        found["rest"] = "python"
    elif PROBES[probe].native_in_use:
        found["rest"] = "native"
    elif native is None:
        found["rest"] = "unknown"
    else:
        found["native"] = native
        found["rest"] = "native" if most_of(native, rest) else "free"
    return found
