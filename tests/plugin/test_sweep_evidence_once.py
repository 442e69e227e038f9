"""The sweep gathers evidence for the first leak of each test function: the other parameter
sets of a leaking function are judged as fully, and their evidence points to the first."""

from __future__ import annotations

import json

import pytest

SUITE = """
import pytest

KEEP = []


@pytest.mark.parametrize("size", [100, 200, 300])
def test_leaks_per_param(size):
    KEEP.append([0] * size)


def test_leaks_alone():
    KEEP.append({"row": [1] * 50})
"""


@pytest.mark.parametrize("mode", ["report", "fail"])
def test_evidence_once_per_function(pytester: pytest.Pytester, mode: str) -> None:
    pytester.makepyfile(test_params=SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", f"--membudget-sweep={mode}",
        "--membudget-json=report.json")
    document = json.loads((pytester.path / "report.json").read_text())["sweep"]
    leaks = {entry["test"].split("::")[-1]: entry for entry in document["leaks"]}
    assert set(leaks) == {"test_leaks_per_param[100]", "test_leaks_per_param[200]",
                          "test_leaks_per_param[300]", "test_leaks_alone"}, leaks
    first = "test_params.py::test_leaks_per_param[100]"
    assert leaks["test_leaks_per_param[100]"]["evidence"]["kind"] == "site"
    assert leaks["test_leaks_alone"]["evidence"]["kind"] == "site"
    for other in ("test_leaks_per_param[200]", "test_leaks_per_param[300]"):
        assert leaks[other]["evidence"] == {"kind": "same_as", "test": first}
    text = result.stdout.str()
    assert f"as {first} (the same test function)" in text
    if mode == "fail":
        result.assert_outcomes(failed=4)
        assert f"Evidence: as for {first}, the same test function" in text
