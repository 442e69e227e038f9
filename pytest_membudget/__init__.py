"""pytest-membudget: memory budgets for loops, judged on the slope."""

from pytest_membudget.results import BudgetExceeded, MembudgetResult, ProbeResult

__version__ = "0.1.0"

__all__ = ["BudgetExceeded", "MembudgetResult", "ProbeResult", "__version__"]
