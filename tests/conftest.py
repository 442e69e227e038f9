import os

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest-randomly (in the test extra: the sweep is tested beside it) would shuffle the
    tests of every inner pytest run, which many tests here read in order. Inner runs get
    ``-p no:randomly``; a test that wants the shuffle passes ``-p randomly`` after it. (Set
    here, after pytester's own set-up, which clears PYTEST_ADDOPTS.)"""
    added = os.environ.get("PYTEST_ADDOPTS", "")
    monkeypatch.setenv("PYTEST_ADDOPTS", f"{added} -p no:randomly".strip())
    return pytester
