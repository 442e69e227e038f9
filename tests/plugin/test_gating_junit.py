"""JUnit XML: readable per-probe properties for every budgeted test."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from support.gating_workloads import RUN, make


def test_junit_properties_per_probe(pytester: pytest.Pytester) -> None:
    make(pytester, 1, failing=True)
    pytester.runpytest(*RUN, "--junitxml=junit.xml").assert_outcomes(passed=3, failed=1)
    cases = {case.get("name"): {p.get("name"): p.get("value")
                                for p in case.iter("property")}
             for case in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")}
    grows, over = cases["test_grows"], cases["test_over"]
    assert grows["membudget.verdict"] == "pass" and over["membudget.verdict"] == "fail"
    assert grows["membudget.gc_objects.slope"].startswith("1 objects/iter [")
    assert grows["membudget.gc_objects.budget"] == "10 objects/iter"
    assert over["membudget.gc_objects.verdict"] == "fail"
    assert over["membudget.iterations"] == "20 after 1 warm-up (fixed)"
    assert "membudget.gc_objects.peak" in over
    assert not any(name.startswith("membudget") for name in cases["test_unbudgeted"])
