"""Shared bits of the example suites: problem scale, the ``cuda`` marker, and allocator
hygiene between tests.

Scale: ``MEMBUDGET_EXAMPLES_SCALE=ci`` (the default: small, quick, for CI) or ``large`` (the
size of the field workloads the seeds describe; minutes and gigabytes). Each example module
reads :data:`SCALE` and picks its sizes.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Generator

import pytest

from pytest_membudget.probes.rss import release_free_memory as trim_malloc

SCALES = ("ci", "large")
SCALE = os.environ.get("MEMBUDGET_EXAMPLES_SCALE", "ci").strip().lower() or "ci"
if SCALE not in SCALES:
    raise pytest.UsageError(
        f"MEMBUDGET_EXAMPLES_SCALE={SCALE!r}: expected one of {', '.join(SCALES)}"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cuda: needs a CUDA device; skipped unless torch.cuda.is_available()"
    )


def pytest_report_header(config: pytest.Config) -> str:
    return f"membudget examples scale: {SCALE} (MEMBUDGET_EXAMPLES_SCALE)"


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(item.get_closest_marker("cuda") for item in items) and not _cuda_available():
        skip = pytest.mark.skip(reason="needs CUDA (torch.cuda.is_available() is False)")
        for item in items:
            if item.get_closest_marker("cuda"):
                item.add_marker(skip)


def keep_pages_small() -> None:
    """Stop numpy from advising transparent huge pages for its large arrays.

    numpy asks for huge pages (``madvise(MADV_HUGEPAGE)``) for arrays of 4 MiB and more. Once
    glibc serves such an array from its heap, the advice stays on that range after the array
    is freed, and a later test's small allocations there fault in 2 MiB at a time: RSS then
    rises in 2 MiB steps instead of pages. After the large backward induction, the broken
    RSSM collector's 250 KiB per step read as a 2 MiB step every 8 steps, and its 60-step run
    ended inconclusive in 1 of 2 runs (bounds 34-512 KiB/step; 239-250 KiB/step without the
    advice).
    """
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # numpy 1.x
        from numpy.core.multiarray import _set_madvise_hugepage
    _set_madvise_hugepage(False)


keep_pages_small()


def release_free_memory() -> None:
    """Collect garbage and hand free heap pages back to the OS (glibc only).

    Memory a previous test freed but the allocator kept would otherwise be reused by the next
    test without raising RSS, and hide that test's growth from the rss probe.
    """
    gc.collect()
    trim_malloc()


def current_rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    # Runs before the plugin's own setup hook reads the membudget markers.
    release_free_memory()
    return (yield)


@pytest.fixture
def scale() -> str:
    return SCALE


class MemoryTools:
    """Helpers for tests that report figures of their own (not budgets)."""

    current_rss = staticmethod(current_rss)
    release_free_memory = staticmethod(release_free_memory)


@pytest.fixture
def memory_tools() -> type[MemoryTools]:
    return MemoryTools
