"""Render a markdown results table from ``--json`` files of the detection benchmark.

    python -m bench.detection.table SERIAL.json [--xdist N2.json] [--memray MEMRAY.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

from bench.detection.cases import CASES
from bench.detection.reporting import _fmt, summarise
from bench.detection.running import Run


def render(serial: dict[str, Any], xdist: dict[str, Any] | None,
           memray: dict[str, Any] | None) -> str:
    xrows = {r["case"]: r for r in xdist["summary"]["table"]} if xdist else {}
    thresholds = memray.get("memray_thresholds") or [] if memray else []
    mdata = memray.get("memray") or {} if memray else {}
    head = ("| case | truth | probe | rate | verdicts | failed probes | calls | call s | run s "
            "| bare s | run/bare |")
    rule = "|---|---|---|---|---|---|---|---|---|---|---|"
    if xdist:
        head += " -n 2 |"
        rule += "---|"
    for threshold in thresholds:
        head += f" memray {threshold} |"
        rule += "---|"
    lines = [head, rule]
    summary = resummarise(serial)
    for row in summary["table"]:
        verdicts = row["verdicts"].replace(".", "·")
        cells = [row["case"], row["truth"], row["expected_probe"] or "-", row["rate"],
                 f"`{verdicts}`" + ("" if row["ok"] else " ✗"),
                 ",".join(row["failed_probes"]) or "-", _fmt(row["calls_median"], ".0f"),
                 _fmt(row["call_seconds_median"], ".2f"),
                 _fmt(row.get("run_seconds_median"), ".2f"), _fmt(row["bare_seconds"], ".3f"),
                 _fmt(row["ratio"], ".1f")]
        if xdist:
            other = xrows.get(row["case"], {}).get("verdicts", "-").replace(".", "·")
            cells.append(f"`{other}`")
        for threshold in thresholds:
            char = mdata.get(row["case"], {}).get("verdicts", {}).get(threshold, {}).get("char")
            cells.append({"F": "F", ".": "·"}.get(char or "", char or "-"))
        lines.append("| " + " | ".join(cells) + " |")
    counts = summary["counts"]
    lines += [
        "",
        f"- leak runs caught: {counts['leak_caught']}/{counts['leak_runs']} "
        f"(detection rate {_fmt(counts['detection_rate'], '.1%')})",
        f"- clean runs flagged: {counts['clean_flagged']}/{counts['clean_runs']} "
        f"(false-alarm rate {_fmt(counts['false_alarm_rate'], '.1%')})",
        f"- cases whose verdict flips between repeats: {counts['flips']}; "
        f"errors/timeouts: {counts['errors']}",
        f"- membudget run time (result.seconds) / bare loop of the same calls: "
        f"{_fmt(counts.get('total_ratio'), '.2f')}x summed, per case median "
        f"{_fmt(counts.get('ratio_median'), '.1f')}x",
        f"- wall time of the run ({serial['mode']}): {serial['total_seconds']:.0f} s",
    ]
    if xdist:
        lines.append(f"- `-n 2` ({xdist['mode']}): {xdist['total_seconds']:.0f} s; "
                     f"cases whose verdict set differs from the serial run: "
                     f"{len(xdist.get('differences') or [])}")
    lines += ["", "Smallest leak rate from which every case at or above it is caught in every "
              "repeat:", ""]
    for family, ladder in summary["ladders"].items():
        rungs = ", ".join(f"{r['rate']:g}: `{r['verdicts']}`" for r in ladder["rungs"])
        lines.append(f"- {family}: **{_fmt(ladder['smallest_reliable_rate'], 'g')}** ({rungs})")
    return "\n".join(lines)


def _runs(payload: dict[str, Any]) -> tuple[list[Any], dict[str, list[Any]]]:
    names = {f.name for f in fields(Run)}
    runs = {name: [Run(**{k: v for k, v in r.items() if k in names}) for r in case_runs]
            for name, case_runs in payload["runs"].items()}
    return [CASES[name] for name in runs if name in CASES], runs


def resummarise(payload: dict[str, Any]) -> dict[str, Any]:
    """The summary from the stored runs, with the current definitions in run.py."""
    cases, runs = _runs(payload)
    return summarise(cases, runs, payload.get("bare") or {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("serial")
    parser.add_argument("--xdist")
    parser.add_argument("--memray")
    args = parser.parse_args(argv)

    def load(path: str | None) -> dict[str, Any] | None:
        return json.loads(Path(path).read_text()) if path else None

    print(render(load(args.serial), load(args.xdist), load(args.memray)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
