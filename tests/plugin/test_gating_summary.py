"""The terminal summary table follows pytest's verbosity (-qq: tests/unit)."""

from __future__ import annotations

import pytest
from support.gating_workloads import RUN, make

HEADER = "test*probe*slope*bounds/iter*budget*peak*iters*verdict"


def test_every_budgeted_test_passed_or_failed(pytester: pytest.Pytester) -> None:
    make(pytester, 1, failing=True)
    result = pytester.runpytest(*RUN)
    result.stdout.fnmatch_lines([
        "*- membudget -*", HEADER,
        "test_work.py::test_grows*gc_objects*1 objects/iter*[[]1 objects, 1 objects[]]*"
        "10 objects/iter*20*pass",
        "test_work.py::test_flat*gc_objects*0 objects/iter*pass",
        "test_work.py::test_over*gc_objects*fail",
    ])
    assert "test_unbudgeted  " not in result.stdout.str()


@pytest.mark.parametrize(("flags", "shown", "hidden"), [
    (["-v"], ["*growth*warm-up*stopped*", "*test_grows*fixed count*"], []),
    (["-q"], ["*test_over*fail*"], ["test_work.py::test_grows*"]),
])
def test_verbosity(pytester: pytest.Pytester, flags: list[str], shown: list[str],
                   hidden: list[str]) -> None:
    make(pytester, 1, failing=True)
    result = pytester.runpytest(*RUN, *flags)
    if shown:
        result.stdout.fnmatch_lines(shown)
    for pattern in hidden:
        result.stdout.no_fnmatch_line(pattern)
