"""The ``membudget`` fixture object: run(fn), iterate() and the repeated test body."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest

from pytest_membudget.results import BudgetExceeded, MembudgetResult
from pytest_membudget.spec import BudgetSpec
from pytest_membudget.vocabulary import Phase, StopReason

if TYPE_CHECKING:
    from pytest_membudget.sampling import Measurement

#: Probes sampled when no budget names any: the cheap ones, for a result to look at.
DEFAULT_PROBES = ("rss", "gc_objects", "threads", "fds", "iter_time")


@dataclass(repr=False)
class MemBudget:
    """Runs a workload for the configured iterations, measures it and judges the budgets.

    ``run(fn, *args, **kwargs)`` calls ``fn`` once per iteration; ``for i in iterate(): ...``
    is the loop form. Both raise :class:`pytest_membudget.BudgetExceeded` when a budget is
    exceeded and otherwise leave the result in :attr:`result`.
    """

    test: str
    spec: BudgetSpec
    disabled: bool = False
    result: MembudgetResult | None = None
    _measurement: Measurement | None = field(default=None, repr=False)
    _loop: Generator[int, None, Measurement] | None = field(default=None, repr=False)
    _used: bool = field(default=False, repr=False)

    def run(self, fn: Callable[..., object], *args: object, **kwargs: object) -> MembudgetResult:
        """Call ``fn(*args, **kwargs)`` for the warm-up and measured iterations, then judge."""
        __tracebackhide__ = True
        if not callable(fn):
            self._used = True  # the test meant to measure: one error is enough, not a second
            pytest.fail(
                f"{self.test}: membudget.run() takes the workload to repeat as its first "
                f"argument, a callable; got {type(fn).__name__} {fn!r:.80}",
                pytrace=False,
            )
        loop = self.iterate()
        for _ in loop:
            try:
                fn(*args, **kwargs)
            except Exception as exc:
                if self._measurement is None or self._measurement.phase is not Phase.EVIDENCE:
                    raise
                # The verdict was already in; a workload that cannot run longer (a finite
                # data source, say) only cuts the evidence short.
                loop.close()
                self._fail_without_evidence(exc)
        assert self.result is not None
        return self.result

    def iterate(self) -> Generator[int, None, None]:
        """``for i in membudget.iterate(): body`` repeats ``body`` and measures it."""
        __tracebackhide__ = True
        self._begin()
        if self.disabled:
            yield 0
            self.result = MembudgetResult(1, 0, StopReason.DISABLED, 0.0, {})
            return
        from pytest_membudget.probes import create
        from pytest_membudget.results import build_result
        from pytest_membudget.runner import capacity_for, measure
        from pytest_membudget.sampling import Measurement

        names = self.spec.probes or DEFAULT_PROBES
        options = {"device": self.spec.run.device, "cuda_history": self.spec.run.cuda_history}
        probes = {name: create(name, options) for name in names}
        self._measurement = Measurement(self.spec, probes, capacity_for(self.spec))
        self._loop = measure(self.spec, probes, self._measurement)
        yield from self._loop
        self._loop = None
        self.result = build_result(self._measurement)
        if not self.result.passed:
            from pytest_membudget.report import failure_message

            raise BudgetExceeded(
                failure_message(self.test, self.result, self.spec.run.confidence), self.result
            )
        if self.spec.run.strict and self.result.unsettled:
            from pytest_membudget.report import strict_message

            raise BudgetExceeded(strict_message(self.test, self.result), self.result)

    def __repr__(self) -> str:
        budgets = ", ".join(f"{b.key}={b.limit:g}" for b in self.spec.budgets)
        return f"<membudget {self.test}: {budgets or 'no budgets'}>"

    def _fail_without_evidence(self, exc: BaseException) -> None:
        __tracebackhide__ = True
        from pytest_membudget.report import failure_message
        from pytest_membudget.results import build_result

        self._loop = None
        assert self._measurement is not None
        result = build_result(self._measurement)
        result.evidence_data = {
            "error": f"the workload raised {type(exc).__name__}: {exc} during the evidence "
                     "rerun, so no evidence was gathered"
        }
        self.result = result
        raise BudgetExceeded(
            failure_message(self.test, result, self.spec.run.confidence), result
        ) from exc

    def reset(self) -> None:
        """Forget the previous run so that the same test can measure again."""
        self._close()
        self.result = None
        self._measurement = None
        self._used = False

    # -- plumbing for the plugin ------------------------------------------------------------

    def _begin(self) -> None:
        if self._used:
            pytest.fail(
                f"{self.test}: the membudget fixture was already used for a run in this test; "
                "call membudget.reset() before measuring again (each run is judged on its own)",
                pytrace=False,
            )
        self._used = True

    def _close(self) -> None:
        """Stop a loop left suspended (the workload raised, or the loop was left early)."""
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def partial_result(self) -> MembudgetResult | None:
        """The samples so far of a run that did not finish."""
        if self._measurement is None or self.result is not None:
            return None
        from pytest_membudget.results import build_result

        return build_result(self._measurement)

    @property
    def used(self) -> bool:
        return self._used
