"""Mutants of the verdict's rules: each weakens or removes one rule in a copy of the plugin,
and the unit tests run against that copy. A mutant is killed when some test fails; the tests
that failed are listed. A rule whose mutant survives is pinned by no test.

    python bench/mutation.py [--only NAME ...] [--tests tests/unit]

Figures only: nothing here asserts.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    name: str
    rule: str
    module: str
    old: str
    new: str


STILL_GROWING = ("still_growing = t.late_slope > limit and "
                 "t.recent_slope - limit > (t.slope - limit) / 2")

MUTANTS = (
    Mutant("upper-bound", "fail on the lower confidence bound", "judge/verdict.py",
           "if t.lower > limit and still_growing", "if t.upper > limit and still_growing"),
    Mutant("no-resolution", "growth above the budget reaches the probe's resolution",
           "judge/verdict.py", "excess >= max(res, 0.0) and excess > 0", "excess > 0"),
    Mutant("no-still-growing", "still growing at the end", "judge/verdict.py",
           STILL_GROWING,
           "still_growing = True"),
    Mutant("still-growing-late-only", "still growing: the last two blocks", "judge/verdict.py",
           STILL_GROWING,
           "still_growing = t.late_slope > limit"),
    Mutant("still-growing-recent-only", "still growing: the later half", "judge/verdict.py",
           STILL_GROWING,
           "still_growing = t.recent_slope - limit > (t.slope - limit) / 2"),
    Mutant("no-block-floors", "block floors", "judge/fit.py",
           "fx, fy = block_floors(tx, ty, TAIL_BLOCKS)", "fx, fy = tx, ty"),
    Mutant("block-means", "block floors (not means)", "judge/fit.py",
           "        fx[k] = bx[at]\n        fy[k] = by[at]",
           "        fx[k] = bx.mean()\n        fy[k] = by.mean()"),
    Mutant("sen-rank-low", "Sen's lower rank", "judge/fit.py",
           "low_rank = math.floor((count - half_width) / 2.0)",
           "low_rank = math.floor((count - half_width) / 2.0) + 1"),
    Mutant("sen-rank-high", "Sen's upper rank", "judge/fit.py",
           "high_rank = math.ceil((count + half_width) / 2.0) + 1",
           "high_rank = math.ceil((count + half_width) / 2.0)"),
    Mutant("whole-window", "only the second half is judged", "judge/fit.py",
           "return max(n - n // 2, min(n, TAIL_BLOCKS))", "return n"),
    Mutant("pass-on-estimate", "a clear pass needs the upper bound within budget",
           "judge/verdict.py", "if t.upper <= limit + res / max(longest_tail, 1.0)",
           "if t.slope <= limit + res / max(longest_tail, 1.0)"),
    Mutant("no-rss-floor", "auto runs pass rss only once a 256 B/iter leak would show",
           "judge/verdict.py", "and t.tail_span >= shortest_pass:", ":"),
    Mutant("growth-end-to-end", "growth budgets go floor to floor", "judge/fit.py",
           "return float(parts[-1].min() - parts[0].min())", "return float(y[-1] - y[0])"),
    Mutant("no-confirmation", "a failure is confirmed at twice its length", "judge/policy.py",
           "confirm_at = self._capped(CONFIRM_GROWTH * measured)", "return StopReason.CLEAR"),
    Mutant("no-shortest-verdict", "no auto verdict before 640 iterations", "judge/policy.py",
           "shortest = self._capped(self.shortest)", "shortest = 0"),
    Mutant("no-ample-growth", "ample growth confirms a failure early", "judge/policy.py",
           "if self.stands(measured, elapsed) or reading is Reading.FAIL_AMPLE:",
           "if self.stands(measured, elapsed):"),
    Mutant("no-witness", "a flat RSS is no pass while py_blocks grows", "judge/witness.py",
           "    if spec.run.iterations is not None:\n        return {}", "    return {}"),
    Mutant("witness-at-zero", "the witness holds a pass only above the budget's rate",
           "judge/witness.py", "limit / info.least_bytes", "0.0"),
)


def apply(package: Path, mutant: Mutant) -> None:
    path = package / mutant.module
    text = path.read_text()
    if text.count(mutant.old) != 1:
        raise SystemExit(f"mutant {mutant.name}: {mutant.old!r} occurs "
                         f"{text.count(mutant.old)} times in {mutant.module}, not once")
    path.write_text(text.replace(mutant.old, mutant.new))


def run(mutant: Mutant | None, tests: str) -> tuple[int, list[str], float]:
    """Run ``tests`` against a copy of the plugin with ``mutant`` applied."""
    with tempfile.TemporaryDirectory(prefix="membudget-mutant-") as directory:
        package = Path(directory) / "pytest_membudget"
        shutil.copytree(ROOT / "pytest_membudget", package,
                        ignore=shutil.ignore_patterns("__pycache__"))
        if mutant is not None:
            apply(package, mutant)
        # -P: the working directory (the repository, with its own pytest_membudget/) is not
        # put first on the path; the mutated copy is.
        env = dict(os.environ, PYTHONPATH=directory)
        begin = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-P", "-m", "pytest", tests, "-q", "-p", "no:cacheprovider",
             "-p", "no:randomly", "-rf", "--tb=no"],
            cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - begin
        failed = re.findall(r"^FAILED (\S+)", proc.stdout, flags=re.MULTILINE)
        if mutant is None and f"{package}" not in _imported(env):
            raise SystemExit("the copy of the plugin was not the one imported")
        return proc.returncode, failed, seconds


def _imported(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-P", "-c", "import pytest_membudget; "
                           "print(pytest_membudget.__file__)"], env=env, capture_output=True,
                          text=True, check=False).stdout


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="mutant names")
    parser.add_argument("--tests", default="tests/unit")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only]
    code, failed, seconds = run(None, args.tests)
    print(f"unmutated: {'all passed' if code == 0 else 'FAILED ' + ', '.join(failed)} "
          f"({seconds:.0f} s)")
    survived = 0
    for mutant in chosen:
        code, failed, seconds = run(mutant, args.tests)
        killed = code != 0
        survived += not killed
        print(f"\n{mutant.name} ({mutant.rule}): {'killed' if killed else 'SURVIVED'} "
              f"in {seconds:.0f} s")
        for test in failed:
            print(f"    {test}")
    print(f"\n{len(chosen) - survived} of {len(chosen)} mutants killed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
