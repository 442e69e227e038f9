"""High-water marks that nest. The kernel keeps one peak RSS per process (``VmHWM``, reset by
writing 5 to ``clear_refs``) and tracemalloc one traced peak (``reset_peak``); a run and the
phases inside it each want their own. Every reset goes through a :class:`Ledger`, which first
folds the source's peak into every mark still open: a phase's reset never erases the peak of
the run around it."""

from __future__ import annotations

import math
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(eq=False)
class Mark:
    """One holder's view of a source's peak: the highest value folded in since it opened."""

    ledger: Ledger
    folded: float = -math.inf

    def peak(self) -> float:
        """The highest value since this mark opened (the source's peak since its latest
        reset, and what earlier resets folded in)."""
        return max(self.folded, self.ledger.read())

    def reopen(self) -> None:
        """Hold from now on, as if opened now (the measured window begins after a warm-up):
        the source starts again, and every other open mark keeps its peak so far."""
        self.ledger.restart()
        self.folded = -math.inf

    def close(self) -> float:
        """Stop holding; the peak at closing."""
        peak = self.peak()
        self.ledger.release(self)
        return peak


class Ledger:
    """The open marks of one peak source."""

    def __init__(self, read: Callable[[], float], reset: Callable[[], bool]) -> None:
        self.read = read
        self._reset = reset
        self.marks: list[Mark] = []

    def fold(self, peak: float | None = None) -> None:
        """Fold the source's current peak (``peak``, where the caller has just read it) into
        every open mark."""
        if self.marks:
            if peak is None:
                peak = self.read()
            for mark in self.marks:
                if peak > mark.folded:
                    mark.folded = peak

    def open(self) -> Mark | None:
        """A new mark from now (the source is reset after the open marks took its peak);
        None where the source cannot be reset here."""
        self.fold()
        if not self._reset():
            return None
        mark = Mark(self)
        self.marks.append(mark)
        return mark

    def restart(self) -> None:
        """Start the source's peak again from its current value, keeping every open mark's
        peak so far (a reset that must not erase anything)."""
        self.fold()
        self._reset()

    def discard(self) -> None:
        """Start the source's peak again and forget what it saw since the marks' latest fold:
        the plugin's own work (its readings after a sample's first read), not the workload's."""
        self._reset()

    def release(self, mark: Mark) -> None:
        if mark in self.marks:
            self.marks.remove(mark)


def _read_hwm() -> float:
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return float(int(line.split()[1]) * 1024)
    except OSError:
        pass
    return -math.inf


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return True


def _read_traced_peak() -> float:
    return float(tracemalloc.get_traced_memory()[1]) if tracemalloc.is_tracing() else -math.inf


def _reset_traced_peak() -> bool:
    if not tracemalloc.is_tracing():
        return False
    tracemalloc.reset_peak()
    return True


#: The kernel's peak RSS of this process (Linux 4.0+).
RSS_PEAK = Ledger(_read_hwm, _reset_hwm)
#: tracemalloc's traced peak (while tracing).
TRACED_PEAK = Ledger(_read_traced_peak, _reset_traced_peak)
