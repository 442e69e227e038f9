"""Comparing a run with an earlier ``--json`` file of the benchmark: which cases' verdicts
differ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.detection.running import Run


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
