"""Bounded caches on a retaining path: a ``functools.lru_cache`` with a ``maxsize`` (or a
mapping that keeps a ``maxsize`` and a ``currsize``, as cachetools' caches do) stops growing
when it is full. While it fills, a run that ends sees growth that is not a leak; the
evidence reads how full each such cache is and how fast it fills, so that the verdict can
say which cache, and in how many calls it stops.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Generator, Mapping, MutableMapping

from pytest_membudget.evidence.records import CacheInfo, FillRate, PathEntry
from pytest_membudget.evidence.steps import LEAST_CALLS, MOST_CALLS, iterations
from pytest_membudget.vocabulary import RootKind

_LRU_WRAPPER: tuple[type, ...] = tuple(
    t for t in (getattr(functools, "_lru_cache_wrapper", None),) if isinstance(t, type))


def is_lru_cache(obj: object) -> bool:
    """A function wrapped by ``functools.lru_cache`` (bounded or not)."""
    return bool(_LRU_WRAPPER) and isinstance(obj, _LRU_WRAPPER)


def _name(obj: object) -> str:
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    module = getattr(obj, "__module__", None) or type(obj).__module__
    return f"{module}.{qualname}" if module and module != "builtins" else str(qualname)


def fill(obj: object) -> tuple[int, int] | None:
    """(entries now, most entries) of a bounded cache, or None for anything else (an
    unbounded cache included: it never stops)."""
    try:
        if is_lru_cache(obj):
            info = obj.cache_info()  # type: ignore[attr-defined]
            size, most = info.currsize, info.maxsize
        elif isinstance(obj, MutableMapping) and not isinstance(obj, dict):
            size, most = getattr(obj, "currsize", None), getattr(obj, "maxsize", None)
        else:
            return None
    except Exception:  # a cache that cannot be read: not one to reason about
        return None
    if not isinstance(size, int) or not isinstance(most, (int, float)) or most <= 0:
        return None
    if isinstance(most, float) and not math.isfinite(most):
        return None
    return size, int(most)


def describe(obj: object) -> CacheInfo | None:
    """A bounded cache as the evidence's JSON shows it, or None."""
    found = fill(obj)
    if found is None:
        return None
    kind = "functools.lru_cache" if is_lru_cache(obj) else (
        f"{type(obj).__module__}.{type(obj).__qualname__}")
    return {"name": _name(obj), "kind": kind, "currsize": found[0], "maxsize": found[1]}


def fill_rates(caches: Mapping[int, object], start: int, seconds: float
               ) -> Generator[int, None, tuple[dict[int, FillRate], int]]:
    """A few more iterations (``seconds`` at most), with each cache's entries read before
    and after: entries gained per call, and calls until full. Returns them by the cache's
    id, and the iterations run."""
    before = {key: fill(obj) for key, obj in caches.items()}
    done = yield from iterations(start, MOST_CALLS, LEAST_CALLS,
                                 time.perf_counter() + seconds)
    rates: dict[int, FillRate] = {}
    for key, obj in caches.items():
        first, last = before[key], fill(obj)
        if first is None or last is None:
            continue
        per_call = (last[0] - first[0]) / done
        left = last[1] - last[0]
        rates[key] = {"currsize": last[0], "maxsize": last[1], "per_call": round(per_call, 2),
                      "calls_to_full": math.ceil(left / per_call) if per_call > 0 else None}
    return rates, done


def still_filling(paths: list[PathEntry], calls: int = 0) -> list[CacheInfo]:
    """The caches that hold all the growth the retaining paths found: every path from a root
    Python can see runs through a bounded cache that gained entries in the last calls and is
    not full. (An lru_cache keeps its results in entries the collector does not track, so
    their paths start at C code: those say nothing either way.) Empty when any path leads
    elsewhere (an unbounded container, a full cache) or none runs through a cache.

    ``calls``: the traced rerun's calls. A type that grew by fewer than half of them grew on
    some calls only, no part of the growth on every call that the verdict judged, and its
    path is passed over (one tuple kept by the captured ``sys.stderr`` during a rerun of six
    calls hid an ``lru_cache`` that held all the rest)."""
    found = [entry["path"] for entry in paths if entry.get("path")
             and entry["path"].get("root", {}).get("kind") != RootKind.NATIVE.value
             and 2 * int(entry.get("count") or 0) >= calls]
    caches = [path.get("cache") for path in found]
    if not found or any(not c or not c.get("calls_to_full") for c in caches):
        return []
    unique = {c["name"]: c for c in caches if c}
    return list(unique.values())
