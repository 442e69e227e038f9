"""Workloads for the gating tests: gc_objects slopes are exact, so verdicts are certain.

Each version of the test file differs in length from the others, so that a rewritten file is
never mistaken for its cached bytecode (the cache is keyed by mtime and size).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

RUN = ["-p", "no:cacheprovider", "-p", "no:randomly"]
MODULE = "test_work"


def make(pytester: pytest.Pytester, rate: int, *, failing: bool = False) -> None:
    """Write the workloads as test_work.py."""
    pytester.makepyfile(**{MODULE: workloads(rate, failing=failing)})


def workloads(rate: int, *, failing: bool = False) -> str:
    """``test_grows`` keeps ``rate`` lists per iteration, within its 10/iter budget;
    ``test_flat`` keeps nothing; ``test_over`` (when ``failing``) exceeds its budget."""
    over = '''
@pytest.mark.membudget(gc_objects=0, iterations=20, warmup=1, evidence=False)
def test_over():
    KEEP.append([])
''' if failing else ""
    return f'''
import pytest
KEEP = []

@pytest.mark.membudget(gc_objects="10/iter", iterations=20, warmup=1, evidence=False)
def test_grows():
    KEEP.extend([[] for _ in range({rate})]){" " * rate}

@pytest.mark.membudget(gc_objects=0, iterations=20, warmup=1, evidence=False)
def test_flat():
    [{{}} for _ in range(5)]

def test_unbudgeted():
    pass
{over}'''


def read_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def saved(pytester: pytest.Pytester, folder: str = ".membudget") -> list[Path]:
    return sorted((pytester.path / folder).glob("*/*.json"))


def no_internal_error(result: pytest.RunResult) -> None:
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def write_baseline(pytester: pytest.Pytester, name: str = "main", *, grows: float = 1.0,
                   folder: str = ".membudget", path: Path | None = None) -> Path:
    """A saved baseline as a run of ``workloads(1)`` would leave it, without running it:
    ``test_grows`` at ``grows`` lists per iteration, ``test_flat`` flat."""
    from pytest_membudget.artifacts import document as jsonreport
    from pytest_membudget.artifacts import files as storage

    machine = jsonreport.machine()

    def result(slope: float) -> dict[str, Any]:
        return {"passed": True, "iterations": 20, "warmup": 1, "stopped": "fixed",
                "probes": {"gc_objects": {"slope": slope, "ci": [slope, slope], "peak": 1e4,
                                          "growth": 20 * slope, "verdict": "pass",
                                          "budgets": {"slope": 10.0}}}}

    document = jsonreport.build_document(
        [(f"{MODULE}.py::test_grows", result(grows)), (f"{MODULE}.py::test_flat", result(0.0))],
        {}, samples=False, name=name, machine_facts=machine)
    path = path or pytester.path / folder / machine["fingerprint"] / f"{name}.json"
    storage.write_json(path, document)
    return path
