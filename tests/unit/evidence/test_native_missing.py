"""Native stacks need the ``native`` extra (memray) and Linux or macOS: without either, the
evidence of a native leak says so in one line, and how to get them."""

from __future__ import annotations

import sys

import pytest
from support.evidence_runs import evidence_of

from pytest_membudget.evidence import native
from pytest_membudget.evidence.native import INSTALL, native_stacks, wanted
from pytest_membudget.render.failure import evidence_lines


def _without_memray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native.importlib.util, "find_spec",
                        lambda name, *a: None if name == "memray" else object())


def test_without_memray_the_evidence_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch,
                                                        ) -> None:
    _without_memray(monkeypatch)
    rerun = native_stacks(0, 10)
    with pytest.raises(StopIteration) as done:
        next(rerun)  # not one iteration is run without it
    assert done.value.value == {"missing": INSTALL}
    lines = evidence_lines({"iterations": 3, "sites": [], "native": done.value.value})
    assert any("pip install 'pytest-membudget[native]'" in line for line in lines), lines


def test_a_native_leak_without_memray_still_shows_the_line(monkeypatch: pytest.MonkeyPatch,
                                                            ) -> None:
    _without_memray(monkeypatch)
    import ctypes

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    evidence = evidence_of(lambda: libc.malloc(4096), {"rss"}, iterations=5)
    assert evidence["sites"] == [] and evidence["native"] == {"missing": INSTALL}


def test_elsewhere_than_linux_and_macos_one_line_says_why(monkeypatch: pytest.MonkeyPatch,
                                                          ) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    assert "Linux and macOS only" in (native.missing() or "")


@pytest.mark.parametrize(("failing", "sites", "expected"), [
    ({"rss"}, [], True),
    ({"malloc"}, [], True),
    ({"rss"}, [{"file": "x.py"}], False),  # tracemalloc saw the growth: it is Python's
    ({"rss"}, None, False),  # no traced rerun
    ({"heap"}, [], False),  # tracemalloc's own probe: never native
    ({"gc_objects"}, [], False),
    ({"cuda_allocated"}, [], False),
])
def test_the_native_rerun_runs_only_when_the_growth_is_native(
        failing: set[str], sites: list[dict[str, str]] | None, expected: bool) -> None:
    assert wanted(failing, sites) is expected


def test_a_memray_that_does_not_import_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native.importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.setitem(sys.modules, "memray", None)  # import memray raises ImportError
    with pytest.raises(StopIteration) as done:
        next(native_stacks(0, 10))
    assert "does not import" in done.value.value["missing"]
    assert INSTALL in done.value.value["missing"]
