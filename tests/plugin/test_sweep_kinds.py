"""The kinds of test the sweep repeats differently or not at all: async tests (in their
event loop), unittest.TestCase methods (as unittest runs a test alone), tests marked xfail.
Subprocess runs, as in test_sweep_repeats.py."""

from __future__ import annotations

import json

import pytest

ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly")


def sweep_section(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    result = pytester.runpytest_subprocess(*ARGS, "--membudget-json=out.json", *args)
    document = json.loads((pytester.path / "out.json").read_text())
    return result, document["sweep"]


def test_xfail_marked_tests_are_not_repeated(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        KEEP = []

        @pytest.mark.xfail(reason="flaky")
        def test_xpass():
            KEEP.append([])
    """)
    result, section = sweep_section(pytester, "--membudget-sweep")
    result.assert_outcomes(xpassed=1)
    assert [(e["test"].split("::")[-1], e["reason"]) for e in section["not_repeatable"]] == [
        ("test_xpass", "xfail marker")]


def test_async_tests_are_repeated_in_their_event_loop(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_asyncio")
    pytester.makeini("[pytest]\nasyncio_mode = auto\n"
                     "asyncio_default_fixture_loop_scope = function\n"
                     "membudget_evidence = false\n")
    pytester.makepyfile("""
        import asyncio
        KEEP = []
        CALLS = []

        async def test_async_leak():
            await asyncio.sleep(0)
            KEEP.append([[]])  # three blocks a call: plain on every call of the screen

        async def test_async_clean():
            await asyncio.sleep(0)
            data = [{} for _ in range(10)]

        async def test_async_once():
            CALLS.append(1)
            assert len(CALLS) == 1
    """)
    result, section = sweep_section(pytester, "--membudget-sweep")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED *test_async_leak*"])
    assert [e["test"].split("::")[-1] for e in section["leaks"]] == ["test_async_leak"]
    assert [(e["test"].split("::")[-1], e["reason"]) for e in section["not_repeatable"]] == [
        ("test_async_once", "raised")]
    assert section["counts"]["clean"] == 1


def test_unittest_methods_repeat_with_their_set_up(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import unittest
        EVENTS = []
        SEEN = set()

        class TestCase(unittest.TestCase):
            @classmethod
            def setUpClass(cls):
                EVENTS.append("class")

            def setUp(self):
                self.made = object()

            def tearDown(self):
                del self.made

            def test_uses_set_up(self):
                assert self.made is not None

            def test_skips_when_seen(self):
                if "seen" in SEEN:
                    self.skipTest("seen before")
                SEEN.add("seen")

        def test_class_set_up_once():
            assert EVENTS == ["class"]
    """)
    result, section = sweep_section(pytester, "--membudget-sweep")
    result.assert_outcomes(passed=3)
    assert [(e["test"].split("::")[-1], e["reason"], e["detail"])
            for e in section["not_repeatable"]] == [
        ("test_skips_when_seen", "skipped", "SkipTest: seen before")]
    assert section["counts"] == {"clean": 2, "not repeatable": 1}
