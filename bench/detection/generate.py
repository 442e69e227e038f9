"""Write the pytest files a benchmark run executes, in a temporary directory.

``test_detection.py``: one test per case, ``@pytest.mark.membudget(rss=0, threads=0, fds=0)``,
``membudget.run(step)`` with the plugin's default settings otherwise (iterations="auto").

``test_memray.py``: one test per case and threshold under pytest-memray's
``@pytest.mark.limit_leaks(threshold)``, a fixed number of iterations in a loop inside the test.
The step is kept alive after the test (as a real program keeps its caches and registries), so
that memray sees what survives; torch is imported before the test so the import is not
counted as a leak.

``conftest.py``: puts the repository on sys.path and appends one JSON line per call-phase
report (outcome, duration, ``report.membudget``, a short failure text) to ``results.jsonl``
next to it, in the controller only under pytest-xdist.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from bench.detection.cases import Case

RESULTS_FILE = "results.jsonl"

_CONFTEST = '''\
import json
import sys
from pathlib import Path

if {root!r} not in sys.path:
    sys.path.append({root!r})

_RESULTS = Path(__file__).with_name({results!r})
_CONFIG = []


def pytest_configure(config):
    _CONFIG.append(config)


def pytest_runtest_logreport(report):
    if _CONFIG and hasattr(_CONFIG[0], "workerinput"):
        return  # the controller writes every report
    if report.when != "call" and not (report.failed or report.skipped):
        return
    text = ""
    if report.failed:
        text = str(report.longrepr)[-3000:]
    record = {{
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "duration": report.duration,
        "membudget": getattr(report, "membudget", None),
        "longrepr": text,
        "plugin_file": getattr(sys.modules.get("pytest_membudget"), "__file__", None),
    }}
    with _RESULTS.open("a") as stream:
        stream.write(json.dumps(record) + "\\n")
'''

_DETECTION_HEAD = '''\
import pytest

from bench.detection.cases import CASES, close_step, missing_requirements


def _run(membudget, name):
    case = CASES[name]
    missing = missing_requirements(case)
    if missing:
        pytest.skip(f"{{name}} needs {{missing}}")
    step = case.make()
    try:
        membudget.run(step)
    finally:
        close_step(step)
'''

_DETECTION_TEST = '''

@pytest.mark.membudget({budgets})
def test_{name}(membudget):
    _run(membudget, {name!r})
'''

_MEMRAY_HEAD = '''\
import importlib.util

import pytest

from bench.detection.cases import CASES, close_step, missing_requirements

import numpy  # noqa: F401  imported before any test so that memray does not count it

from bench.detection.cases import _libc_handle

_libc_handle()
if importlib.util.find_spec("torch") is not None:
    import torch

    torch.set_num_threads(1)

ITERATIONS = {iterations}
_KEEP = []


def _loop(name, iterations=ITERATIONS):
    case = CASES[name]
    missing = missing_requirements(case)
    if missing:
        pytest.skip(f"{{name}} needs {{missing}}")
    step = case.make()
    _KEEP.append(step)
    for _ in range(iterations):
        step()
    close_step(step)
'''

_MEMRAY_WARM = '''

def test_{name}__warm():
    # Unmarked: first-call effects of the case's code (specialisation, caches of the
    # interpreter) happen here, not in the judged tests below.
    _loop({name!r}, 20)
'''

_MEMRAY_TEST = '''

@pytest.mark.limit_leaks({threshold!r})
def test_{name}__{label}():
    _loop({name!r})
'''

BUDGETS = "rss=0, threads=0, fds=0"


def threshold_label(threshold: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "_", threshold)


def write_suite(directory: Path, root: str, cases: Sequence[Case], *, memray_thresholds:
                Iterable[str] = (), memray_iterations: int = 200,
                evidence: bool = True, budgets: str = BUDGETS) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    # An ini file here makes this directory the rootdir: the repository's own pytest settings
    # do not apply, so the plugin runs with its defaults.
    (directory / "pytest.ini").write_text("[pytest]\n")
    (directory / "conftest.py").write_text(_CONFTEST.format(root=root, results=RESULTS_FILE))
    body = _DETECTION_HEAD.format()
    for case in cases:
        marker = budgets if evidence else budgets + ", evidence=False"
        body += _DETECTION_TEST.format(name=case.name, budgets=marker)
    (directory / "test_detection.py").write_text(body)
    thresholds = list(memray_thresholds)
    if thresholds:
        body = _MEMRAY_HEAD.format(iterations=memray_iterations)
        for case in cases:
            body += _MEMRAY_WARM.format(name=case.name)
            for threshold in thresholds:
                body += _MEMRAY_TEST.format(name=case.name, threshold=threshold,
                                            label=threshold_label(threshold))
        (directory / "test_memray.py").write_text(body)
