"""Reporting on detection runs: which verdicts are wrong, the per-case summary, the smallest
rate caught reliably, and the printed report."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.detection.cases import Case
from bench.detection.running import Run, plugin_location


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


def failure_text(failure: Any) -> str:
    """A failed budget as the report lists it: a line of text (results of schema 1) or a
    structured outcome (schema 2)."""
    if not isinstance(failure, dict):
        return str(failure)
    from pytest_membudget.render.units import fmt

    probe, kind = str(failure.get("probe")), str(failure.get("kind"))
    per_iter = kind == "slope"
    name = probe if per_iter else f"{probe}_{kind}"
    return (f"{name}: {fmt(probe, failure.get('measured'), per_iter=per_iter)} against "
            f"{fmt(probe, failure.get('limit'), per_iter=per_iter)}")


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
                lines.append(f"    failure: {failure_text(failure)[:300]}")
            series = _series(run.samples, case.probe or "rss")
            if series:
                lines.append(f"    {case.probe or 'rss'} samples: {series}")
            if run.error:
                lines.append("    " + run.error.strip().splitlines()[-1][:300])
    if lines:
        print("\nwrong verdicts:")
        print("\n".join(lines))
