"""What ``--membudget-sweep`` costs and what it finds.

    python bench/sweep.py screen [--repeats 3] [--calls 32] [--json FILE | --from-json FILE]
    python bench/sweep.py corpus [--repeats 3] [--screens 3,8]
    python bench/sweep.py suite PATH [--pythonpath DIR] [--repeats 3] [--screens 3,8] [-- ARGS]

``screen``: the screening data behind the rule. Each detection case (bench/detection) runs in
one process after the others, as in a suite: its first call, then a screen of ``--calls``
calls sampled after each (the sweep's own probes, no warm-up), in a fresh process per repeat.
Prints, for each screen length and warm-up, the leaks flagged and the clean cases flagged by
the rule in pytest_membudget/judge/screen.py, and what a screen costs per test.

``corpus``: a suite of one unmarked test per detection case (the step called once per test;
its state kept across calls, as a module's caches are), run by plain ``pytest`` and by
``pytest --membudget-sweep=report``: wall times, leaks caught, false alarms, and where the
sweep's time went.

``suite``: the same comparison on any test suite (a released package's own tests).

``fast``: the same comparison on about a thousand fast tests with five leaks among them
(bench/fast_suite.py): plain and sweep runs interleaved, and the screen's cost per test.

``profile``: where one screen's time goes: screens of a small body in this process, timed,
then under cProfile, split into garbage collections, probe reads, the screening rule, the
loop's bookkeeping and the body's own calls.

``one-block [--screens 1000]``: the screen alone, many times in this process, on a body that
keeps one object per call, with the default reading schedule and a slow test's: how often
each flags it.

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# -- screen ------------------------------------------------------------------------------------

def screen_one_process(calls: int) -> dict[str, Any]:
    """In this process: every case's first call and screen; the series of each probe."""
    from bench.detection.cases import CASES, close_step
    from pytest_membudget.judge.screen import SCREEN_PROBES
    from pytest_membudget.settings import default_run
    from pytest_membudget.sweep.driver import drive, repeat
    from pytest_membudget.sweep.screen import ScreenMeasurement, screen_spec

    try:  # imported before any case, as a suite imports it at collection
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    spec = screen_spec(default_run(), calls)
    out: dict[str, Any] = {}
    for name, case in CASES.items():
        if case.needs and torch is None:
            continue
        step = case.make()
        try:
            step()
            begin = time.perf_counter()
            done = drive(repeat(spec, SCREEN_PROBES, (Exception,),
                                storage=ScreenMeasurement), step)
            seconds = time.perf_counter() - begin
            series = done.measurement.window()[1]
            out[name] = {"truth": case.truth, "seconds": seconds,
                         "series": {k: [float(v) for v in values]
                                    for k, values in series.items()}}
        finally:
            close_step(step)
    idle = []
    for _ in range(20):
        begin = time.perf_counter()
        drive(repeat(screen_spec(default_run()), SCREEN_PROBES, (Exception,),
                     storage=ScreenMeasurement), lambda: None)
        idle.append(time.perf_counter() - begin)
    out["__idle__"] = {"seconds": statistics.median(idle)}
    return out


def evaluate(runs: list[dict[str, Any]], lengths: list[int], warmups: list[int]) -> None:
    import numpy as np

    from pytest_membudget.judge.screen import flagged

    names = [n for n in runs[0] if not n.startswith("__")]
    leaks = [n for n in names if runs[0][n]["truth"] == "leak"]
    clean = [n for n in names if runs[0][n]["truth"] == "clean"]
    print(f"Screening rule on the detection corpus ({len(leaks)} leaks, {len(clean)} clean), "
          f"{len(runs)} process(es)")
    print("  warm-up: calls after the test's own before the screen's first sample; calls: the "
          "calls measured (deltas judged)")
    print(f"  {'warm-up':>7} {'calls':>5}  {'leaks flagged':>13}  {'clean flagged':>13}  "
          "missed leaks (any run) / flagged clean (any run)")
    for warmup in warmups:
        for length in lengths:
            hits: dict[str, int] = {}
            for run in runs:
                for name in names:
                    series = {k: np.asarray(v[warmup:warmup + length + 1])
                              for k, v in run[name]["series"].items()}
                    if min(len(v) for v in series.values()) < length + 1:
                        continue
                    hits[name] = hits.get(name, 0) + bool(flagged(series))
            total = len(runs)
            caught = sum(hits.get(n, 0) for n in leaks)
            false = sum(hits.get(n, 0) for n in clean)
            missed = sorted(n for n in leaks if hits.get(n, 0) < total)
            alarms = sorted(n for n in clean if hits.get(n, 0))
            print(f"  {warmup + 1:>7} {length:>5}  {caught:>6}/{len(leaks) * total:<6}  "
                  f"{false:>6}/{len(clean) * total:<6}  {', '.join(missed) or '-'} / "
                  f"{', '.join(alarms) or '-'}")
    idle = statistics.median(run["__idle__"]["seconds"] for run in runs)
    print(f"\nA screen of an empty test body costs {idle * 1e3:.2f} ms (median).")
    evaluate_settling(runs, names, leaks, clean)


def evaluate_settling(runs: list[dict[str, Any]], names: list[str], leaks: list[str],
                      clean: list[str]) -> None:
    """Screens of 8 calls (the default) and 16, each whole against the same screen stopped at
    its reading points when nothing could still be flagged there (judge.screen.quiet), with
    the default schedule and a slow test's (read after the first call too): what each
    flags, and the calls each makes."""
    from pytest_membudget.judge.screen import SCREEN_CALLS, SCREEN_WARMUP

    for length in (SCREEN_CALLS, 2 * SCREEN_CALLS):
        hits, calls = _settling(runs, names, SCREEN_WARMUP - 1, length)
        total = len(runs)
        print(f"\nScreens of {length} calls after {SCREEN_WARMUP} warm-up calls, whole and "
              "stopped once quiet:")
        for kind in ("whole", "settling", "slow"):
            caught = sum(hits[kind][n] for n in leaks)
            false = sum(hits[kind][n] for n in clean)
            missed = sorted(n for n in leaks if hits[kind][n] < total)
            every = statistics.mean(c for _, c in calls[kind])
            of_clean = statistics.mean(c for n, c in calls[kind] if n in clean)
            print(f"  {kind:<9} leaks flagged {caught}/{len(leaks) * total}, clean flagged "
                  f"{false}/{len(clean) * total}, calls per screen {every:.2f} (clean cases "
                  f"{of_clean:.2f}); missed in some run: {', '.join(missed) or '-'}")
        for kind in ("settling", "slow"):
            changed = sorted(n for n in names if hits["whole"][n] != hits[kind][n])
            print(f"  cases whose flags differ, whole and {kind}: {', '.join(changed) or 'none'}")


def _settling(runs: list[dict[str, Any]], names: list[str], start: int, length: int
              ) -> tuple[dict[str, dict[str, int]], dict[str, list[tuple[str, int]]]]:
    import numpy as np

    from pytest_membudget.judge.screen import (
        SCREEN_WARMUP,
        flagged,
        left_out,
        quiet,
        reading_points,
        rule_columns,
    )

    kinds = ("whole", "settling", "slow")
    hits = {kind: dict.fromkeys(names, 0) for kind in kinds}
    calls: dict[str, list[tuple[str, int]]] = {kind: [] for kind in kinds}
    for run in runs:
        for name in names:
            probes = list(run[name]["series"])
            window = np.column_stack([np.asarray(run[name]["series"][k][start:start + length + 1])
                                      for k in probes])
            if len(window) < length + 1:
                continue
            least, every = rule_columns(tuple(probes))
            # Read at each reading point until one is quiet; a screen that goes on leaves
            # deltas out of its rule (sweep.screen.left_out).
            screens = [("whole", length, [])]
            for kind, slow in (("settling", False), ("slow", True)):
                points = reading_points(length, slow)
                stop = next((p for p in points if quiet(window[: p + 1], least, every)),
                            length)
                screens.append((kind, stop, [p for p in points if p < stop and left_out(p)]))
            for kind, rows, skip in screens:
                series = {k: window[: rows + 1, c] for c, k in enumerate(probes)}
                hits[kind][name] += bool(flagged(series, skip=skip))
                calls[kind].append((name, SCREEN_WARMUP + rows))
    return hits, calls


def screen(args: argparse.Namespace) -> None:
    runs = []
    if args.from_json:
        runs = json.loads(Path(args.from_json).read_text())
    for _ in range(0 if args.from_json else args.repeats):
        completed = subprocess.run(
            [sys.executable, __file__, "screen-process", "--calls", str(args.calls)],
            capture_output=True, text=True, check=True, cwd=ROOT)
        runs.append(json.loads(completed.stdout.splitlines()[-1]))
    if args.json:
        Path(args.json).write_text(json.dumps(runs))
    evaluate(runs, [n for n in (3, 4, 6, 8, 12, 16, 24, 32) if n <= args.calls - 2],
             [0, 1, 2])


def one_block(args: argparse.Namespace) -> None:
    """The screen alone, many times in this process, on a body that keeps one object (one
    block) per call: how often each reading schedule misses it. A single block is the leak a
    reading's own objects can hide, in the delta after the reading; the body's length does
    not matter to that, so the slow schedule is asked for directly."""
    from pytest_membudget.settings import default_run
    from pytest_membudget.sweep.driver import drive, screen_run
    from pytest_membudget.sweep.screen import ScreenMeasurement, screen_spec

    spec = screen_spec(default_run())
    for slow in (False, True):
        flagged = calls = 0
        for _ in range(args.screens):
            kept: list[object] = []
            done = drive(screen_run(spec, (Exception,), slow),
                         lambda kept=kept: kept.append(object()))
            assert isinstance(done.measurement, ScreenMeasurement)
            flagged += "py_blocks" in done.measurement.flagged()
            calls += done.calls
        print(f"{'slow' if slow else 'default'} schedule: one block a call flagged in "
              f"{flagged} of {args.screens} screens ({calls / args.screens:.1f} calls each)")


# -- suites ------------------------------------------------------------------------------------

CORPUS_CONFTEST = '''
import sys
sys.path.insert(0, {root!r})
import pytest
from bench.detection.cases import CASES, close_step

STEPS = {{}}

try:
    import torch
    torch.set_num_threads(1)
except ImportError:
    torch = None


@pytest.fixture(scope="session")
def step_of():
    def get(name):
        if CASES[name].needs and torch is None:
            pytest.skip("needs torch")
        if name not in STEPS:
            STEPS[name] = CASES[name].make()
        return STEPS[name]
    yield get
    for step in STEPS.values():
        close_step(step)
'''


def corpus_suite(where: Path) -> dict[str, str]:
    from bench.detection.cases import CASES

    (where / "conftest.py").write_text(CORPUS_CONFTEST.format(root=str(ROOT)))
    (where / "pytest.ini").write_text("[pytest]\n")
    tests = "\n\n".join(f"def test_{name}(step_of):\n    step_of({name!r})()"
                        for name in CASES)
    (where / "test_corpus.py").write_text(tests + "\n")
    return {f"test_corpus.py::test_{name}": case.truth for name, case in CASES.items()}


def run_pytest(where: Path, args: list[str], env: dict[str, str]) -> tuple[float, str, int]:
    begin = time.perf_counter()
    completed = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                                "-p", "no:randomly", "-q", *args], cwd=where, env=env,
                               capture_output=True, text=True)
    return time.perf_counter() - begin, completed.stdout + completed.stderr, completed.returncode


def compare(where: Path, args: list[str], repeats: int, env: dict[str, str],
            screens: list[int], truth: dict[str, str] | None = None) -> None:
    plain: list[float] = []
    plain_codes: list[int] = []
    swept: dict[int, list[float]] = {n: [] for n in screens}
    documents: dict[int, list[dict[str, Any]]] = {n: [] for n in screens}
    outputs: dict[int, str] = {}
    report = where / "sweep.json"
    for _ in range(repeats):
        seconds, _output, code = run_pytest(where, args, env)
        plain.append(seconds)
        plain_codes.append(code)
        for n in screens:
            report.unlink(missing_ok=True)
            seconds, output, code = run_pytest(
                where, [*args, "--membudget-sweep=report", f"--membudget-sweep-screen={n}",
                        f"--membudget-json={report}"], env)
            if not report.exists():
                print(output[-3000:])
                raise SystemExit("the sweep wrote no JSON report")
            swept[n].append(seconds)
            documents[n].append(json.loads(report.read_text())["sweep"])
            outputs[n] = output
            if code != plain_codes[-1]:
                print(f"note: exit code {code} with the sweep, {plain_codes[-1]} without")
    p = statistics.median(plain)
    print(f"plain pytest: {p:.2f} s (median of {repeats}: "
          f"{', '.join(f'{x:.2f}' for x in plain)}); exit code {plain_codes[-1]}")
    for n in screens:
        s = statistics.median(swept[n])
        last = documents[n][-1]
        spent = last["seconds"]
        flagged: dict[str, int] = {}
        for entry in last["flagged"]:
            flagged[entry["verdict"]] = flagged.get(entry["verdict"], 0) + 1
        print(f"\n--membudget-sweep=report --membudget-sweep-screen={n}: {s:.2f} s "
              f"({', '.join(f'{x:.2f}' for x in swept[n])}), {s / p:.2f}x plain")
        print(f"  sweep's own time (last run, summed over tests): {spent['sweep']:.2f} s = "
              f"screens {spent['screen']:.2f} s + full verdicts {spent['full_verdicts']:.2f} s;"
              f" the tests' own first calls {spent['first_calls']:.2f} s")
        screened = sum(n for v, n in last["counts"].items()
                       if v not in ("not repeatable", "not screened", "opted out",
                                    "own budgets"))
        print(f"  screen per test: {spent['screen'] / max(screened, 1) * 1e3:.2f} ms "
              f"({screened} tests screened)")
        print(f"  counts: {json.dumps(last['counts'])}; flagged by the screen: "
              f"{sum(flagged.values())} ({json.dumps(flagged)})")
        for document in documents[n]:
            leaks = {e["test"] for e in document["leaks"]}
            if truth is None:
                print(f"  run: {len(leaks)} leaking: {sorted(leaks)}")
                continue
            caught = sorted(t for t in leaks if truth.get(t) == "leak")
            false = sorted(t for t in leaks if truth.get(t) == "clean")
            missed = sorted(t for t, v in truth.items() if v == "leak" and t not in leaks)
            print(f"  run: leaks caught {len(caught)}/{sum(v == 'leak' for v in truth.values())}"
                  f", false alarms {len(false)}/{sum(v == 'clean' for v in truth.values())}"
                  f" {false or ''}; missed: {', '.join(m.split('::')[-1] for m in missed)}")
    for n in screens:
        print(f"\nlast sweep's summary (screen {n}):")
        lines = outputs[n].splitlines()
        start = next((i for i, line in enumerate(lines) if "membudget sweep (" in line), None)
        if start is not None:
            end = next((i for i in range(start + 1, len(lines))
                        if lines[i].startswith(("---", "==="))), len(lines))
            print("\n".join(lines[start:end]))


def corpus(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="membudget-sweep-") as tmp:
        where = Path(tmp)
        truth = corpus_suite(where)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        print(f"Corpus suite: {len(truth)} unmarked tests "
              f"({sum(v == 'leak' for v in truth.values())} leaks)")
        compare(where, [], args.repeats, env, args.screens, truth)


def fast(args: argparse.Namespace) -> None:
    from bench.fast_suite import count_tests, write

    with tempfile.TemporaryDirectory(prefix="membudget-fast-") as tmp:
        where = Path(tmp)
        truth = write(where)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if args.without_leaks:
            # The screen's fixed cost alone: no test is flagged, so no full verdict runs.
            print(f"Fast suite without its leaks: {count_tests() - len(truth)} unmarked tests")
            compare(where, ["--ignore=test_leaks.py"], args.repeats, env, args.screens)
            return
        print(f"Fast suite: {count_tests()} unmarked tests ({len(truth)} leaks)")
        compare(where, [], args.repeats, env, args.screens, truth)


#: Where a profiled function's own time is put, by the first rule it matches: (part, file
#: part, function names or None for any).
PROFILE_PARTS: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("garbage collections (gc.collect)", "~", ("gc.collect",)),
    ("gc.freeze and unfreeze", "~", ("gc.freeze", "gc.unfreeze")),
    ("malloc_trim before the window", "~", ("_ctypes.call_function",)),
    # /proc reads and the parsing of what they return, the interpreter's own counters
    ("probe reads", "~", ("posix.", "io.open", "_io.", "of 'bytes' objects",
                          "sys.getallocatedblocks", "gc.get_count")),
    ("probe reads", "pytest_membudget/probes", None),
    ("probe reads", "psutil", None),
    ("the screening rule", "pytest_membudget/judge/screen", None),
    ("numpy (the sample storage)", "numpy", None),
    ("the loop's bookkeeping (loop, stride, samples, driver)", "pytest_membudget", None),
    ("the test body (ten calls)", "bench/sweep.py", ("_screened_body",)),
    ("the test body (ten calls)", "json", None),
)


def _part(file: str, function: str) -> str:
    for part, where, names in PROFILE_PARTS:
        if where in file and (names is None or any(n in function for n in names)):
            return part
    return "other (interpreter and standard library)"


def _screened_body() -> None:
    """A body of the fast suite's kind: a JSON round trip of a small document."""
    doc = {"id": 7, "name": "fox" * 3, "tags": ["the", "quick"], "scores": [0.5, 1.0, 1.5],
           "nested": {"a": [None, True, 7]}}
    assert json.loads(json.dumps(doc)) == doc


def profile(args: argparse.Namespace) -> None:
    """Where one screen's time goes: ``--screens`` screens of a small body in this process,
    timed plainly and then under cProfile (own time of each function, by part; cProfile
    slows Python calls down, so its shares are what to read), with what each screen calls."""
    import cProfile
    import gc
    import pstats

    from pytest_membudget.judge.screen import SCREEN_WARMUP, flagged
    from pytest_membudget.settings import default_run
    from pytest_membudget.sweep.driver import drive, repeat
    from pytest_membudget.sweep.screen import ScreenMeasurement, screen_probes, screen_spec

    spec = screen_spec(default_run())

    def one() -> None:
        done = drive(repeat(spec, screen_probes(), (Exception,), unmeasured=SCREEN_WARMUP - 1,
                            storage=ScreenMeasurement), _screened_body)
        flagged(done.measurement.window()[1])

    for _ in range(20):
        one()
    walls = []
    for _ in range(args.repeats):
        begin = time.perf_counter()
        for _ in range(args.screens):
            one()
        walls.append((time.perf_counter() - begin) / args.screens)
    body = []
    for _ in range(args.repeats):
        begin = time.perf_counter()
        for _ in range(args.screens):
            for _ in range(SCREEN_WARMUP + (spec.run.iterations or 0)):
                _screened_body()
        body.append((time.perf_counter() - begin) / args.screens)
    profiler = cProfile.Profile()
    gc.collect()
    profiler.enable()
    for _ in range(args.screens):
        one()
    profiler.disable()
    raw = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    parts: dict[str, float] = {}
    calls: dict[str, int] = {}
    for (file, _line, function), (_primitive, count, own, _total, _callers) in raw.items():
        name = _part(file, function)
        parts[name] = parts.get(name, 0.0) + own
        if function == "<built-in method gc.collect>":
            calls["gc.collect"] = count
        elif function == "read" and "pytest_membudget/probes" in file:
            calls["probe reads"] = calls.get("probe reads", 0) + count
    profiled = sum(parts.values())
    wall = statistics.median(walls)
    print(f"One screen ({SCREEN_WARMUP} warm-up calls, {spec.run.iterations} measured calls, "
          f"probes {', '.join(screen_probes())}): {wall * 1e3:.3f} ms (median of "
          f"{args.repeats} x {args.screens} screens); the body's own "
          f"{SCREEN_WARMUP + (spec.run.iterations or 0)} calls alone "
          f"{statistics.median(body) * 1e3:.3f} ms")
    print(f"  per screen: {calls.get('gc.collect', 0) / args.screens:.1f} gc.collect, "
          f"{calls.get('probe reads', 0) / args.screens:.1f} probe reads")
    print(f"  {'part (cProfile, own time)':<58}{'share':>8}{'ms/screen':>11}")
    for name, seconds in sorted(parts.items(), key=lambda item: -item[1]):
        share = seconds / profiled
        print(f"  {name:<58}{share:>8.1%}{share * wall * 1e3:>11.3f}")


def suite(args: argparse.Namespace) -> None:
    where = Path(args.path).resolve()
    paths = [str(ROOT), *(str(Path(p).resolve()) for p in args.pythonpath)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    print(f"Suite: {where} {' '.join(args.pytest_args)}")
    compare(where, list(args.pytest_args), args.repeats, env, args.screens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    screening = commands.add_parser("screen", help="screening data on the detection corpus")
    screening.add_argument("--repeats", type=int, default=3, help="fresh processes")
    screening.add_argument("--calls", type=int, default=34, help="calls per screen")
    screening.add_argument("--json", help="write the series to this file")
    screening.add_argument("--from-json", help="evaluate the series saved with --json")
    process = commands.add_parser("screen-process")
    process.add_argument("--calls", type=int, default=34)
    on_corpus = commands.add_parser("corpus", help="the corpus as an unmarked suite")
    on_corpus.add_argument("--repeats", type=int, default=3)
    on_corpus.add_argument("--screens", type=lambda v: [int(n) for n in v.split(",")],
                           default=[8], help="screen lengths to run, e.g. 3,8")
    on_fast = commands.add_parser("fast", help="a thousand fast tests, five leaking")
    on_fast.add_argument("--repeats", type=int, default=3)
    on_fast.add_argument("--screens", type=lambda v: [int(n) for n in v.split(",")],
                         default=[8], help="screen lengths to run, e.g. 3,8")
    on_fast.add_argument("--without-leaks", action="store_true",
                         help="leave the five leaking tests out: the screens' cost alone")
    on_profile = commands.add_parser("profile", help="where the time goes on the fast suite")
    on_profile.add_argument("--repeats", type=int, default=3)
    on_profile.add_argument("--screens", type=int, default=500)
    on_block = commands.add_parser("one-block", help="a one-block leak, screened many times")
    on_block.add_argument("--screens", type=int, default=1000)
    on_suite = commands.add_parser("suite", help="any suite: plain against the sweep")
    on_suite.add_argument("path")
    on_suite.add_argument("--pythonpath", action="append", default=[],
                          help="put this directory on PYTHONPATH (e.g. the package's src)")
    on_suite.add_argument("--repeats", type=int, default=3)
    on_suite.add_argument("--screens", type=lambda v: [int(n) for n in v.split(",")],
                          default=[8], help="screen lengths to run, e.g. 3,8")
    # After --: arguments for pytest (taken as they are).
    args, extra = parser.parse_known_args()
    if extra and args.command != "suite":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.pytest_args = [a for a in extra if a != "--"]
    if args.command == "screen-process":
        print(json.dumps(screen_one_process(args.calls)))
    else:
        {"screen": screen, "corpus": corpus, "suite": suite, "fast": fast,
         "profile": profile, "one-block": one_block}[args.command](args)


if __name__ == "__main__":
    main()
