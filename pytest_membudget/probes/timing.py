"""Wall time per iteration; the runner times the workload and hands the figure over."""

from __future__ import annotations

from pytest_membudget.probes import Probe


class IterTimeProbe(Probe):
    """Mean seconds per iteration since the previous sample (the workload only: sampling and
    collection are not counted). A positive slope means the loop slows down."""

    name = "iter_time"
    value = 0.0

    def read(self) -> float:
        return self.value


PROBE_CLASSES: dict[str, type[Probe]] = {"iter_time": IterTimeProbe}
