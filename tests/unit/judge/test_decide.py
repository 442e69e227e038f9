"""One verdict, decided in judge/: judge.decide.decide takes a window's facts and returns the
verdict and the run's next step; nothing outside judge/ turns a judgement into another."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from pytest_membudget.judge.decide import Found, Record, Window, decide
from pytest_membudget.judge.policy import Checkpoint, RunPolicy
from pytest_membudget.judge.spec import Budget, BudgetSpec
from pytest_membudget.settings import default_run
from pytest_membudget.vocabulary import BudgetKind, Status, StopReason

PACKAGE = Path(__file__).resolve().parents[3] / "pytest_membudget"
#: The judge's rules that only judge.decide applies.
RULES = {"judge", "hold_back", "held_by_caches", "stopped", "reading_of", "growing",
         "_keep_settled", "after", "settles"}

X = np.arange(1.0, 201.0)
LEAK = 1e6 + 4096.0 * X
FLAT = np.full(len(X), 1e6)


def spec(**run: object) -> BudgetSpec:
    return BudgetSpec((Budget("rss", BudgetKind.SLOPE, 0.0, "t"),), default_run(**run))


def window(y: np.ndarray, **facts: object) -> Window:
    return Window(X, {"rss": y}, {}, {}, len(X), 1.0, **facts)  # type: ignore[arg-type]


def test_a_fixed_run_is_judged_and_stops() -> None:
    s = spec(iterations=200)
    policy = RunPolicy.for_run(s.run)
    decision = decide(s, policy, window(LEAK), Record.first(policy))
    assert decision.verdict.failed and decision.step is StopReason.FIXED


def test_an_auto_failure_goes_on_to_its_confirmation() -> None:
    s = spec()
    policy = RunPolicy.for_run(s.run)
    decision = decide(s, policy, window(LEAK), Record.first(policy))
    assert decision.verdict.failed
    assert isinstance(decision.step, Checkpoint) and decision.step.confirm_at == 400
    assert decision.record.checkpoint is decision.step


def test_a_failure_held_by_a_filling_cache_is_inconclusive() -> None:
    s = spec(iterations=200)
    policy = RunPolicy.for_run(s.run)
    found = Found(caches_filling=True, python_explains=True)
    decision = decide(s, policy, window(LEAK, end=StopReason.FIXED, found=found),
                      Record.first(policy))
    assert not decision.verdict.failed and decision.verdict.held == ("rss",)
    (outcome,) = decision.verdict.probes["rss"].outcomes
    assert outcome.status is Status.AMBIGUOUS


def test_native_growth_beside_a_filling_cache_still_fails() -> None:
    s = spec(iterations=200)
    policy = RunPolicy.for_run(s.run)
    found = Found(caches_filling=True, python_explains=False)
    decision = decide(s, policy, window(LEAK, end=StopReason.FIXED, found=found),
                      Record.first(policy))
    assert decision.verdict.failed and decision.verdict.held == ()


def test_a_run_stopped_at_the_ceiling_judges_no_slope() -> None:
    s = spec(iterations=200)
    policy = RunPolicy.for_run(s.run)
    decision = decide(s, policy, window(LEAK, end=StopReason.CEILING), Record.first(policy))
    (outcome,) = decision.verdict.probes["rss"].outcomes
    assert outcome.status is Status.AMBIGUOUS and decision.step is StopReason.CEILING


def test_a_probe_that_settled_keeps_its_judgement_and_says_where() -> None:
    s = BudgetSpec((Budget("rss", BudgetKind.SLOPE, 0.0, "t"),
                    Budget("fds", BudgetKind.SLOPE, 0.0, "t")), default_run())
    policy = RunPolicy.for_run(s.run)
    x = np.arange(1.0, 701.0)
    ambiguous_fds = np.where(x % 2 == 0, 10.0, 11.0) + (x > 650)
    first = Window(x, {"rss": np.full(700, 1e6), "fds": ambiguous_fds}, {}, {}, 700, 1.0)
    decision = decide(s, policy, first, Record.first(policy))
    assert decision.record.settled["rss"][0].settled_at == 700
    later = Window(np.arange(1.0, 1001.0), {"rss": np.r_[np.full(700, 1e6), 1e6 + 5e4 * (
        np.arange(300.0) > 250)], "fds": np.full(1000, 10.0)}, {}, {}, 1000, 2.0)
    kept = decide(s, policy, later, decision.record).verdict.probes["rss"]
    assert kept.settled_at == 700 and kept.outcomes[0].status is Status.PASS


def rule_calls(path: Path) -> set[str]:
    """The judge's rules that a module imports or calls by name."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.ImportFrom) and node.module
                and node.module.startswith("pytest_membudget.judge")):
            found |= {a.name for a in node.names if a.name in RULES}
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in {"after", "settles"}):
            found.add(node.func.attr)
    return found


@pytest.mark.parametrize("path", sorted(p for p in PACKAGE.rglob("*.py")
                                        if p.parent.name != "judge"),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_nothing_outside_judge_applies_a_rule(path: Path) -> None:
    assert rule_calls(path) == set()
