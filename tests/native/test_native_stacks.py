"""Native stacks with the ``native`` extra (memray): a leak in compiled code, called through
ctypes, is named by its allocating function and the test line that called it. Skipped where
memray or a C compiler is missing (the test extra installs memray wherever the native extra
does, on Linux and macOS)."""

from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
from typing import Any

import pytest

pytest.importorskip("memray")

from support.evidence_runs import LIBC_PRELUDE, evidence_of

from pytest_membudget.evidence.native import native_stacks
from pytest_membudget.render.failure import evidence_lines

SOURCE = """
#include <stdlib.h>
#include <string.h>
void *membudget_keep(size_t n) { void *p = malloc(n); if (p) memset(p, 1, n); return p; }
"""


@pytest.fixture(scope="module")
def leaky(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler to build the leaking library")
    directory = tmp_path_factory.mktemp("leaky")
    (directory / "leaky.c").write_text(SOURCE)
    library = directory / "libleaky.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-g", "-O1", "-o", str(library),
                    str(directory / "leaky.c")], check=True)
    lib = ctypes.CDLL(str(library))
    lib.membudget_keep.restype = ctypes.c_void_p
    lib.membudget_keep.argtypes = [ctypes.c_size_t]
    return lib


def test_a_native_leak_names_the_allocating_function_and_the_calling_line(
        leaky: ctypes.CDLL) -> None:
    evidence = evidence_of(lambda: leaky.membudget_keep(4096), {"malloc"})
    assert evidence["sites"] == []  # tracemalloc sees none of it
    stacks = evidence["native"]["stacks"]
    top = stacks[0]
    assert top["frames"][0]["function"] == "membudget_keep"
    assert top["allocator"] == "malloc" and top["allocations"] >= 2
    assert top["python"]["file"] == __file__
    assert top["bytes"] >= 2 * 4096
    text = "\n".join(evidence_lines(evidence))
    assert "membudget_keep" in text and "called from <lambda>" in text, text


def test_a_python_leak_gets_no_native_rerun() -> None:
    kept: list[bytes] = []
    evidence = evidence_of(lambda: kept.append(b"x" * 4096), {"malloc"})
    assert evidence["sites"] and "native" not in evidence


def test_a_rerun_that_leaves_nothing_allocated_says_so() -> None:
    rerun = native_stacks(0, 5, 0.15)
    try:
        while True:
            next(rerun)
            bytearray(100)
    except StopIteration as done:
        found = done.value
    assert found["stacks"] == [] and "still live" in found["reason"]


PEAK_SOURCE = """
#include <stdlib.h>
#include <string.h>
double membudget_transient(size_t n) {
    char *p = malloc(n); double s = 0; size_t i;
    if (!p) return -1;
    memset(p, 1, n);
    for (i = 0; i < n; i += 4096) s += p[i];
    free(p);
    return s;
}
"""

PEAK_TEST = """
import ctypes, pytest

LIB = ctypes.CDLL({library!r})
LIB.membudget_transient.restype = ctypes.c_double
LIB.membudget_transient.argtypes = [ctypes.c_size_t]

def phase():
    return LIB.membudget_transient(16 * 1024 * 1024)

# A budget of half the rise: the hard ceiling (4x the budget) stays well above the 16 MiB,
# or a reading a few pages past it would stop the call as a runaway.
@pytest.mark.membudget(rss_rise="8 MiB")
def test_native_peak(membudget):
    membudget.run(phase)
"""


def native_peak_of(pytester: pytest.Pytester, source: str
                   ) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run ``source`` (one test whose native peak fails its budget) in a subprocess: the
    result, and its peak evidence's native section (the composition's dominant kind is
    native, asserted)."""
    pytester.makepyfile(source)
    # What memray shows, not what it costs: its first use in a process reads the symbols of
    # the native code loaded, past the evidence's second (the text then says so).
    pytester.makeconftest("import pytest_membudget.evidence.steps as steps\n"
                          "steps.EVIDENCE_SECONDS['footprint'] = 60.0\n")
    report = pytester.path / "membudget.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly",
                                           f"--membudget-json={report}")
    result.assert_outcomes(failed=1)
    tests = json.loads(report.read_text())["tests"]
    test = tests[0] if isinstance(tests, list) else next(iter(tests.values()))
    evidence = test["peak_evidence"]
    assert evidence["composition"]["dominant"] == "native"
    native: dict[str, Any] = evidence["native"]
    return result, native


def test_a_native_peak_names_its_allocation_under_the_calling_line(
        pytester: pytest.Pytester) -> None:
    """16 MiB malloc'd, touched and freed inside one compiled call: the composition reads
    native heap, and one more call under memray names the allocation alive at its peak, with
    the user's line that called the library. (Small, so that the call stays well under the
    second a call may take to be run again, on a loaded machine too.)"""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler to build the library")
    (pytester.path / "peak.c").write_text(PEAK_SOURCE)
    library = pytester.path / "libpeak.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-g", "-O1", "-o", str(library),
                    str(pytester.path / "peak.c")], check=True)
    result, native = native_peak_of(pytester, PEAK_TEST.format(library=str(library)))
    top = native["lines"][0]
    assert top["native"]["function"] == "membudget_transient"
    assert top["python"]["line"] == 8 and top["bytes"] >= 16 * 1024 * 1024
    result.stdout.fnmatch_lines([
        "*native allocations alive at the peak (memray, one more call*",
        "*test_a_native_peak_names_its_allocation_under_the_calling_line.py:8: 16 MiB in 1 "
        "allocation, made in membudget_transient*",
        "*return LIB.membudget_transient(16 * 1024 * 1024)*",
    ])


UNSEEN_TEST = LIBC_PRELUDE + """
import pytest

def phase():
    block = LIBC.malloc(16 * 1024 * 1024)
    LIBC.memset(block, 1, 16 * 1024 * 1024)
    LIBC.free(block)

@pytest.mark.membudget(rss_rise="8 MiB")
def test_unseen_peak(membudget):
    membudget.run(phase)
"""


def test_native_memory_memray_does_not_see_is_said_not_listed(
        pytester: pytest.Pytester) -> None:
    """16 MiB from libc's malloc through ctypes (a pointer to malloc that memray does not
    intercept): memray's call peaks at a few KiB, at ctypes' own allocations. Those lines
    would stand for the 16 MiB; the evidence says memray did not see the allocations and
    lists none (bench/footprint's ctypes shapes showed a few KiB at the ``CDLL`` line)."""
    result, native = native_peak_of(pytester, UNSEEN_TEST)
    assert native["unseen"] >= 8 * 1024 * 1024 and "lines" not in native, native
    result.stdout.fnmatch_lines(["*native allocations at the peak: memray's call peaked at "
                                 "*it does not see these allocations*"])
