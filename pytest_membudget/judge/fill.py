"""A fill that slows down is not a leak: glibc's bytes in use rise while a library's free
lists or size-class caches fill under arrays of random sizes, each new size less likely than
the last, and lose most of their slope as they go; a native leak of a fixed size per call
keeps its slope, one of random sizes keeps its mean. One rule, with one parameter per probe
(catalog ``fill_keeps``), read by the auto policy when a failure is seen again and by the
sweep's second look at a test its screen flagged on such a probe alone: what grew
(``growing``), whether it is a fill probe alone (``filling``, ``alone``: the policy then
judges it over one more doubling before it stands), and whether it slowed down (``slowing``,
``kept``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from pytest_membudget.catalog import PROBES

if TYPE_CHECKING:  # the settings import judge.policy, which imports this module: no numpy
    from pytest_membudget.judge.verdict import Verdict


def filling(grew: Iterable[str]) -> bool:
    """Whether only probes whose growth may be a fill grew (catalog ``fill_keeps``); growth
    of Python objects beside them (``growing``) is not a fill alone."""
    names = list(grew)
    return bool(names) and all(PROBES[name].fill_keeps > 0 for name in names)


def alone(first: Mapping[str, float], now: Mapping[str, float]) -> bool:
    """Whether a failure seen again (``now``) grew on fill probes alone, as when it was first
    seen (``first``). A fill can keep its pace over one doubling of the window and lose it
    over the next: such a failure is judged over one more doubling before it stands."""
    return filling(first) and filling(now)


def slowing(first: Mapping[str, float], now: Mapping[str, float], *,
            few_calls: bool = False) -> bool:
    """Whether growth seen again (``now``: probe -> growth per call) is a fill slowing down
    since it was first seen (``first``): fill probes alone grew both times, and each kept
    less than its ``fill_keeps`` of its first growth. Read over a few calls (the sweep's
    rounds of a screen's length, against tails of dozens of calls), the slack of the rule is
    twice as wide: the share kept must be under 1 - 2 (1 - fill_keeps)."""
    return alone(first, now) and all(
        name in first and slope < kept(name, few_calls) * first[name]
        for name, slope in now.items())


def kept(probe: str, few_calls: bool = False) -> float:
    """The share of its first growth a probe must keep for its growth to go on."""
    keeps = PROBES[probe].fill_keeps
    return 1.0 - 2.0 * (1.0 - keeps) if few_calls else keeps


def growing(verdict: Verdict) -> tuple[tuple[str, float], ...]:
    """The slopes of growth at a failing checkpoint: of the probes failing in ``verdict``,
    by name, and, beside a failure, of the probes of Python objects (the catalog's
    ``blind_to_native``) that grow though they passed (their lower bound above zero: a
    block a call is under ``py_blocks``' resolution over a heavy step's short run): growth
    of glibc's bytes in use with a Python object a call beside it is no fill alone
    (filling)."""
    if not verdict.failed:
        return ()
    return tuple((p.probe, p.trend.slope) for p in verdict.probes.values()
                 if p.failed or (PROBES[p.probe].blind_to_native and p.trend.lower > 0))
