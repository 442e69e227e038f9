"""The JSON document shared by ``--membudget-json`` reports and saved baselines.

One format for both, so that ``membudget compare`` takes either. Pure: stdlib only; torch is
consulted only when the tests have already imported it.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from importlib import metadata
from typing import TYPE_CHECKING, Any, TypedDict

from pytest_membudget.judge.numbers import finite_or_none
from pytest_membudget.measure.results import SCHEMA_VERSION

if TYPE_CHECKING:
    from pytest_membudget.measure.records import ProbeRecord, ResultRecord
    from pytest_membudget.sweep.table import SweepDocument

#: Marks a file as ours; a JSON file without it is foreign.
FORMAT = "pytest-membudget"
#: Version of the document layout (the tests' entries are results' dicts of the same
#: version). Readers refuse a newer one instead of misreading it. Schema 2: failures are
#: structured budget outcomes, each probe lists its outcomes, each test has window_start.
SCHEMA = SCHEMA_VERSION
#: Distributions whose versions are recorded (read from metadata: nothing is imported).
VERSIONED = ("pytest", "pytest-membudget", "psutil", "numpy", "torch", "pytest-xdist")


class Machine(TypedDict):
    """The machine a report was made on, and the fingerprint of the machines whose
    baselines compare with it."""

    system: str
    machine: str
    python_implementation: str
    python_version: str
    cpu_count: int | None
    cuda_device: str | None
    fingerprint: str


class ShardEntry(TypedDict):
    """A shard a merged report was made of: its file, when it was made, its exit status and
    how many tests it held."""

    file: str
    created: str | None
    exitstatus: int | None
    tests: int


class _Document(TypedDict):
    format: str
    schema: int
    name: str | None
    created: str
    exitstatus: int | None
    samples: bool
    machine: Machine
    #: Each distribution's version (VERSIONED, and Python's), None where not installed.
    versions: dict[str, str | None]
    #: Each budgeted test's result by node id, with its outcome.
    tests: dict[str, ResultRecord]


class Document(_Document, total=False):
    """A JSON report or saved baseline (the same layout); a merged report lists its
    ``shards``; a run with the sweep on has its ``sweep`` section."""

    shards: list[ShardEntry]
    sweep: SweepDocument


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def cuda_device() -> str | None:
    """The CUDA device's name, only when this process has used CUDA: naming it in a process
    that has not (the pytest-xdist controller, say) would create a CUDA context there."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if not torch.cuda.is_initialized():
            return None
        index = torch.cuda.current_device()
        return f"cuda:{index} {torch.cuda.get_device_name(index)}"
    except Exception:  # a broken CUDA setup must not break the report
        return None


def machine() -> Machine:
    facts: Machine = {
        "system": platform.system(),
        "machine": platform.machine(),
        "python_implementation": platform.python_implementation(),
        "python_version": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cuda_device": cuda_device(),
        "fingerprint": "",  # of the facts above
    }
    facts["fingerprint"] = fingerprint(facts)
    return facts


def fingerprint(facts: Mapping[str, object]) -> str:
    """Which machines' baselines are comparable: OS, architecture, Python implementation and
    minor version, CPU count, e.g. ``Linux-x86_64-CPython-3.11-8cpu``. The host name is left
    out so that CI runners of one kind share baselines."""
    major_minor = ".".join(str(facts.get("python_version", "?")).split(".")[:2])
    parts = (facts.get("system"), facts.get("machine"), facts.get("python_implementation"),
             major_minor, f"{facts.get('cpu_count')}cpu")
    return "-".join(re.sub(r"[^A-Za-z0-9._]+", "_", str(p or "unknown")) for p in parts)


def json_safe(value: Any) -> Any:
    """NaN and infinities become None (JSON has no such numbers); containers are copied."""
    if isinstance(value, float):
        return finite_or_none(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def entry_for(data: ResultRecord, outcome: str | None) -> ResultRecord:
    entry: ResultRecord = json_safe(data)
    entry["outcome"] = outcome
    return entry


def build_document(
    results: Iterable[tuple[str, ResultRecord]],
    outcomes: Mapping[str, str],
    *,
    samples: bool,
    name: str | None = None,
    exitstatus: int | None = None,
    machine_facts: Machine | None = None,
) -> Document:
    """The whole run: every budgeted test's results (the last report wins for a rerun test)."""
    tests = {nodeid: entry_for(data, outcomes.get(nodeid)) for nodeid, data in results}
    document: Document = {
        "format": FORMAT,
        "schema": SCHEMA,
        "name": name,
        "created": datetime.now(timezone.utc).isoformat(timespec="microseconds"),
        "exitstatus": exitstatus,
        "samples": True,
        "machine": {**machine_facts} if machine_facts is not None else machine(),
        "versions": versions(),
        "tests": tests,
    }
    return document if samples else without_samples(document)


def upgrade(document: Document) -> Document:
    """A document of an older schema in today's layout, where the old one holds the facts:
    schema 1 had no ``window_start``; it was the later of the two samples taken at the end of
    the warm-up."""
    if document.get("schema") == 1:
        for test in document.get("tests", {}).values():
            if "window_start" in test:
                continue
            warmup = test.get("warmup", 0)
            probes = test.get("probes", {}).values()
            iterations: list[int] = next(
                (p["sample_iterations"] for p in probes if p.get("sample_iterations")), [])
            test["window_start"] = max((i for i, at in enumerate(iterations) if at == warmup),
                                       default=0)
    return document


def has_samples(document: Document) -> bool:
    return any("samples" in probe for test in document.get("tests", {}).values()
               for probe in test.get("probes", {}).values())


def without_samples(document: Document) -> Document:
    """A copy of ``document`` with the probes' samples left out (a tenth of the size)."""
    tests: dict[str, ResultRecord] = {
        nodeid: {**test, "probes": {name: _without_samples(probe)
                                    for name, probe in test.get("probes", {}).items()}}
        for nodeid, test in document.get("tests", {}).items()}
    return {**document, "samples": False, "tests": tests}


def _without_samples(probe: ProbeRecord) -> ProbeRecord:
    kept = probe.copy()
    kept.pop("samples", None)
    kept.pop("sample_iterations", None)
    return kept
