"""The states that travel between modules, as enums that mypy checks, and the one share
every layer reads as most of a whole.

Each is a ``str`` enum, so a member equals its value (``ProbeVerdict.PASS == "pass"``) and
JSON writes the value; text for people is made from them at the edge (render/),
never here. Stdlib only: the plugin's entry point imports this module.
"""

from __future__ import annotations

from enum import Enum

#: A part of at least this share of a whole is most of it: its largest part, whatever the
#: rest is made of. A part explains a whole when it is most of it (judge/explain.py): Python's
#: bytes of a coarse slope (allocators round them up: pymalloc's arenas and pages, glibc's
#: chunks), native bytes in use of what Python's leave unexplained; the evidence reads the
#: same share of a footprint's rise (evidence/composition.py), and of whatever else it
#: weighs as most of a whole (most_of).
MOST_OF = 0.5


def most_of(part: float, whole: float) -> bool:
    """Whether ``part`` is most of ``whole``: MOST_OF of it or more."""
    return part >= MOST_OF * whole


class ProbeKind(str, Enum):
    """What a probe's figures are; decides which units a budget may be written in."""

    BYTES = "bytes"
    COUNT = "count"
    SECONDS = "seconds"


class LeftBehind(str, Enum):
    """What a failure of a probe left behind that its evidence lists, under the evidence's
    key of that name (catalog ``evidence_list``): threads left running, descriptors left
    open, asyncio tasks left pending. The first thread or descriptor is the first line of
    the leak's evidence (the sweep's table); pending tasks stand beside their lines."""

    THREADS = "threads"
    FDS = "fds"
    TASKS = "tasks"


class BudgetKind(str, Enum):
    """What a budget limits: the slope per iteration at the end of the run, the highest
    value, the growth over the window (what stays), or the rise from the run's start to its
    highest point (how high it went)."""

    SLOPE = "slope"
    PEAK = "peak"
    GROWTH = "growth"
    RISE = "rise"

    @property
    def suffix(self) -> str:
        """The marker keyword's suffix: ``rss``, ``rss_peak``, ``rss_growth``, ``rss_rise``."""
        return "" if self is BudgetKind.SLOPE else "_" + self.value

    @property
    def footprint(self) -> bool:
        """Whether the budget is about the highest point (peak, rise), not growth: its
        failure is explained by what was alive at the peak, not by what grew."""
        return self in (BudgetKind.PEAK, BudgetKind.RISE)


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
    #: the run was stopped at the ceiling inside a call: its figure is how far it went
    STOPPED = "stopped"


class ProbeVerdict(str, Enum):
    """How a probe's budgets came out over the whole run."""

    PASS = "pass"
    FAIL = "fail"
    #: the run ended with a budget that could still go either way
    INCONCLUSIVE = "inconclusive"
    #: not judged: the run was cut short, or the probe had no budget
    UNJUDGED = "unjudged"
    #: the run was stopped at the ceiling before the machine ran out of memory
    STOPPED = "stopped"


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
    #: the peak watch stopped the workload at the ceiling, inside a call
    CEILING = "ceiling"


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
    #: the growth is held by a bounded cache still filling: a run long enough for it to fill
    CACHE_FILLS = "cache_fills"


class SweepMode(str, Enum):
    """What ``--membudget-sweep`` does with the tests it finds leaking."""

    OFF = "off"
    #: fail the leaking tests (with the usual evidence)
    FAIL = "fail"
    #: fail nothing; list the leaking tests at the end of the session
    REPORT = "report"


class SweepVerdict(str, Enum):
    """Where one test ended up in the sweep."""

    #: the screening run saw no growth
    CLEAN = "clean"
    #: the screening flagged it; the full verdict found no leak
    PASSED = "passed"
    #: the full verdict found a leak
    LEAK = "leak"
    #: the full verdict could not settle (a cap other than the sweep's time)
    INCONCLUSIVE = "inconclusive"
    #: the sweep's time per test ran out before a verdict
    CUT_SHORT = "cut short"
    #: a repeat raised, skipped or xfailed, or the test is of a kind that is not repeated;
    #: its first outcome stands
    NOT_REPEATABLE = "not repeatable"
    #: its own call (or set-up) did not pass: failed, skipped, xfailed or errored; the sweep
    #: did not look at it
    NOT_SCREENED = "not screened"
    #: the test carries the opt-out marker
    OPTED_OUT = "opted out"
    #: the test carries its own membudget budgets, judged as usual
    OWN_BUDGETS = "own budgets"


class NotRepeatable(str, Enum):
    """Why a test was not repeated, or why its repeats stopped."""

    #: a repeat raised an exception (or failed)
    RAISED = "raised"
    #: a repeat called pytest.skip
    SKIPPED = "skipped"
    #: a repeat called pytest.xfail
    XFAILED = "xfailed"
    #: the test is marked xfail: its outcome is expected to change
    XFAIL_MARKED = "xfail marker"
    #: a doctest: its examples run once, in one namespace
    DOCTEST = "doctest"
    #: a unittest.TestCase method under --pdb (its tearDown is postponed)
    UNITTEST = "unittest"
    #: some other kind of test item, not a Python test function
    OTHER_ITEM = "other item"
    #: the test's teardown failed after the repeats
    TEARDOWN = "teardown"


class CutShort(str, Enum):
    """Which bound stopped the sweep of one test early."""

    #: membudget_sweep_seconds
    SWEEP_SECONDS = "sweep_seconds"
    #: the share of pytest-timeout's timeout the sweep allows itself
    TIMEOUT = "timeout"
    #: the time a flagged heavy test's full verdict needed at its pace, beyond
    #: membudget_sweep_seconds (at most HEAVY_SWEEP_SECONDS: sweep/driver.py)
    HEAVY = "heavy"


class RootKind(str, Enum):
    """What holds a retaining path at its start (evidence.paths)."""

    #: a global of a module (its ``__dict__``)
    MODULE = "module global"
    #: an attribute of a class
    CLASS = "class attribute"
    #: a variable a function closes over (its cell)
    CLOSURE = "closure cell"
    #: a local variable of a function still running
    FRAME = "live frame's local"
    #: no object Python can see refers to it: C code holds it
    NATIVE = "held by C code only"


class Recompile(str, Enum):
    """What changed between two calls of a jitted function that made it compile again."""

    #: an argument's shape (a batch that grows, a sequence of each length)
    SHAPE = "shape"
    #: an argument's dtype
    DTYPE = "dtype"
    #: a Python scalar one call, a typed array the next (JAX's weak types)
    WEAK_TYPE = "weak_type"
    #: a static argument's value
    STATIC = "static"
    #: the structure of the arguments (a list of another length, a dict with other keys)
    PYTREE = "pytree"
    #: the function is a new object on each call (jax.jit inside the loop, a new lambda)
    REDEFINED = "redefined"
    #: a function JAX had not seen before
    NEW_FUNCTION = "new_function"
    #: JAX's configuration or a context manager differs between the calls
    CONTEXT = "context"
    #: JAX gave no explanation (a library's function, an eager operation on a new shape)
    OTHER = "other"
