"""A failing test's text shows why the growth is still alive: the chain from a module-level
registry's name to the objects it keeps, and the closure that keeps a hook list."""

from __future__ import annotations

import pytest

from pytest_membudget.evidence import steps


def test_a_registry_and_a_closure_are_named_in_the_failure(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # What the text says, not how fast (bench/evidence.py measures that): the inner run is
    # in this process, and a loaded machine must not cut the search short.
    monkeypatch.setitem(steps.SHARE, "paths_least", 12.5)
    pytester.makepyfile(test_kept="""
        import pytest
        REGISTRY = []

        def remember(size):
            REGISTRY.append({"rows": [b"x" * size]})

        def make_hooks():
            hooks = []
            def step():
                hooks.append(lambda: None)
            return step

        @pytest.mark.membudget(gc_objects=0, iterations=40, warmup=2)
        def test_registry(membudget):
            membudget.run(lambda: remember(64))

        @pytest.mark.membudget(gc_objects=0, iterations=40, warmup=2)
        def test_closure(membudget):
            membudget.run(make_hooks())
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*why they are still alive (a shortest reference path from a root):",
        "*dict (+*): module test_kept.py: REGISTRY (list) -> [[]*[]] (dict)  [[]module global[]]",
    ])
    result.stdout.fnmatch_lines([
        "*function (+*): closure of make_hooks.<locals>.step (test_kept.py:9): hooks (list) "
        "-> [[]*[]] (function)  [[]closure cell[]]",
    ])
