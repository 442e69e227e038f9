"""Probes: one reading of one memory source, as cheap as the source allows.

A probe is built once per run, ``start()``-ed before warm-up, read after every sampled
iteration and ``stop()``-ed at the end, leaving the process as it found it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from pytest_membudget.catalog import PROBES


class ProbeError(RuntimeError):
    """A probe that cannot measure where it was started; the message says why and what to
    do (the fixture names the test)."""


class Probe:
    """Base class: override ``read``; the other hooks are optional."""

    name = ""
    #: Read before the other probes of a sample, whose reads may allocate.
    read_first = False

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options = dict(options or {})

    def unavailable(self) -> str | None:
        """Why this probe cannot run here (the test is skipped with this reason), or None."""
        return None

    def start(self) -> None:
        """Before warm-up; raises :class:`ProbeError` when it cannot measure here."""

    def before_window(self) -> None:
        """After warm-up, right before the first measured sample."""

    def note_iteration(self, iteration: int) -> None:
        """Before each sample: the iteration it follows (for sources that keep their own
        per-iteration records, such as the process tree's)."""

    def sync(self) -> None:
        """Before each reading, e.g. wait for queued device work."""

    def read(self) -> float:
        raise NotImplementedError

    def after_sample(self) -> None:
        """After every probe of a sample has been read."""

    def peak(self) -> float | None:
        """The highest value since ``start``, where the source keeps one between samples
        (a peak inside an iteration is missed by sampling after it)."""
        return None

    def evidence(self) -> Mapping[str, object] | None:
        """After a failing window, before ``stop``: what this source can tell about the
        growth (e.g. the CUDA allocator's history), under keys of the growth evidence that are
        its own (each source types its record: probes.cuda.history.CudaEvidence)."""
        return None

    def peak_evidence(self) -> Mapping[str, object] | None:
        """After a failing peak or rise of this probe, before ``stop``: what its source can
        tell about its highest point (the CUDA allocator's blocks live there)."""
        return None

    def stop(self) -> None:
        """After the last sample, also when the workload raised."""


def create(name: str, options: Mapping[str, Any] | None = None) -> Probe:
    """Instantiate the probe called ``name`` (its module is imported only now)."""
    info = PROBES[name]
    module = importlib.import_module(f"pytest_membudget.probes.{info.module}")
    factory: type[Probe] = module.PROBE_CLASSES[name]
    return factory(options)
