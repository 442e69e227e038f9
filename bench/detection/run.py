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
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python bench/detection/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.detection.cases import Case, missing_requirements, select
from bench.detection.generate import RESULTS_FILE, threshold_label, write_suite

ROOT = str(Path(__file__).resolve().parents[2])
MEMORY_PROBES = ("rss",)


@dataclass
class Run:
    """One test's outcome in one repeat."""

    case: str
    repeat: int
    char: str  # F budget exceeded, . passed, s skipped, E other error, T timeout, ? no record
    failed_probes: list[str] = field(default_factory=list)
    iterations: int | None = None
    warmup: int | None = None
    stopped: str | None = None
    plugin_seconds: float | None = None
    call_seconds: float | None = None
    process_seconds: float | None = None
    failures: list[str] = field(default_factory=list)
    probes: dict[str, Any] = field(default_factory=dict)  # per probe, without samples
    samples: dict[str, Any] | None = None  # kept for wrong verdicts only
    error: str = ""
    plugin: str = ""  # fingerprint of the plugin's sources when this run started
    plugin_file: str = ""  # the pytest_membudget/__init__.py the pytest process imported


# ----------------------------------------------------------------------------- running pytest


_FROZEN: list[str] = []  # the directory holding a frozen copy of the plugin, if any


def plugin_location() -> Path | None:
    import importlib.util

    if _FROZEN:
        return Path(_FROZEN[0]) / "pytest_membudget"
    spec = importlib.util.find_spec("pytest_membudget")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def plugin_fingerprint() -> str:
    """A short hash of the plugin's sources, so runs made while the plugin was being edited
    can be told apart."""
    import hashlib

    location = plugin_location()
    if location is None:
        return "not-installed"
    digest = hashlib.sha1()
    for path in sorted(location.rglob("*.py")):
        digest.update(str(path.relative_to(location)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


def freeze_plugin(directory: Path) -> str:
    """Copy the installed plugin's sources under ``directory`` and put that copy first on the
    subprocesses' path, so every repeat measures the same code even while the working tree is
    being edited (the editable install's finder comes after PYTHONPATH)."""
    import shutil

    location = plugin_location()
    if location is None:
        raise SystemExit("pytest-membudget is not installed: pip install -e .")
    target = directory / "frozen"
    shutil.copytree(location, target / "pytest_membudget",
                    ignore=shutil.ignore_patterns("__pycache__"))
    _FROZEN.append(str(target))
    return plugin_fingerprint()


def _env() -> dict[str, str]:
    """The subprocesses' environment: the frozen copy of the plugin (if any) first on the
    path, ahead of the repository root, whose ``pytest_membudget/`` is the working tree."""
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([*_FROZEN, ROOT, *([path] if path else [])]))


def run_pytest(directory: Path, arguments: Sequence[str], timeout: float) -> tuple:
    """Run pytest in ``directory``; return (records, seconds, returncode, output tail)."""
    results = directory / RESULTS_FILE
    if results.exists():
        results.unlink()
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rN",
               *arguments]
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=directory, env=_env(), capture_output=True,
                              text=True, timeout=timeout, check=False)
        returncode, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        returncode = None
        output = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) \
            else (exc.stdout or "")
    seconds = time.perf_counter() - start
    records = []
    if results.exists():
        for line in results.read_text().splitlines():
            if line.strip():
                records.append(json.loads(line))
    return records, seconds, returncode, output[-4000:]


def _case_of(nodeid: str) -> str:
    name = nodeid.split("::")[-1]
    return name[len("test_"):] if name.startswith("test_") else name


def to_run(case: str, repeat: int, record: dict[str, Any] | None, timed_out: bool,
           process_seconds: float | None, output: str = "") -> Run:
    if record is None:
        return Run(case, repeat, "T" if timed_out else "?", process_seconds=process_seconds,
                   error=output[-1500:])
    data = record.get("membudget")
    run = Run(case, repeat, ".", call_seconds=record.get("duration"),
              process_seconds=process_seconds, plugin_file=record.get("plugin_file") or "")
    if record["outcome"] == "skipped":
        run.char = "s"
    if data:
        run.iterations = data.get("iterations")
        run.warmup = data.get("warmup")
        run.stopped = data.get("stopped")
        run.plugin_seconds = data.get("seconds")
        run.failures = list(data.get("failures") or [])
        for name, probe in (data.get("probes") or {}).items():
            run.probes[name] = {k: v for k, v in probe.items()
                                if k not in ("samples", "sample_iterations")}
            if probe.get("verdict") == "fail":
                run.failed_probes.append(name)
        run.samples = {name: {"samples": p.get("samples"),
                              "sample_iterations": p.get("sample_iterations")}
                       for name, p in (data.get("probes") or {}).items()}
    if record["outcome"] == "failed":
        budget_failure = bool(data) and (not data.get("passed", True))
        run.char = "F" if budget_failure else "E"
        if not budget_failure:
            run.error = record.get("longrepr", "")[-1500:]
    return run


def wrong(case: Case, run: Run) -> str | None:
    """Why this run's verdict is wrong, or None."""
    if run.char in ("s",):
        return None
    if run.char in ("E", "T", "?"):
        return {"E": "error", "T": "timeout", "?": "no result"}[run.char]
    if case.truth == "leak":
        if run.char != "F":
            return "missed leak"
        if case.probe and case.probe not in run.failed_probes:
            return f"caught by {run.failed_probes} instead of {case.probe}"
        return None
    if run.char == "F":
        return f"false alarm ({', '.join(run.failed_probes) or 'no probe named'})"
    return None


# ----------------------------------------------------------------------------- modes


def run_serial(directory: Path, cases: Sequence[Case], repeats: int, timeout: float,
               log: Any) -> dict[str, list[Run]]:
    runs: dict[str, list[Run]] = {case.name: [] for case in cases}
    for repeat in range(repeats):
        for case in cases:
            fingerprint = plugin_fingerprint()
            records, seconds, returncode, output = run_pytest(
                directory, [f"test_detection.py::test_{case.name}"], timeout)
            record = next((r for r in records if r["when"] == "call"), None) or \
                next(iter(records), None)
            run = to_run(case.name, repeat, record, returncode is None, seconds, output)
            run.plugin = fingerprint
            runs[case.name].append(run)
            print(f"  repeat {repeat + 1}/{repeats} {case.name:30s} {run.char} "
                  f"{'+'.join(run.failed_probes):12s} it={run.iterations} "
                  f"{seconds:6.1f}s", file=log, flush=True)
    return runs


def run_xdist(directory: Path, cases: Sequence[Case], repeats: int, workers: int,
              timeout: float, log: Any) -> dict[str, list[Run]]:
    runs: dict[str, list[Run]] = {case.name: [] for case in cases}
    nodeids = [f"test_detection.py::test_{case.name}" for case in cases]
    for repeat in range(repeats):
        fingerprint = plugin_fingerprint()
        records, seconds, returncode, output = run_pytest(
            directory, ["-n", str(workers), *nodeids], timeout * len(cases))
        by_case: dict[str, dict[str, Any]] = {}
        for record in records:
            name = _case_of(record["nodeid"])
            if record["when"] == "call" or name not in by_case:
                by_case[name] = record
        for case in cases:
            run = to_run(case.name, repeat, by_case.get(case.name), returncode is None, None,
                         output)
            run.plugin = fingerprint
            runs[case.name].append(run)
        print(f"  repeat {repeat + 1}/{repeats} (-n {workers}): {seconds:.1f}s "
              + "".join(runs[c.name][-1].char for c in cases), file=log, flush=True)
    return runs


def run_bare(cases: Sequence[Case], runs: dict[str, list[Run]], timeout: float,
             log: Any) -> dict[str, dict[str, Any]]:
    """A plain loop of the same number of calls (warm-up + measured) in a fresh process."""
    bare: dict[str, dict[str, Any]] = {}
    for case in cases:
        counts = [r.iterations + (r.warmup or 0) for r in runs[case.name]
                  if r.iterations is not None]
        if not counts or missing_requirements(case):
            continue
        calls = int(statistics.median(counts))
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "bench.detection.loop", "bare", case.name, str(calls)],
                cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout,
                check=False)
            bare[case.name] = json.loads(proc.stdout)
        except (subprocess.TimeoutExpired, json.JSONDecodeError):
            continue
        print(f"  bare loop {case.name:30s} {calls:6d} calls "
              f"{bare[case.name]['seconds']:7.3f}s", file=log, flush=True)
    return bare


def run_memray(directory: Path, cases: Sequence[Case], thresholds: Sequence[str],
               timeout: float, log: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for case in cases:
        nodeids = [f"test_memray.py::test_{case.name}__warm"] + [
            f"test_memray.py::test_{case.name}__{threshold_label(t)}" for t in thresholds]
        records, seconds, returncode, _output = run_pytest(directory, ["--memray", *nodeids],
                                                          timeout)
        verdicts = {}
        for threshold in thresholds:
            suffix = f"__{threshold_label(threshold)}"
            record = next((r for r in records if r["nodeid"].endswith(suffix)
                           and r["when"] == "call"), None)
            if record is None:
                record = next((r for r in records if r["nodeid"].endswith(suffix)), None)
            if record is None:
                verdicts[threshold] = {"char": "T" if returncode is None else "?"}
            else:
                char = {"passed": ".", "failed": "F", "skipped": "s"}[record["outcome"]]
                verdicts[threshold] = {"char": char, "seconds": record["duration"],
                                       "text": record.get("longrepr", "")[:600]}
        out[case.name] = {"process_seconds": seconds, "verdicts": verdicts}
        print(f"  memray {case.name:30s} "
              + " ".join(f"{t}:{v['char']}" for t, v in verdicts.items())
              + f" {seconds:6.1f}s", file=log, flush=True)
    return out


def memray_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("pytest_memray") is not None


# ----------------------------------------------------------------------------- summary


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _fmt(value: float | None, spec: str) -> str:
    return format(value, spec) if value is not None else "-"


def _rate(case: Case) -> str:
    if case.rate is None:
        return "-"
    if case.probe in ("threads", "fds"):
        return f"{case.rate:g}/it"
    rate = case.rate
    for unit in ("B", "KiB", "MiB"):
        if rate < 1024 or unit == "MiB":
            return f"{rate:g} {unit}/it"
        rate /= 1024
    return "-"


def reliably_caught(case: Case, runs: Sequence[Run]) -> bool:
    judged = [r for r in runs if r.char != "s"]
    return bool(judged) and all(wrong(case, r) is None for r in judged)


def summarise(cases: Sequence[Case], runs: dict[str, list[Run]],
              bare: dict[str, dict[str, Any]]) -> dict[str, Any]:
    table = []
    counts = {"leak_runs": 0, "leak_caught": 0, "clean_runs": 0, "clean_flagged": 0,
              "wrong_probe": 0, "errors": 0, "flips": 0}
    for case in cases:
        case_runs = runs[case.name]
        judged = [r for r in case_runs if r.char != "s"]
        chars = "".join(r.char for r in case_runs)
        if len(set(r.char for r in judged)) > 1:
            counts["flips"] += 1
        for run in judged:
            if run.char in ("E", "T", "?"):
                counts["errors"] += 1
            elif case.truth == "leak":
                counts["leak_runs"] += 1
                counts["leak_caught"] += run.char == "F"
                counts["wrong_probe"] += run.char == "F" and bool(case.probe) and \
                    case.probe not in run.failed_probes
            else:
                counts["clean_runs"] += 1
                counts["clean_flagged"] += run.char == "F"
        call = _median([r.call_seconds for r in case_runs])
        calls = _median([(r.iterations or 0) + (r.warmup or 0) for r in case_runs
                         if r.iterations is not None])
        measured = _median([r.plugin_seconds for r in case_runs])
        bare_seconds = bare.get(case.name, {}).get("seconds")
        # The membudget run (result.seconds: warm-up, iterations, sampling, fits) against the
        # bare loop; the call time also holds the case's setup (e.g. importing torch).
        ratio = measured / bare_seconds if measured is not None and bare_seconds else None
        probes = sorted({p for r in case_runs for p in r.failed_probes})
        table.append({
            "case": case.name, "truth": case.truth, "expected_probe": case.probe,
            "rate": _rate(case), "verdicts": chars, "failed_probes": probes,
            "calls_median": calls, "stopped": sorted({r.stopped for r in case_runs
                                                      if r.stopped}),
            "call_seconds_median": call, "run_seconds_median": measured,
            "bare_seconds": bare_seconds, "ratio": ratio,
            "ok": all(wrong(case, r) is None for r in case_runs),
        })
    timed = [r for r in table if r["ratio"] is not None]
    # The target: the whole run's time against the bare loops', not a typical case's.
    counts["run_seconds_total"] = sum(r["run_seconds_median"] for r in timed)
    counts["bare_seconds_total"] = sum(r["bare_seconds"] for r in timed)
    counts["total_ratio"] = (counts["run_seconds_total"] / counts["bare_seconds_total"]
                             if timed else None)
    ratios = [r["ratio"] for r in timed]
    counts["ratio_median"] = _median(ratios)
    counts["ratio_min"] = min(ratios, default=None)
    counts["ratio_max"] = max(ratios, default=None)
    leak_runs, clean_runs = counts["leak_runs"], counts["clean_runs"]
    counts["detection_rate"] = counts["leak_caught"] / leak_runs if leak_runs else None
    counts["false_alarm_rate"] = counts["clean_flagged"] / clean_runs if clean_runs else None
    return {"table": table, "counts": counts, "ladders": ladders(cases, runs)}


def ladders(cases: Sequence[Case], runs: dict[str, list[Run]]) -> dict[str, Any]:
    """Per ladder (python/native rss) and per probe: the smallest rate caught reliably."""
    out: dict[str, Any] = {}
    families: dict[str, list[Case]] = {}
    for case in cases:
        if case.truth == "leak" and case.rate is not None:
            if case.ladder:
                families.setdefault(f"rss ladder ({case.ladder})", []).append(case)
            families.setdefault(f"probe {case.probe} (all rated cases)", []).append(case)
    for family, members in families.items():
        members = sorted(members, key=lambda c: c.rate or 0.0)
        rungs = [{"case": c.name, "rate": c.rate, "reliable": reliably_caught(c, runs[c.name]),
                  "verdicts": "".join(r.char for r in runs[c.name])} for c in members]
        # The smallest rate from which every case at that rate or above is caught every time.
        smallest = None
        for rate in sorted({r["rate"] for r in rungs}, reverse=True):
            if not all(r["reliable"] for r in rungs if r["rate"] == rate):
                break
            smallest = rate
        out[family] = {"rungs": rungs, "smallest_reliable_rate": smallest}
    return out


def print_report(cases: Sequence[Case], runs: dict[str, list[Run]], summary: dict[str, Any],
                 memray: dict[str, Any] | None, thresholds: Sequence[str],
                 mode: str, total_seconds: float) -> None:
    by_name = {c.name: c for c in cases}
    print(f"\npytest-membudget detection benchmark ({mode})")
    header = (f"{'case':30s} {'truth':5s} {'probe':7s} {'rate':>12s} {'verdicts':8s} "
              f"{'failed probes':14s} {'calls':>6s} {'call s':>7s} {'run s':>7s} {'bare s':>7s} "
              f"{'ratio':>6s}")
    if memray:
        header += "  memray " + " ".join(thresholds)
    print(header)
    for row in summary["table"]:
        line = (f"{row['case']:30s} {row['truth']:5s} {row['expected_probe'] or '-':7s} "
                f"{row['rate']:>12s} {row['verdicts']:8s} "
                f"{','.join(row['failed_probes']) or '-':14s} "
                f"{_fmt(row['calls_median'], '6.0f'):>6s} "
                f"{_fmt(row['call_seconds_median'], '7.2f'):>7s} "
                f"{_fmt(row.get('run_seconds_median'), '7.2f'):>7s} "
                f"{_fmt(row['bare_seconds'], '7.3f'):>7s} {_fmt(row['ratio'], '6.1f'):>6s}")
        if memray and row["case"] in memray:
            line += "  " + " ".join(memray[row["case"]]["verdicts"].get(t, {}).get("char", "-")
                                    .center(len(t)) for t in thresholds)
        if not row["ok"]:
            line += "   <-- wrong"
        print(line)
    counts = summary["counts"]
    print(f"\nleak runs caught:   {counts['leak_caught']}/{counts['leak_runs']} "
          f"(detection rate {_fmt(counts['detection_rate'], '.1%')})")
    print(f"clean runs flagged: {counts['clean_flagged']}/{counts['clean_runs']} "
          f"(false-alarm rate {_fmt(counts['false_alarm_rate'], '.1%')})")
    print(f"leaks caught by another probe than expected: {counts['wrong_probe']}")
    print(f"cases whose verdict flips between repeats:  {counts['flips']}")
    print(f"errors/timeouts: {counts['errors']}")
    if counts["total_ratio"] is not None:
        print(f"membudget run time / bare loop: {counts['total_ratio']:.2f}x summed "
              f"({counts['run_seconds_total']:.1f} s / {counts['bare_seconds_total']:.1f} s), "
              f"per case median {counts['ratio_median']:.1f}x, "
              f"min {counts['ratio_min']:.1f}x, max {counts['ratio_max']:.1f}x")
    print(f"benchmark wall time: {total_seconds:.0f} s")
    fingerprints = sorted({r.plugin for case_runs in runs.values() for r in case_runs})
    print(f"plugin source fingerprint(s): {', '.join(fingerprints)}"
          + ("   WARNING: the plugin changed during the run" if len(fingerprints) > 1 else ""))
    location = plugin_location()
    elsewhere = sorted({r.plugin_file for case_runs in runs.values() for r in case_runs
                        if r.plugin_file and location is not None
                        and Path(r.plugin_file).parent != location})
    if elsewhere:
        print(f"WARNING: runs imported the plugin from {', '.join(elsewhere)}, "
              f"not from the fingerprinted {location}")
    print("\nsmallest leak rate from which every case at or above it is caught in every repeat:")
    for family, ladder in summary["ladders"].items():
        rungs = " ".join(f"{r['rate']:g}:{r['verdicts']}" for r in ladder["rungs"])
        print(f"  {family:32s} {_fmt(ladder['smallest_reliable_rate'], 'g'):>8s}   [{rungs}]")
    if memray:
        print("\npytest-memray limit_leaks (fixed loop):")
        for threshold in thresholds:
            caught = flagged = leaks = cleans = 0
            for name, entry in memray.items():
                char = entry["verdicts"].get(threshold, {}).get("char")
                if char not in ("F", "."):
                    continue
                if by_name[name].truth == "leak":
                    leaks += 1
                    caught += char == "F"
                else:
                    cleans += 1
                    flagged += char == "F"
            print(f"  {threshold:>6s}: leaks caught {caught}/{leaks}, "
                  f"clean flagged {flagged}/{cleans}")
    print_wrong(cases, runs)


def _series(samples: dict[str, Any] | None, probe: str, points: int = 10) -> str:
    if not samples or probe not in samples or not samples[probe].get("samples"):
        return ""
    values = samples[probe]["samples"]
    at = samples[probe]["sample_iterations"]
    step = max(1, len(values) // points)
    picked = [*list(range(0, len(values), step))[:points], len(values) - 1]
    base = values[0]
    scale = 1024.0 if probe in ("rss", "uss", "heap") else 1.0
    unit = "KiB" if scale > 1 else ""
    return " ".join(f"{at[i]}:{(values[i] - base) / scale:+.0f}" for i in sorted(set(picked))) \
        + (f" ({unit} from first sample)" if unit else "")


def print_wrong(cases: Sequence[Case], runs: dict[str, list[Run]]) -> None:
    lines = []
    for case in cases:
        for run in runs[case.name]:
            why = wrong(case, run)
            if why is None:
                continue
            lines.append(f"* {case.name} repeat {run.repeat + 1}: {why}; truth {case.truth}"
                         f" ({case.note}); stopped={run.stopped} iterations={run.iterations}"
                         f" warmup={run.warmup}")
            for name, probe in run.probes.items():
                if name in ("rss", "threads", "fds") or probe.get("verdict") == "fail":
                    lines.append(f"    {name:8s} {probe.get('verdict'):12s} "
                                 f"slope={_fmt(probe.get('slope'), '.4g')} "
                                 f"ci={probe.get('ci')} growth={_fmt(probe.get('growth'), '.4g')}"
                                 f" peak={_fmt(probe.get('peak'), '.4g')}")
            for failure in run.failures:
                lines.append(f"    failure: {failure[:300]}")
            series = _series(run.samples, case.probe or "rss")
            if series:
                lines.append(f"    {case.probe or 'rss'} samples: {series}")
            if run.error:
                lines.append("    " + run.error.strip().splitlines()[-1][:300])
    if lines:
        print("\nwrong verdicts:")
        print("\n".join(lines))


def load_previous(path: Path) -> dict[str, Any]:
    """A --json file of an earlier run; ValueError with the reason when it is not one."""
    try:
        previous = json.loads(path.read_text())
        previous["summary"]["table"][0]["verdicts"]  # the shape compare() reads
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror}") from error
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise ValueError(f"{path} is not a --json file of this benchmark ({error!r})") from error
    return previous


def compare(previous: dict[str, Any], runs: dict[str, list[Run]]) -> list[str]:
    before = {row["case"]: row["verdicts"] for row in previous["summary"]["table"]}
    differences = []
    for name, case_runs in runs.items():
        now = "".join(r.char for r in case_runs)
        if name in before and (set(before[name]) != set(now)):
            differences.append(f"{name}: {before[name]} ({previous.get('mode')}) vs {now}")
    return differences


# ----------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.detection",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5,
                        help="runs of each case (default 5); verdict flips are counted over them")
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
    cases = select(args.cases)
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
                memray_iterations=args.memray_iterations, evidence=not args.no_evidence)
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
