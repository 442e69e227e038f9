"""One report from the reports of a run's shards (CI jobs that each ran part of a suite).

The shards must come from one kind of machine and one version of the plugin, or their
figures are not one run's; each test must appear in one shard only. What cannot be merged
raises :class:`MergeError`, whose message names the files and what to do. Pure: stdlib only.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pytest_membudget.artifacts.document import FORMAT, SCHEMA, Document, ShardEntry
from pytest_membudget.measure.records import ResultRecord

if TYPE_CHECKING:
    from pytest_membudget.sweep.table import SweepDocument

PLUGIN = "pytest-membudget"
#: pytest's "no tests were collected": a shard that ran nothing does not make the run fail.
NO_TESTS = 5


class MergeError(Exception):
    """Shard reports that cannot be merged into one."""


def shard_paths(patterns: Sequence[str]) -> tuple[list[Path], list[str]]:
    """The files named, each glob pattern among them expanded (sorted), each file once; and
    notes on what was left out."""
    paths: list[Path] = []
    notes: list[str] = []
    for pattern in patterns:
        found = [pattern]
        if not Path(pattern).is_file() and glob.has_magic(pattern):
            found = sorted(p for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
            if not found:
                raise MergeError(f"no file matches {pattern!r}; check the pattern and where "
                                 "the shards' reports were put")
        for name in found:
            path = Path(name)
            if any(path.resolve() == seen.resolve() for seen in paths):
                notes.append(f"{name} is named twice; merged once")
                continue
            paths.append(path)
    return paths, notes


def merge(shards: Sequence[tuple[str, Document]]) -> Document:
    """The report of the whole run from ``(file name, document)`` of each shard, in order."""
    if not shards:
        raise MergeError("no report to merge; pass the shards' --membudget-json files")
    _check_same(shards, "machine fingerprint",
                lambda d: (d.get("machine") or {}).get("fingerprint"),
                "run every shard on one kind of runner (the same OS, architecture, Python "
                "and CPU count)")
    _check_same(shards, f"{PLUGIN} version", lambda d: (d.get("versions") or {}).get(PLUGIN),
                f"install one version of {PLUGIN} in every shard's job")
    _check_same(shards, "schema", lambda d: d.get("schema"),
                f"install one version of {PLUGIN} in every shard's job")
    tests: dict[str, ResultRecord] = {}
    seen: dict[str, str] = {}
    twice: list[str] = []
    for name, document in shards:
        for nodeid, test in document.get("tests", {}).items():
            if nodeid in seen:
                twice.append(f"{nodeid} (in {seen[nodeid]} and {name})")
                continue
            seen[nodeid] = name
            tests[nodeid] = test
    if twice:
        raise MergeError(
            f"{len(twice)} test(s) appear in more than one shard: " + "; ".join(twice[:5])
            + (" ..." if len(twice) > 5 else "") + "; the shards of one run hold each test "
            "once: check how the jobs split the suite, and merge one run's reports only")
    first = shards[0][1]
    merged: Document = {
        "format": FORMAT,
        "schema": first.get("schema", SCHEMA),
        "name": None,
        "created": datetime.now(timezone.utc).isoformat(timespec="microseconds"),
        "exitstatus": exit_status([d.get("exitstatus") for _, d in shards]),
        "samples": all(bool(d.get("samples")) for _, d in shards),
        "machine": {**(first.get("machine") or {}), "cuda_device": _cuda(shards)},
        "versions": dict(first.get("versions") or {}),
        "tests": tests,
        "shards": [entry for name, d in shards for entry in shard_entries(name, d)],
    }
    sweeps = [(name, d["sweep"]) for name, d in shards if isinstance(d.get("sweep"), Mapping)]
    if sweeps:
        merged["sweep"] = merge_sweeps(sweeps)
    return merged


def _check_same(shards: Sequence[tuple[str, Document]], what: str,
                read: Callable[[Document], object], remedy: str) -> None:
    values: dict[str, list[str]] = {}
    for name, document in shards:
        values.setdefault(str(read(document)), []).append(name)
    if len(values) > 1:
        listed = "; ".join(f"{value} in {', '.join(names[:3])}"
                           + (" ..." if len(names) > 3 else "") for value, names in values.items())
        raise MergeError(f"the reports come from different runs: their {what} differs "
                         f"({listed}); {remedy}")


def _cuda(shards: Sequence[tuple[str, Document]]) -> str | None:
    """The CUDA device of the shards that used one; two different devices are refused."""
    devices = {str(d.get("machine", {}).get("cuda_device")): name for name, d in shards
               if (d.get("machine") or {}).get("cuda_device")}
    if len(devices) > 1:
        listed = "; ".join(f"{device} in {name}" for device, name in devices.items())
        raise MergeError(f"the reports come from different machines: their CUDA device "
                         f"differs ({listed}); run every shard on one kind of GPU runner")
    return next(iter(devices), None)


def exit_status(statuses: Sequence[object]) -> int | None:
    """The run's status: the highest of the shards', where a shard that collected no tests
    counts only when every shard did."""
    known = [s for s in statuses if isinstance(s, int) and not isinstance(s, bool)]
    ran = [s for s in known if s != NO_TESTS]
    return max(ran) if ran else (max(known) if known else None)


def shard_entries(name: str, document: Document) -> list[ShardEntry]:
    """What the merged report keeps of each shard: where it came from and when (a merged
    report's own shards, where one is merged again)."""
    kept = document.get("shards")
    if isinstance(kept, list) and kept:
        return [{**entry} for entry in kept if isinstance(entry, Mapping)]
    return [{"file": name, "created": document.get("created"),
             "exitstatus": document.get("exitstatus"), "tests": len(document.get("tests", {}))}]


def merge_sweeps(sweeps: Sequence[tuple[str, SweepDocument]]) -> SweepDocument:
    """The shards' sweep sections as one: counts and seconds added, lists joined."""
    modes = {str(s.get("mode")) for _, s in sweeps}
    if len(modes) > 1:
        raise MergeError(f"the shards ran the sweep in different modes ({', '.join(sorted(modes))}"
                         "); give every shard the same --membudget-sweep")
    merged: dict[str, object] = {"mode": modes.pop()}
    for _, sweep in sweeps:
        for key, value in sweep.items():
            if key != "mode":
                merged[key] = _combine(merged.get(key), value)
    return cast("SweepDocument", merged)  # the sections' keys, each combined


def _combine(into: Any, value: Any) -> Any:
    """Numbers add, lists join, mappings combine key by key."""
    if into is None:
        return _combine({}, value) if isinstance(value, Mapping) else \
            list(value) if isinstance(value, list) else value
    if isinstance(into, dict) and isinstance(value, Mapping):
        for key, item in value.items():
            into[key] = _combine(into.get(key), item)
        return into
    if isinstance(into, list) and isinstance(value, list):
        return into + value
    if isinstance(into, (int, float)) and isinstance(value, (int, float)):
        total = into + value
        return round(total, 3) if isinstance(total, float) else total
    return into
