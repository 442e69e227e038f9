"""Running the detection corpus: a frozen copy of the plugin, one pytest process per case (or
one ``pytest -n N`` per repeat), the bare loops, and pytest-memray's ``limit_leaks`` on the
same workloads. Each test's outcome becomes a :class:`Run`."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.detection.cases import Case, missing_requirements
from bench.detection.generate import RESULTS_FILE, threshold_label

ROOT = str(Path(__file__).resolve().parents[2])


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
    #: The failed budgets: structured outcomes (schema 2 results), or text (schema 1).
    failures: list[Any] = field(default_factory=list)
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
