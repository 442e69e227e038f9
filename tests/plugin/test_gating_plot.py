"""--membudget-plot: one PNG per budgeted test; a clear usage error without matplotlib."""

from __future__ import annotations

import sys

import pytest
from support.gating_workloads import RUN, make, no_internal_error


@pytest.mark.parametrize("how", ["flag", "ini"])
def test_one_png_per_budgeted_test(pytester: pytest.Pytester, how: str) -> None:
    pytest.importorskip("matplotlib")
    make(pytester, 1, failing=True)
    if how == "ini":  # membudget_plot is read, relative to the rootdir
        pytester.makeini("[pytest]\nmembudget_plot = pictures\n")
    result = pytester.runpytest(*RUN, *(["--membudget-plot=pictures"] if how == "flag" else []))
    result.assert_outcomes(passed=3, failed=1)
    pngs = sorted(p.name for p in (pytester.path / "pictures").glob("*.png"))
    assert len(pngs) == 3 and any("test_over" in name for name in pngs)
    result.stdout.fnmatch_lines(["*membudget: wrote 3 plot(s) to *pictures"])


def test_without_matplotlib_the_option_is_a_usage_error(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    make(pytester, 1)
    result = pytester.runpytest(*RUN, "--membudget-plot=pictures")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--membudget-plot draws with matplotlib, which is not "
                                 "installed; install the extra: pip install "
                                 "'pytest-membudget[[]plot[]]'*"])
    no_internal_error(result)
    assert not (pytester.path / "pictures").exists()
