from __future__ import annotations

# In-process inner runs restore sys.modules afterwards; modules with C extensions must be
# imported once, here, so that the inner runs find them and do not import them again.
import numpy  # noqa: F401
import pytest
from support.recording import RECORDER, read_rows


@pytest.fixture
def recorded(pytester: pytest.Pytester):
    """Install the recorder; return a function reading {test name: report dict}."""
    pytester.makeconftest(RECORDER)

    def read() -> dict[str, dict]:
        return {row["test"]: row for row in read_rows(pytester.path)}

    return read
