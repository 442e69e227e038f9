"""Detection benchmark for pytest-membudget: which leaks it catches, which clean loops it flags.

    python -m bench.detection [--repeats 5] [--cases PATTERNS] [-n N] [--memray]
                              [--json PATH] [--compare PATH]

Each case of ``cases.py`` becomes a test ``@pytest.mark.membudget(rss=0, threads=0, fds=0)``
running ``membudget.run(step)`` with default settings. Without ``-n`` every case runs in its own
pytest process; with ``-n N`` all cases run in one ``pytest -n N`` process per repeat. The
verdicts of each repeat, the iterations the plugin ran, and its wall time against a bare loop of
the same iterations are printed; ``--memray`` adds pytest-memray's ``limit_leaks`` at several
thresholds on a fixed loop.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python bench/detection/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.detection.cases import Case, select
from bench.detection.compare import compare, load_previous
from bench.detection.generate import BUDGETS, write_suite
from bench.detection.reporting import print_report, summarise, wrong
from bench.detection.running import (
    _FROZEN,
    ROOT,
    Run,
    freeze_plugin,
    memray_available,
    plugin_fingerprint,
    run_bare,
    run_memray,
    run_serial,
    run_xdist,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.detection",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5,
                        help="runs of each case (default 5); verdict flips are counted over them")
    parser.add_argument("--heldout", action="store_true",
                        help="run the held-out cases (bench/detection/heldout.py) instead of "
                             "the corpus: cases never used to tune the verdict's rules")
    parser.add_argument("--budgets", default=BUDGETS,
                        help=f"the marker's budgets for every case (default {BUDGETS!r})")
    parser.add_argument("--cases", default=None,
                        help="comma-separated names, substrings or fnmatch patterns")
    parser.add_argument("-n", dest="workers", type=int, default=None,
                        help="pass -n N to pytest (pytest-xdist); all cases in one process")
    parser.add_argument("--memray", action="store_true",
                        help="also run pytest-memray's limit_leaks (needs pytest-memray)")
    parser.add_argument("--memray-thresholds", default="1KB,64KB,1MB",
                        help="comma-separated limit_leaks thresholds (default 1KB,64KB,1MB)")
    parser.add_argument("--memray-iterations", type=int, default=200,
                        help="calls of the step in each memray test (default 200)")
    parser.add_argument("--no-evidence", action="store_true",
                        help="membudget(evidence=False): skip the evidence rerun after a "
                             "failure (it does not change the verdict, only the time)")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare-loop timing")
    parser.add_argument("--json", dest="json_path", default=None, metavar="PATH",
                        help="write every run and the summary to this file (for --compare and "
                        "table.py)")
    parser.add_argument("--compare", default=None,
                        help="a previous --json file: print cases whose verdicts differ")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds allowed to one case's pytest process")
    parser.add_argument("--live-plugin", action="store_true",
                        help="use the installed plugin as it is at each run instead of a copy "
                             "frozen at the start")
    parser.add_argument("--plugin-from", default=None, metavar="DIR",
                        help="a directory holding a copy of pytest_membudget/ to test (to "
                             "compare several runs on the same code)")
    parser.add_argument("--keep", action="store_true", help="keep the generated directory")
    args = parser.parse_args(argv)

    for name, value in (("--repeats", args.repeats), ("-n", args.workers),
                        ("--memray-iterations", args.memray_iterations),
                        ("--timeout", args.timeout)):
        if value is not None and value <= 0:
            parser.error(f"{name} must be positive, not {value}")
    cases = select(args.cases, heldout=args.heldout)
    if not cases:
        parser.error(f"no case matches {args.cases!r}")
    previous = None
    if args.compare:
        # Checked before the runs, not after minutes of them.
        try:
            previous = load_previous(Path(args.compare))
        except ValueError as error:
            parser.error(f"--compare: {error}")
    thresholds = [t.strip() for t in args.memray_thresholds.split(",") if t.strip()]
    if args.memray and not memray_available():
        print("pytest-memray is not installed: the memray comparison is skipped",
              file=sys.stderr)
        args.memray = False
    log = sys.stderr
    started = time.perf_counter()
    directory = Path(tempfile.mkdtemp(prefix="membudget-detection-"))
    write_suite(directory, ROOT, cases, memray_thresholds=thresholds if args.memray else (),
                memray_iterations=args.memray_iterations, evidence=not args.no_evidence,
                budgets=args.budgets)
    print(f"generated suite in {directory}", file=log)
    if args.plugin_from:
        _FROZEN.append(str(Path(args.plugin_from).resolve()))
        print(f"plugin from {args.plugin_from}: {plugin_fingerprint()}", file=log)
    elif not args.live_plugin:
        print(f"plugin frozen at start: {freeze_plugin(directory)}", file=log)
    if args.workers:
        mode = f"-n {args.workers}, {args.repeats} repeats"
        if args.no_evidence:
            mode += ", evidence off"
        runs = run_xdist(directory, cases, args.repeats, args.workers, args.timeout, log)
    else:
        mode = f"one process per case, {args.repeats} repeats"
        if args.no_evidence:
            mode += ", evidence off"
        runs = run_serial(directory, cases, args.repeats, args.timeout, log)
    if args.heldout:
        mode += ", held-out cases"
    if args.budgets != BUDGETS:
        mode += f", budgets {args.budgets}"
    detection_seconds = time.perf_counter() - started
    bare = {} if args.no_bare else run_bare(cases, runs, args.timeout, log)
    memray = run_memray(directory, cases, thresholds, args.timeout, log) if args.memray \
        else None
    total_seconds = time.perf_counter() - started
    summary = summarise(cases, runs, bare)
    print_report(cases, runs, summary, memray, thresholds, mode, total_seconds)
    print(f"detection runs took {detection_seconds:.0f} s")
    differences: list[str] = []
    if previous is not None:
        differences = compare(previous, runs)
        print(f"\ncompared with {args.compare}: "
              + ("same verdicts" if not differences else f"{len(differences)} differ"))
        for line in differences:
            print("  " + line)
    if args.json_path:
        payload = {
            "mode": mode, "workers": args.workers, "repeats": args.repeats,
            "python": sys.version.split()[0], "cpus": os.cpu_count(),
            "plugin_fingerprints": sorted({r.plugin for rs in runs.values() for r in rs}),
            "total_seconds": total_seconds, "detection_seconds": detection_seconds,
            "summary": summary, "bare": bare, "memray": memray,
            "memray_thresholds": thresholds if memray else None,
            "memray_iterations": args.memray_iterations if memray else None,
            "differences": differences,
            "cases": {c.name: {"truth": c.truth, "probe": c.probe, "rate": c.rate,
                               "family": c.family, "note": c.note} for c in cases},
            "runs": {name: [_run_dict(by_case, r) for r in case_runs]
                     for name, case_runs in runs.items()
                     for by_case in [{c.name: c for c in cases}[name]]},
        }
        Path(args.json_path).write_text(json.dumps(payload, indent=1))
        print(f"results written to {args.json_path}")
    if not args.keep:
        import shutil

        shutil.rmtree(directory, ignore_errors=True)
    return 0


def _run_dict(case: Case, run: Run) -> dict[str, Any]:
    data = asdict(run)
    data["wrong"] = wrong(case, run)
    if data["wrong"] is None:
        data["samples"] = None  # samples kept only where the verdict is wrong
    return data


if __name__ == "__main__":
    sys.exit(main())
