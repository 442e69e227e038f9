"""A session that measures nothing leaves the garbage collector as it found it: the check of
the interpreter's collector (a freeze, a thaw and full collections of the whole heap) waits
for the first budgeted test or screen."""

from __future__ import annotations

import pytest

ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly")

SUITE = """
import gc

import pytest

from pytest_membudget import interpreter


def test_plain():
    # Nothing budgeted has run: the collector was never checked, frozen or made to collect.
    assert interpreter._FACTS is None
    assert gc.get_freeze_count() == interpreter._INHERITED  # the interpreter's own (3.12)


@pytest.mark.membudget(gc_objects=0, iterations=12, warmup=2)
def test_budgeted(membudget):
    membudget.run(lambda: None)


def test_after():
    assert interpreter._FACTS is not None and interpreter._FACTS.checked
"""


def test_the_collector_is_checked_on_first_use_only(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess(*ARGS)
    result.assert_outcomes(passed=3)
    # The header of a usual interpreter checks nothing and says nothing.
    assert "membudget:" not in result.stdout.str().split("collected")[0]
