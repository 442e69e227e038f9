"""The GPU suite's inner sessions, each run once and shared by the tests that read it."""

from __future__ import annotations

import importlib.util

import pytest

from .inner import InnerRun, run_inner


@pytest.fixture(scope="session")
def serial_run(tmp_path_factory: pytest.TempPathFactory) -> InnerRun:
    return run_inner(tmp_path_factory.mktemp("gpu_serial"))


@pytest.fixture(scope="session")
def xdist_run(tmp_path_factory: pytest.TempPathFactory) -> InnerRun:
    if importlib.util.find_spec("xdist") is None:
        pytest.skip("needs pytest-xdist for the run under -n 2")
    return run_inner(tmp_path_factory.mktemp("gpu_xdist"), "-n", "2")


@pytest.fixture(params=["serial", "xdist"], ids=["serial", "n2"])
def inner(request: pytest.FixtureRequest) -> InnerRun:
    run: InnerRun = request.getfixturevalue(f"{request.param}_run")
    return run
