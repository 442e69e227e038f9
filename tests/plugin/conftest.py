from __future__ import annotations

# In-process inner runs restore sys.modules afterwards; modules with C extensions must be
# imported once, here, so that the inner runs find them and do not import them again.
import numpy  # noqa: F401
import pytest

import pytest_membudget.attribution
import pytest_membudget.probes.gcobjects
import pytest_membudget.probes.heap
import pytest_membudget.probes.osres
import pytest_membudget.probes.rss
import pytest_membudget.probes.timing
import pytest_membudget.runner  # noqa: F401

#: A conftest for the inner runs: each budgeted test's report dict, written where the outer
#: test can read it.
RECORDER = '''
import json, pathlib
def pytest_runtest_logreport(report):
    data = getattr(report, "membudget", None)
    if report.when == "call" and data is not None:
        with open(pathlib.Path(__file__).parent / "results.jsonl", "a") as out:
            out.write(json.dumps({"nodeid": report.nodeid, "outcome": report.outcome,
                                  "data": data}) + "\\n")
'''


@pytest.fixture
def recorded(pytester: pytest.Pytester):
    """Install the recorder; return a function reading {test name: report dict}."""
    import json

    pytester.makeconftest(RECORDER)

    def read() -> dict[str, dict]:
        path = pytester.path / "results.jsonl"
        if not path.exists():
            return {}
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return {row["nodeid"].split("::")[-1]: row for row in rows}

    return read
