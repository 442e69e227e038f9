"""The corpus of bench/gating_noise.py: budgeted tests whose figures the gate compares.

Leaks of 64 B to 64 KiB a call, clean loops, heavy numpy steps, footprints and phases, each
budget generous enough to pass (as a gated suite's are); ``GATING_LEAK=2`` doubles every leak
and ``GATING_PARTS=5`` grows every footprint by a quarter (the changed code). FAILING holds
three tests over their budgets, for the shards' comparison of verdicts.
"""

from __future__ import annotations

from pathlib import Path

CORPUS = '''\
"""The gating corpus: every budget generous enough to pass, as a gated suite's are."""
import os
import time

import numpy as np
import pytest

#: 1 as written; 2 doubles every leak (the changed code).
LEAK = int(os.environ.get("GATING_LEAK", "1"))
#: 4 as written; 5 grows every footprint by a quarter.
PARTS = int(os.environ.get("GATING_PARTS", "4"))
KEEP = []
A = np.random.default_rng(0).random((48, 48))
MIB = 1024 * 1024


def keep(size):
    KEEP.append(bytes(size * LEAK))


{leaks}
@pytest.mark.membudget(rss=0, heap=0)
def test_clean_dict(membudget):
    membudget.run(lambda: {i: str(i) for i in range(1000)})


@pytest.mark.membudget(rss=0)
def test_clean_numpy(membudget):
    membudget.run(lambda: np.ones(MIB // 8).sum())


def heavy_step(leak):
    deadline = time.perf_counter() + 0.01
    while time.perf_counter() < deadline:
        (A @ A).sum()
    if leak:
        KEEP.append(np.ones(leak * LEAK // 8))


@pytest.mark.membudget(rss=0)
def test_heavy_clean(membudget):
    membudget.run(heavy_step, 0)


@pytest.mark.membudget(rss="16 KiB/iter")
def test_heavy_leak_4KiB(membudget):
    membudget.run(heavy_step, 4096)


def load(parts, mib):
    held = [np.ones(mib * MIB // 8) for _ in range(parts)]
    return sum(float(a[0]) for a in held)


def objects(parts):
    held = [(i, str(i)) for i in range(parts * 50_000)]
    return len(held)


@pytest.mark.membudget(rss_rise="2 GiB")
def test_footprint_32MiB(membudget):
    membudget.run(load, PARTS, 8)


@pytest.mark.membudget(rss_rise="256 MiB")
def test_footprint_4MiB(membudget):
    membudget.run(load, PARTS, 1)


@pytest.mark.membudget(rss_rise="2 GiB", heap_rise="2 GiB", rss_peak="4 GiB",
                       gc_objects_rise=10_000_000)
def test_footprint_objects(membudget):
    membudget.run(objects, PARTS)


def test_phases(membudget):
    with membudget.phase("load", rss_rise="2 GiB"):
        load(PARTS, 8)
    with membudget.phase("parse"):
        objects(PARTS)
'''

#: Leaks of the corpus, bytes kept a call; each budget is 4x the leak (at least 1 KiB): the
#: gate, not the budget, is what catches a leak that doubled.
LEAKS = {"64B": 64, "256B": 256, "1KiB": 1024, "4KiB": 4096, "64KiB": 65536}
LEAK_TEST = '''\
@pytest.mark.membudget(rss="{budget} B/iter", heap="{budget} B/iter", malloc="{budget} B/iter",
                       py_blocks="8/iter")
def test_leak_{name}(membudget):
    membudget.run(keep, {size})
'''


def corpus_text() -> str:
    leaks = "\n\n".join(LEAK_TEST.format(name=name, size=size, budget=4 * max(size, 256))
                         for name, size in LEAKS.items())
    return CORPUS.replace("{leaks}", leaks)


def write_corpus(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / "test_gating_corpus.py"
    path.write_text(corpus_text())
    (where / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return path


#: Beside the corpus in the ``shards`` command: budgets that fail, so that the verdicts
#: compared are not all passes.
FAILING = '''\
import numpy as np
import pytest

KEPT = []


@pytest.mark.membudget(heap=0, evidence=False)
def test_fails_leak(membudget):
    membudget.run(lambda: KEPT.append(bytes(65536)))


@pytest.mark.membudget(rss_rise="8 MiB", evidence=False)
def test_fails_footprint(membudget):
    membudget.run(lambda: [np.ones(1024 * 1024) for _ in range(4)])


def test_fails_phase(membudget):
    with membudget.phase("load", rss_rise="8 MiB"):
        held = [np.ones(1024 * 1024) for _ in range(4)]
    del held
'''
