"""The sweep's second look at growth of ``malloc`` alone, on recorded series.

Record (a pytest plugin; each test the screen flags on ``malloc`` alone gets one long look
of LOOK calls, straight on, ``malloc`` read after each, and passes there):

    LOOKLOG=looks.jsonl PYTHONPATH=/path/to/pytest-membudget \\
        pytest -p bench.second_look --membudget-sweep=report --membudget-sweep-seconds=30

Read (the rounds of the second look applied to each series offline, as recorded and with a
native leak of N bytes a call added to it, screen and look alike):

    python bench/second_look.py looks.jsonl

The recorded series of gymnasium 1.4.0's suite are in
``sweep_results/gymnasium_long_looks_20261127.jsonl``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Generator, Sequence
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

#: Calls of the recorded look.
LOOK = int(os.environ.get("LOOK", "160"))
#: Growth added to every series, in bytes a call.
ADDED = (0, 16, 32, 64, 128, 256, 512)


def _install() -> None:
    """Replace the sweep's second look by one long look that records its series."""
    from pytest_membudget.judge.policy import RunPolicy
    from pytest_membudget.sweep import driver
    from pytest_membudget.sweep.outcome import SecondLook

    def long_look(spec: Any, catch: Any, ending: Any, screen: Any,
                  probe: str) -> Generator[None, None, Any]:
        sm = screen.measurement
        column = list(sm.probes).index(probe)
        first = sm.per_call(probe)
        look = replace(spec, run=replace(spec.run, warmup=0, iterations=LOOK))
        again = yield from driver.repeat(look, (probe,), catch,
                                         storage=driver.ScreenMeasurement,
                                         policy=RunPolicy.for_run(look.run))
        ending.outcome.calls += again.calls
        if again.error is None:
            m = again.measurement
            record = {"id": os.environ.get("PYTEST_CURRENT_TEST", ""), "first": first,
                      "screen": [float(v[column]) for v in sm.values[sm.window_start:sm.rows]],
                      "look": [float(v[0]) for v in m.values[m.window_start:m.rows]]}
            with open(os.environ["LOOKLOG"], "a") as out:
                out.write(json.dumps(record) + "\n")
            ending.outcome.second_look = SecondLook(probe, first, (0.0,), False,
                                                    goes_on=False)
        return again

    driver._second_look = long_look


if "LOOKLOG" in os.environ and __name__ != "__main__":
    _install()


def goes_on(first: float, series: Sequence[float], rounds: int, unread: int,
            keeps: float = 0.5, calls: int = 8) -> bool:
    """The second look's rule on a recorded series: ``rounds`` rounds of ``calls`` calls,
    each after ``unread`` calls not read, against the slowest rate before each."""
    slowest, at = first, 0
    for _ in range(rounds):
        window = series[at + unread: at + unread + calls + 1]
        at += unread + calls
        deltas = [b - a for a, b in pairwise(window)]
        then = (window[-1] - window[0]) / calls
        if all(d >= 1 for d in deltas):
            return True
        if then < keeps * slowest:
            return False
        slowest = min(slowest, then)
    return True


def main(path: str) -> None:
    records = [json.loads(line) for line in Path(path).read_text().splitlines()]
    n = len(records)
    print(f"{n} tests flagged on malloc alone, each looked at for "
          f"{len(records[0]['look']) - 1} calls; tests that go on to a full verdict:")
    print("| leak added (B/call) | one round, its first call read | one round, a call unread "
          "| two rounds, a call unread each |")
    print("|---|---|---|---|")
    for added in ADDED:
        counts = []
        for rounds, unread in ((1, 0), (1, 1), (2, 1)):
            counts.append(sum(
                goes_on(r["first"] + added, [v + added * i for i, v in enumerate(r["look"])],
                        rounds, unread) for r in records))
        print(f"| {added} | " + " | ".join(f"{c}/{n}" for c in counts) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
