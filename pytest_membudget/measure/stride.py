"""How many iterations pass between samples, and what sampling costs."""

from __future__ import annotations

import math

#: Share of the workload's time that sampling may take; the sampling stride follows from it.
SAMPLING_OVERHEAD = 0.05
#: Fewest samples an auto run aims for in its longest window.
AUTO_MIN_SAMPLES = 64
#: Fewest samples a fixed run aims for.
FIXED_MIN_SAMPLES = 32


class Stride:
    """How many iterations pass between samples: sampling is kept near SAMPLING_OVERHEAD of
    the workload's time, from the measured cost of a sample and of an iteration."""

    def __init__(self, iteration_cost: float, most: int, least: int = 1) -> None:
        #: The warm-up's median iteration time: the window's first estimate.
        self.iteration_cost = iteration_cost
        self.most = most
        self.costs = 0.0
        self.samples = 0
        self.body_total = 0.0
        #: The narrowest stride allowed (no wider than ``most``): a probe's own need
        #: (catalog ``least_stride``), then the spacing of the window's samples once thinned.
        self.least = self.every = max(1, min(least, most))

    def calibrate(self, sample_cost: float) -> None:
        """After the window's first sample, which cost ``sample_cost``."""
        self.costs = sample_cost
        self.samples = 1
        self.every = self.choose(sample_cost, self.iteration_cost)

    def choose(self, sample_cost: float, iteration_cost: float) -> int:
        if iteration_cost <= 0 or not math.isfinite(iteration_cost):
            return self.least
        wanted = math.ceil(sample_cost / (SAMPLING_OVERHEAD * iteration_cost))
        return int(min(max(self.most, self.least), max(self.least, wanted)))

    def sampled(self, cost: float, body: float) -> None:
        """A sample cost ``cost`` seconds; the workload ran ``body`` seconds since the last."""
        self.costs += cost
        self.samples += 1
        self.body_total += body

    def rethink(self, measured: int) -> int:
        """At a checkpoint: the stride from the mean costs so far."""
        self.every = self.choose(self.costs / self.samples, self.body_total / measured)
        return self.every

    def thinned(self) -> int:
        """The window's samples were thinned to every other one: so is the stride."""
        self.least = max(self.least, self.every) * 2
        self.every = self.least
        return self.every

    @staticmethod
    def most_for(total: int, fixed: bool) -> int:
        """The widest stride that still leaves the window enough samples."""
        return max(1, total // (FIXED_MIN_SAMPLES if fixed else AUTO_MIN_SAMPLES))
