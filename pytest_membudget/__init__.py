"""pytest-membudget: memory budgets for loops, judged on the slope."""

from pytest_membudget.measure.results import (
    BudgetExceeded,
    BudgetOutcome,
    MembudgetResult,
    ProbeResult,
)
from pytest_membudget.vocabulary import BudgetKind, ProbeVerdict, Status, StopReason

__version__ = "0.1.0"

__all__ = ["BudgetExceeded", "BudgetKind", "BudgetOutcome", "MembudgetResult", "ProbeResult",
           "ProbeVerdict", "Status", "StopReason", "__version__"]
