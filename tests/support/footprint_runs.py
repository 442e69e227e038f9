"""Running a footprint test file in a subprocess (the peak watch reads the process's RSS,
which an in-process inner run would share), with its JSON report by test name."""

from __future__ import annotations

import json
from typing import Any

import pytest


def run(pytester: pytest.Pytester, source: str, *args: str,
        only: tuple[str, ...] = ()) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run ``source`` (its tests ``only``, where given) in a subprocess; the result and the
    JSON report's tests by name."""
    path = pytester.makepyfile(source)
    report = pytester.path / "membudget.json"
    chosen = [f"{path}::{name}" for name in only]
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly",
                                           f"--membudget-json={report}", *args, *chosen)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    tests = json.loads(report.read_text())["tests"] if report.exists() else []
    by_name = {t["nodeid"].split("::")[-1]: t for t in tests} if isinstance(tests, list) else {
        nodeid.split("::")[-1]: t for nodeid, t in tests.items()}
    return result, by_name
