"""What the evidence explains: the share of a failing memory slope that the traced Python
allocations account for, and what the rest is. Native memory held in use shows in glibc's
bytes in use (the ``malloc`` probe); memory that RSS holds while bytes in use stay flat is
memory the allocator keeps free (fragmentation) or memory mapped outside malloc.
"""

from __future__ import annotations

from typing import Any

from pytest_membudget.judge.explain import explains

#: The probes whose slope the line is about: they see native memory as well as Python's.
#: (``heap`` is what tracemalloc traces: its share is all of it by construction.)
COARSE = ("rss", "uss", "pss", "malloc")
#: What a user can do about memory the allocator keeps free.
FRAGMENTATION_REMEDIES = ("MALLOC_ARENA_MAX=2 in the environment, ctypes.CDLL('libc.so.6')"
                          ".malloc_trim(0) between steps, or another allocator "
                          "(LD_PRELOAD=libjemalloc.so)")


def explain(failing: dict[str, float], traced: float | None,
            native: float | None) -> dict[str, Any] | None:
    """The share of the steepest failing coarse slope (``failing``: probe -> bytes per
    iteration) that ``traced`` (tracemalloc's net growth per iteration in the evidence rerun)
    accounts for, and what the rest is; ``native``: the ``malloc`` probe's slope over the same
    window where it was sampled, else None. None when no coarse probe failed or nothing was
    traced."""
    coarse = {name: slope for name, slope in failing.items() if name in COARSE and slope > 0}
    if not coarse or traced is None:
        return None
    probe = max(coarse, key=lambda name: coarse[name])
    slope = coarse[probe]
    traced = max(traced, 0.0)
    found: dict[str, Any] = {"probe": probe, "slope": slope, "traced": traced,
                             "share": traced / slope}
    rest = slope - traced
    if explains(traced, slope):
        found["rest"] = "python"
    elif probe == "malloc":
        found["rest"] = "native"
    elif native is None:
        found["rest"] = "unknown"
    else:
        found["native"] = native
        found["rest"] = "native" if explains(native, rest) else "free"
    return found
