import os
from collections.abc import Iterator

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session", autouse=True)
def _inner_processes_keep_their_order() -> Iterator[None]:
    """The same for the pytest processes the tests start themselves (subprocess runs): a
    shuffled order changes what a test's process holds when it starts (threads, descriptors,
    allocator pages left by the tests before it), which the real-probe tests read."""
    with pytest.MonkeyPatch.context() as patch:
        added = os.environ.get("PYTEST_ADDOPTS", "")
        patch.setenv("PYTEST_ADDOPTS", f"{added} -p no:randomly".strip())
        yield


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest-randomly (in the test extra: the sweep is tested beside it) would shuffle the
    tests of every inner pytest run, which many tests here read in order. Inner runs get
    ``-p no:randomly``; a test that wants the shuffle passes ``-p randomly`` after it. (Set
    here, after pytester's own set-up, which clears PYTEST_ADDOPTS.)"""
    added = os.environ.get("PYTEST_ADDOPTS", "")
    monkeypatch.setenv("PYTEST_ADDOPTS", f"{added} -p no:randomly".strip())
    return pytester
