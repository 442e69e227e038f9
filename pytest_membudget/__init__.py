"""pytest-membudget: memory budgets for loops, judged on the slope.

The names users import live here, whichever room of the package defines them; the rooms are
drawn in docs/architecture.md.
"""

from pytest_membudget.distributed import OversubscribedWarning
from pytest_membudget.measure.results import (
    BudgetExceeded,
    BudgetOutcome,
    FootprintRunaway,
    MembudgetResult,
    ProbeResult,
)
from pytest_membudget.vocabulary import BudgetKind, ProbeVerdict, Status, StopReason

__version__ = "0.1.0"

# Failures print as pytest_membudget.BudgetExceeded, the name users catch, wherever the class
# is defined.
BudgetExceeded.__module__ = FootprintRunaway.__module__ = __name__

__all__ = ["BudgetExceeded", "BudgetKind", "BudgetOutcome", "FootprintRunaway",
           "MembudgetResult",
           "OversubscribedWarning", "ProbeResult", "ProbeVerdict", "Status", "StopReason",
           "__version__"]
