"""Result types returned by the fixture and carried on test reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SCHEMA_VERSION = 1


@dataclass
class ProbeResult:
    """What one probe measured over one run, and how its budgets were judged."""

    name: str
    unit: str
    slope: float
    ci: tuple[float, float]
    peak: float
    growth: float
    samples: npt.NDArray[np.float64]
    sample_iterations: npt.NDArray[np.int64]
    verdict: str
    budgets: dict[str, float | None] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)

    def to_dict(self, *, samples: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "unit": self.unit,
            "slope": _finite(self.slope),
            "ci": [_finite(self.ci[0]), _finite(self.ci[1])],
            "peak": _finite(self.peak),
            "growth": _finite(self.growth),
            "verdict": self.verdict,
            "budgets": dict(self.budgets),
            "reasons": list(self.reasons),
        }
        if samples:
            data["samples"] = [float(v) for v in self.samples]
            data["sample_iterations"] = [int(v) for v in self.sample_iterations]
        return data


@dataclass
class MembudgetResult:
    """The outcome of one measured run: every probe's figures and the overall verdict."""

    iterations: int
    warmup: int
    stopped: str
    seconds: float
    probes: dict[str, ProbeResult]
    failures: list[str] = field(default_factory=list)
    evidence_data: dict[str, Any] = field(default_factory=dict)
    complete: bool = True
    #: The run settings in force (after marker, command line and ini were combined).
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures

    def __getitem__(self, probe: str) -> ProbeResult:
        return self.probes[probe]

    def to_dict(self, *, samples: bool = True) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "passed": self.passed,
            "complete": self.complete,
            "iterations": self.iterations,
            "warmup": self.warmup,
            "stopped": self.stopped,
            "seconds": round(self.seconds, 6),
            "failures": list(self.failures),
            "evidence": self.evidence_data,
            "settings": dict(self.settings),
            "probes": {name: p.to_dict(samples=samples) for name, p in self.probes.items()},
        }


class BudgetExceeded(AssertionError):
    """Raised in the test's call phase when a memory budget is exceeded."""

    def __init__(self, message: str, result: MembudgetResult | None = None) -> None:
        super().__init__(message)
        self.result = result


def _finite(value: float) -> float | None:
    return float(value) if value == value and abs(value) != float("inf") else None
