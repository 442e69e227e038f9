"""The states that travel between modules, as enums that mypy checks.

Each is a ``str`` enum, so a member equals its value (``ProbeVerdict.PASS == "pass"``) and
JSON writes the value; text for people is made from them at the edge (report, comparetext),
never here. Stdlib only: the plugin's entry point imports this module.
"""

from __future__ import annotations

from enum import Enum


class ProbeKind(str, Enum):
    """What a probe's figures are; decides which units a budget may be written in."""

    BYTES = "bytes"
    COUNT = "count"
    SECONDS = "seconds"


class BudgetKind(str, Enum):
    """What a budget limits: the slope per iteration at the end of the run, the highest
    value, or the growth over the window."""

    SLOPE = "slope"
    PEAK = "peak"
    GROWTH = "growth"

    @property
    def suffix(self) -> str:
        """The marker keyword's suffix: ``rss``, ``rss_peak``, ``rss_growth``."""
        return "" if self is BudgetKind.SLOPE else "_" + self.value


class GcPolicy(str, Enum):
    """``collect``: collect garbage before each sample of the window; ``off``: leave the
    collector alone."""

    COLLECT = "collect"
    OFF = "off"


class Status(str, Enum):
    """How one budget was judged."""

    PASS = "pass"
    FAIL = "fail"
    AMBIGUOUS = "ambiguous"


class ProbeVerdict(str, Enum):
    """How a probe's budgets came out over the whole run."""

    PASS = "pass"
    FAIL = "fail"
    #: the run ended with a budget that could still go either way
    INCONCLUSIVE = "inconclusive"
    #: not judged: the run was cut short, or the probe had no budget
    UNJUDGED = "unjudged"


class StopReason(str, Enum):
    """Why a run stopped where it did."""

    #: auto: the verdict was clear (a pass, or a confirmed failure)
    CLEAR = "clear"
    #: auto: max_iterations or max_seconds was reached
    CAP = "cap"
    #: the fixed number of iterations was run
    FIXED = "fixed"
    #: not stopped: the workload raised or the loop was left before the end
    RUNNING = "running"
    #: measuring is switched off (--membudget-disable)
    DISABLED = "disabled"


class Phase(str, Enum):
    """Where a run is: warming up, measuring, or rerunning for evidence after a failure."""

    WARMUP = "warmup"
    WINDOW = "window"
    EVIDENCE = "evidence"


class Change(str, Enum):
    """How a probe's slope compares with a baseline's (see :mod:`baseline`)."""

    REGRESSED = "regressed"
    #: higher, but within the tolerance (or the probe is not gated)
    WORSE = "worse"
    BETTER = "better"
    SAME = "same"
    #: a bound of either run could not be established
    UNJUDGED = "unjudged"


class Remedy(str, Enum):
    """What would settle a budget that ended inconclusive."""

    #: an auto run ran out of time: allow it more (max_seconds)
    MAX_SECONDS = "max_seconds"
    #: an auto run stopped at its max_iterations: raise it, or 'none'
    MAX_ITERATIONS = "max_iterations"
    #: a fixed count ended ambiguous: more iterations, or 'auto'
    ITERATIONS = "iterations"
    #: a coarse probe (rss, uss): budget an exact one too (the catalog names which)
    EXACT_PROBE = "exact_probe"
