"""Whole runs of the CUDA probes against the stand-in allocator of fake_torch.py."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from pytest_membudget.judge.spec import build_spec
from pytest_membudget.measure.loop import capacity_for, measure, probe_options
from pytest_membudget.measure.results import MembudgetResult, build_result
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.settings import default_run
from support import fake_torch

RUN = default_run(iterations=60, warmup=3)


def install(monkeypatch: pytest.MonkeyPatch,
            **allocator: Any) -> tuple[Any, fake_torch.FakeAllocator]:
    """Put a fake torch in sys.modules, as ``import torch`` finds it."""
    torch, fake = fake_torch.make(**allocator)
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch, fake


def run(monkeypatch: pytest.MonkeyPatch, allocator: dict[str, Any] | None = None,
        workload: Callable[[fake_torch.FakeAllocator], None] | None = None,
        prepare: Callable[[Any, fake_torch.FakeAllocator], None] | None = None,
        **marker: object) -> tuple[MembudgetResult, fake_torch.FakeAllocator]:
    """Measure ``workload`` (default: the allocator's ``step``) under the marker's budgets;
    ``prepare`` gets the fake torch first."""
    from pytest_membudget.probes import create

    torch, fake = install(monkeypatch, **(allocator or {}))
    if prepare is not None:
        prepare(torch, fake)
    spec = build_spec(RUN, (), marker, "in test")
    options = probe_options(spec)
    probes = {name: create(name, options) for name in spec.probes}
    m = Measurement(spec, probes, capacity_for(spec))
    for _ in measure(spec, probes, m):
        (workload or fake_torch.FakeAllocator.step)(fake)
    return build_result(m), fake
