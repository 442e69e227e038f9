"""Flake audit: the README's suites, run again and again beside a busy core.

    python bench/flake_audit.py [--examples 10] [--tests 5] [--workers 2] [--out DIR]

Starts a plain Python loop (``python3 -c 'while True: pass'``) that keeps one core busy for
the whole audit, then runs ``pytest examples`` ``--examples`` times and ``pytest tests -n
WORKERS`` ``--tests`` times beside it, one run after the other, each in its own pytest
process, with the interpreter running this script (``.venv/bin/python bench/flake_audit.py``
uses the venv's pytest). Writes to ``--out`` (default ``bench/results/flake_audit_<date>``):

* ``summary.md``: one row per run (outcome, seconds, the counts pytest reported, the load
  average before it), then every failing test and every skip with its reason;
* ``summary.json``: the same, for machines;
* ``<suite>_<n>.log``: the output of each run that failed (runs that pass leave none).

Prints a line per run; asserts nothing. Its exit status is 1 if any run failed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUSY_LOOP = ["python3", "-c", "while True: pass"]


@dataclass
class Run:
    suite: str
    number: int
    command: str
    returncode: int
    seconds: float
    load_before: float
    counts: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.returncode == 0


def junit_outcomes(path: Path) -> tuple[dict[str, int], list[str], list[str]]:
    """Counts by outcome, failing tests (with the first line of why) and skips (with the
    reason) from a JUnit XML report; an xfail is counted, not listed."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "xfailed": 0}
    failed: list[str] = []
    skipped: list[str] = []
    if not path.exists():
        return counts, failed, skipped
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        skip = case.find("skipped")
        if problem is not None:
            counts["failed" if problem.tag == "failure" else "errors"] += 1
            first = (problem.get("message") or "").strip().splitlines()[:1]
            failed.append(f"{name}: {first[0][:200] if first else problem.tag}")
        elif skip is not None and skip.get("type") == "pytest.xfail":
            counts["xfailed"] += 1
        elif skip is not None:
            counts["skipped"] += 1
            skipped.append(f"{name}: {(skip.get('message') or '').strip()[:200]}")
        else:
            counts["passed"] += 1
    return counts, failed, skipped


def run_suite(suite: str, number: int, args: list[str], out: Path) -> Run:
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "junit.xml"
        command = [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", "-rfEs",
                   f"--junitxml={report}"]
        load = os.getloadavg()[0]
        begin = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - begin
        counts, failed, skipped = junit_outcomes(report)
    run = Run(suite, number, " ".join(["pytest", *args]), done.returncode, seconds, load,
              counts, failed, skipped)
    if not run.passed:
        (out / f"{suite}_{number}.log").write_text(done.stdout + done.stderr)
    return run


def table(runs: list[Run]) -> list[str]:
    lines = ["| run | command | outcome | seconds | passed | failed | errors | skipped | "
             "xfailed | load before |", "|---|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        c = run.counts
        outcome = "pass" if run.passed else f"FAIL (exit {run.returncode})"
        lines.append(f"| {run.suite} {run.number} | `{run.command}` | {outcome} | "
                     f"{run.seconds:.0f} | {c.get('passed', 0)} | {c.get('failed', 0)} | "
                     f"{c.get('errors', 0)} | {c.get('skipped', 0)} | {c.get('xfailed', 0)} | "
                     f"{run.load_before:.2f} |")
    return lines


def write_summary(runs: list[Run], out: Path, started: str, commit: str) -> None:
    lines = [f"# Flake audit {started}", "",
             f"Commit `{commit}`, {os.cpu_count()} cores, one of them kept busy by "
             f"`{shlex.join(BUSY_LOOP)}` for the whole audit.", "", *table(runs), ""]
    for heading, attribute in (("Failing tests", "failed"), ("Skips", "skipped")):
        lines += [f"## {heading}", ""]
        listed = [(run, entry) for run in runs for entry in getattr(run, attribute)]
        lines += [f"- {run.suite} {run.number}: {entry}" for run, entry in listed] or ["none"]
        lines.append("")
    (out / "summary.md").write_text("\n".join(lines))
    (out / "summary.json").write_text(json.dumps(
        {"started": started, "commit": commit, "cores": os.cpu_count(),
         "busy": shlex.join(BUSY_LOOP), "runs": [asdict(run) for run in runs]}, indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=10, help="runs of pytest examples")
    parser.add_argument("--tests", type=int, default=5, help="runs of pytest tests -n WORKERS")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers for the tests")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    out = args.out or ROOT / "bench" / "results" / f"flake_audit_{time.strftime('%Y%m%d')}"
    out.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=False).stdout.strip()
    plan = ([("examples", i, ["examples"]) for i in range(1, args.examples + 1)]
            + [("tests", i, ["tests", "-n", args.workers]) for i in range(1, args.tests + 1)])
    runs: list[Run] = []
    # Stopped early (Ctrl-C, kill), the audit still stops its busy loop and its pytest run.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    busy = subprocess.Popen(BUSY_LOOP)
    try:
        for suite, number, pytest_args in plan:
            run = run_suite(suite, number, pytest_args, out)
            runs.append(run)
            write_summary(runs, out, started, commit)
            print(f"{suite} {number}: {'pass' if run.passed else 'FAIL'} in "
                  f"{run.seconds:.0f} s {run.counts}"
                  + "".join(f"\n  failed {name}" for name in run.failed), flush=True)
    finally:
        busy.terminate()
        busy.wait()
    print(f"summary: {out / 'summary.md'}")
    return 0 if all(run.passed for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
