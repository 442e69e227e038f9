from __future__ import annotations

import importlib.util

import pytest

pytest_plugins = ["pytester"]
ASYNCIO = importlib.util.find_spec("pytest_asyncio") is not None


@pytest.fixture(autouse=True)
def inner_runs_in_file_order(request: pytest.FixtureRequest,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner pytest runs of the plugin's tests run their tests in file order, whatever
    reordering plugin is installed (several check what one test left for the next); a test
    about reordering turns it back on. Set after pytester's own setup, which clears
    PYTEST_ADDOPTS."""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
    # pytest-asyncio (a test dependency) warns in every inner run that leaves this unset;
    # pytest warns of the option where pytest-asyncio is not installed (a GPU machine's).
    addopts = "-p no:randomly"
    if ASYNCIO:
        addopts += " -o asyncio_default_fixture_loop_scope=function"
    monkeypatch.setenv("PYTEST_ADDOPTS", addopts)
