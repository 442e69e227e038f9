"""One recorder for the inner pytest runs of the plugin's tests.

``RECORDER`` is a conftest: the process that receives reports (the controller under
pytest-xdist) appends each budgeted test's call-phase outcome and ``report.membudget`` dict to
``results.jsonl`` beside it. ``read_rows`` reads them back, keyed by test name.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

RECORDER = '''
import json, pathlib

IN_WORKER = False

def pytest_configure(config):
    global IN_WORKER
    IN_WORKER = hasattr(config, "workerinput")

def pytest_runtest_logreport(report):
    data = getattr(report, "membudget", None)
    if IN_WORKER or report.when != "call" or data is None:
        return
    with open(pathlib.Path(__file__).parent / "results.jsonl", "a") as out:
        out.write(json.dumps({"nodeid": report.nodeid, "outcome": report.outcome,
                              "data": data}) + "\\n")
'''


def read_rows(directory: Path) -> list[dict[str, Any]]:
    """Every recorded row, in order, each with "test": the test's name without its path."""
    path = directory / "results.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row["test"] = row["nodeid"].split("::")[-1]
    return rows


def write_suite(where: Path, workloads: str, name: str = "test_workloads.py") -> Path:
    """The recorder's conftest and ``workloads`` as ``name`` in ``where``; returns ``where``."""
    (where / "conftest.py").write_text(RECORDER)
    (where / name).write_text(workloads)
    return where


def run_pytest(where: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """``python -m pytest -p no:cacheprovider *args`` in a fresh process in ``where``."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=where, capture_output=True, text=True, timeout=timeout,
                          check=False)
