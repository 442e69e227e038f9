"""Plots: file names, the matplotlib check, and a drawn PNG."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_membudget.render import plots


def series_test(n: int = 120, warmup: int = 5) -> dict:
    x = list(range(warmup + 1)) + list(range(warmup, warmup + n + 1))
    rng = np.random.default_rng(3)
    y = [50e6 + 800.0 * i + float(rng.normal(0, 2000)) for i in x]
    return {"passed": False, "iterations": n, "warmup": warmup, "probes": {
        "rss": {"slope": 800.0, "ci": [700.0, 900.0], "verdict": "fail", "peak": max(y),
                "budgets": {"slope": 0.0, "peak": 60e6, "growth": None},
                "samples": y, "sample_iterations": x},
        "iter_time": {"slope": 0.0, "ci": [None, None], "verdict": "unjudged",
                      "budgets": {}, "samples": [None] + [1e-3] * (len(x) - 1),
                      "sample_iterations": x},
        "fds": {"slope": 0.0, "ci": [0.0, 0.0], "verdict": "pass", "budgets": {}},
    }}


def test_file_names_are_safe_and_unique() -> None:
    a = plots.file_name("tests/test_x.py::test_y[a/b-1]")
    b = plots.file_name("tests/test_x.py::test_y[a_b-1]")
    assert a != b and a.endswith(".png") and "/" not in a and "::" not in a
    assert a.startswith("tests_test_x.py__test_y")


def test_missing_matplotlib_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    reason = plots.missing_matplotlib("--membudget-plot")
    assert reason is not None and "pytest-membudget[plot]" in reason


def test_plot_all_draws_tests_with_samples(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    written = plots.plot_all({"t.py::test_leak": series_test(),
                              "t.py::no_samples": {"probes": {"rss": {"slope": 1.0}}}},
                             tmp_path / "out")
    assert [p.name for p in written] == [plots.file_name("t.py::test_leak")]
    assert written[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert written[0].stat().st_size > 10_000


def test_a_footprint_failure_draws_the_run_over_time(tmp_path) -> None:
    """The peak watch's timeline gets a panel of its own, with the highest reading marked
    and what the rise was made of."""
    from pytest_membudget.render.plots import plot_test

    mib = 1024.0**2
    test = {
        "passed": False, "iterations": 1, "warmup": 0, "window_start": 1,
        "probes": {"rss": {"samples": [50 * mib, 50 * mib, 51 * mib],
                           "sample_iterations": [0, 0, 1], "slope": 0.0, "ci": [0.0, 0.0],
                           "start": 50 * mib, "peak": 210 * mib,
                           "budgets": {"slope": None, "rise": 20 * mib}, "verdict": "fail"}},
        "peak_evidence": {
            "timeline": {"seconds": [0.0, 0.1, 0.2, 0.3], "rss": [50 * mib, 120 * mib,
                                                                  210 * mib, 51 * mib],
                         "traced": [0.0, 70 * mib, 160 * mib, 0.0]},
            "peak_at": 0.2,
            "composition": {"rss_peak": 210 * mib, "rise": 160 * mib,
                            "kinds": {"python": 160 * mib, "native": 0.0}}},
    }
    path = plot_test("t.py::test_phase", test, tmp_path / "plot.png")
    assert path.stat().st_size > 10_000
    import matplotlib.image

    height = matplotlib.image.imread(path).shape[0]
    bare = {**test, "peak_evidence": {}}
    plain = plot_test("t.py::test_phase", bare, tmp_path / "plain.png")
    assert height > matplotlib.image.imread(plain).shape[0]  # one more panel


def test_a_test_measured_in_phases_gets_its_phases_on_one_timeline(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    phase = {"name": "solve", "rise": 96e6, "verdict": "fail", "began": 0.4,
             "timeline": {"seconds": [0.0, 0.1, 0.2], "rss": [50e6, 146e6, 60e6],
                          "traced": [0.0, 0.0, 0.0]}}
    test = {"passed": False, "iterations": 0, "warmup": 0, "probes": {},
            "phases": [{**phase, "name": "load", "verdict": "pass", "began": 0.0,
                        "rise": 1e6}, phase]}
    written = plots.plot_all({"t.py::test_phases": test, "t.py::test_none": {"probes": {}}},
                             tmp_path)
    assert [path.name for path in written] == [plots.file_name("t.py::test_phases")]
    assert written[0].stat().st_size > 5_000
    assert plots.run_text(test) == "2 phases"
    assert plots.run_text({"iterations": 1, "warmup": 1, "probes": {"rss": {}}}) == (
        "1 measured call after 1 warm-up")


class _Axes:
    """Records the labels of the lines drawn."""

    def __init__(self) -> None:
        self.labels: list[str] = []

    def plot(self, *args: object, label: str = "", **kwargs: object) -> None:
        self.labels.append(label)

    def fill_between(self, *args: object, **kwargs: object) -> None:
        pass

    def axhline(self, *args: object, label: str = "", **kwargs: object) -> None:
        self.labels.append(label)


@pytest.mark.parametrize(("samples", "drawn"), [(6, False), (16, True)])
def test_the_judged_tail_s_line_is_drawn_only_where_the_judge_judged_a_tail(
        samples: int, drawn: bool) -> None:
    # A window of 6 samples has a tail of 3: a block without a sample, no tail judged.
    window = [(float(i), 1e6 + 100.0 * i) for i in range(samples)]
    axes = _Axes()
    plots._draw_fit(axes, "rss", {"slope": 100.0, "ci": [50.0, 150.0], "budgets": {}},
                    window, 1.0)
    assert any("judged tail" in label for label in axes.labels) is drawn
