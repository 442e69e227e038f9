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
    rerun = native_stacks(0, 10, 0.15)
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
        next(native_stacks(0, 10, 0.15))
    assert "does not import" in done.value.value["missing"]
    assert INSTALL in done.value.value["missing"]


def test_without_memray_a_native_peak_says_how_to_get_its_allocations(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_membudget.evidence.native import native_at_peak
    from pytest_membudget.render.footprint import native_peak_lines

    _without_memray(monkeypatch)
    rerun = native_at_peak(7)
    with pytest.raises(StopIteration) as done:
        next(rerun)  # no call is run again without it
    assert done.value.value == {"missing": INSTALL}
    assert native_peak_lines(done.value.value) == [
        f"  native allocations at the peak: {INSTALL}"]


def test_native_stacks_at_the_peak_are_merged_by_the_users_line() -> None:
    from pytest_membudget.evidence.native import by_user_line

    user = {"function": "step", "file": "/work/t.py", "line": 12}
    stacks = [
        {"bytes": 100, "allocations": 1, "python": user,
         "frames": [{"function": "at::empty_cpu", "file": "libtorch_cpu.so", "line": 0}]},
        {"bytes": 300, "allocations": 2, "python": user,
         "frames": [{"function": "posix_memalign", "file": "libc.so.6", "line": 0}]},
        {"bytes": 50, "allocations": 1, "python": None,
         "frames": [{"function": "PyInit_x", "file": "x.so", "line": 0}]},
    ]
    merged = by_user_line(stacks)
    assert [line["bytes"] for line in merged] == [400, 50]
    assert merged[0]["allocations"] == 3 and merged[0]["python"] == user
    assert merged[0]["native"]["function"] == "posix_memalign"  # the frame with the most
    assert merged[1]["python"] is None and merged[1]["native"]["function"] == "PyInit_x"


def test_a_call_too_long_for_native_tracing_says_so() -> None:
    from pytest_membudget.render.footprint import native_peak_lines

    [line] = native_peak_lines({"skipped": {"call_seconds": 0.6, "seconds": 2.8}})
    assert "not recorded: one more call under memray would take about 2.8 s" in line
    assert "one call takes 0.60 s" in line and "where RSS rose" in line


def test_memrays_first_use_in_a_process_is_costed_by_the_native_code_loaded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_membudget.evidence import native
    from pytest_membudget.evidence.steps import COST

    monkeypatch.setattr(native, "_used", False)
    monkeypatch.setattr(native, "_code_mib", lambda: 400.0)  # a process with torch
    assert native.first_use()
    first = native.start_seconds()
    assert first == COST["memray_first"] + 400 * COST["memray_symbols"] > 1.0
    monkeypatch.setattr(native, "_used", True)
    assert native.start_seconds() == COST["memray_later"] < first


def test_a_first_use_of_memray_too_costly_says_why() -> None:
    from pytest_membudget.render.footprint import native_peak_lines

    [line] = native_peak_lines({"skipped": {"call_seconds": 0.1, "seconds": 5.3,
                                            "first_use": True}})
    assert "would take about 5.3 s" in line and "first use in a process" in line
