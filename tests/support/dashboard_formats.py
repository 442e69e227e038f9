"""Checks that an exported file is what each dashboard takes, written from the formats'
published descriptions (docs/dashboards.md cites them too):

- Bencher Metric Format: the JSON Schema Bencher publishes at https://bencher.dev/bmf.json
  (draft-07: an object of benchmarks, each an object of measures, each an object with a
  required number ``value`` and optional numbers ``lower_value`` and ``upper_value``), and its
  reference page https://bencher.dev/docs/reference/bencher-metric-format/ (a benchmark name
  is at most 1024 characters, a measure name or slug at most 64).
- github-action-benchmark: its README's section on ``customBiggerIsBetter`` and
  ``customSmallerIsBetter`` (https://github.com/benchmark-action/github-action-benchmark):
  a JSON array whose entries have ``name``, ``unit`` and ``value``, and may have ``range``
  (the results' variance, a string) and ``extra`` (a string shown with the point).

Each function returns the problems found: an empty list means the data conforms. Where the
checks are stricter than the published text (no keys beyond the documented ones, bounds that
bracket the value, names unique), the message says so.
"""

from __future__ import annotations

import json
import math
from typing import Any

BENCHMARK_NAME_LIMIT = 1024
MEASURE_NAME_LIMIT = 64
METRIC_KEYS = ("value", "lower_value", "upper_value")
ENTRY_KEYS = ("name", "unit", "value", "range", "extra")


def is_json_number(value: Any) -> bool:
    """JSON Schema's "number": an integer or a float (not a boolean); JSON has no NaN."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def strict_json(data: Any) -> list[str]:
    try:
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return [f"not strict JSON: {exc}"]
    return []


def bmf_problems(data: Any) -> list[str]:
    """Problems of ``data`` as Bencher Metric Format JSON."""
    if not isinstance(data, dict):
        return [f"the top level is {type(data).__name__}, not an object"]
    problems = strict_json(data)
    for name, measures in data.items():
        where = f"benchmark {name!r:.60}"
        if not isinstance(name, str) or not name:
            problems.append(f"{where}: the name must be a non-empty string (pattern '.+')")
        elif len(name) > BENCHMARK_NAME_LIMIT:
            problems.append(f"{where}: {len(name)} characters, over {BENCHMARK_NAME_LIMIT}")
        if not isinstance(measures, dict):
            problems.append(f"{where}: not an object of measures")
            continue
        for measure, metric in measures.items():
            problems += _metric_problems(f"{where}, measure {measure!r}", measure, metric)
    return problems


def _metric_problems(where: str, measure: Any, metric: Any) -> list[str]:
    problems = []
    if not isinstance(measure, str) or not measure:
        problems.append(f"{where}: the measure must be a non-empty string")
    elif len(measure) > MEASURE_NAME_LIMIT:
        problems.append(f"{where}: {len(measure)} characters, over {MEASURE_NAME_LIMIT}")
    if not isinstance(metric, dict):
        return [*problems, f"{where}: not an object"]
    if "value" not in metric:
        problems.append(f"{where}: 'value' is required")
    for key, value in metric.items():
        if key not in METRIC_KEYS:
            problems.append(f"{where}: {key!r} is not one of {METRIC_KEYS} (stricter than "
                            "the schema)")
        elif not is_json_number(value):
            problems.append(f"{where}: {key} must be a number, got {value!r}")
    numbers = {k: v for k, v in metric.items() if k in METRIC_KEYS and is_json_number(v)}
    low = numbers.get("lower_value", -math.inf)
    high = numbers.get("upper_value", math.inf)
    if "value" in numbers and not low <= numbers["value"] <= high:
        problems.append(f"{where}: the bounds do not bracket the value (stricter than the "
                        "schema)")
    return problems


def custom_benchmark_problems(data: Any) -> list[str]:
    """Problems of ``data`` as github-action-benchmark ``customSmallerIsBetter`` JSON."""
    if not isinstance(data, list):
        return [f"the top level is {type(data).__name__}, not an array of entries"]
    problems = strict_json(data)
    if not data:
        problems.append("no entry: the action would have no result to chart")
    names: set[str] = set()
    for index, entry in enumerate(data):
        where = f"entry {index}"
        if not isinstance(entry, dict):
            problems.append(f"{where}: not an object")
            continue
        for key in ("name", "unit", "value"):
            if key not in entry:
                problems.append(f"{where}: {key!r} is required")
        for key, value in entry.items():
            if key not in ENTRY_KEYS:
                problems.append(f"{where}: {key!r} is not one of {ENTRY_KEYS} (stricter than "
                                "the README)")
            elif key == "value" and not is_json_number(value):
                problems.append(f"{where}: value must be a number, got {value!r}")
            elif key != "value" and not isinstance(value, str):
                problems.append(f"{where}: {key} must be a string, got {value!r}")
        name = entry.get("name")
        if isinstance(name, str):
            if not name:
                problems.append(f"{where}: the name is empty")
            if name in names:
                problems.append(f"{where}: the name {name!r} repeats; the action follows a "
                                "benchmark from run to run by its name (stricter than the "
                                "README)")
            names.add(name)
    return problems
