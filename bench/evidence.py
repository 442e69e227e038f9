"""What the evidence costs a failing test, and what it names: the detection corpus's leaks,
each run with evidence on and off.

    python bench/evidence.py [--repeats 3] [--cases PATTERNS] [--plugin-from DIR]
                             [--json PATH] [--compare PATH]

Each leak case becomes two tests with the same fixed window (``iterations=2000``, long
enough for the slowest leaks of the corpus to fail, and alike in both tests):
``membudget(rss=0, threads=0, fds=0, iterations=2000)`` with evidence on, and the same with
``evidence=False``. Each runs in its own pytest process, ``--repeats`` times. Two figures of
the evidence's cost: the time the plugin reports for its evidence (``evidence["seconds"]``:
the reruns, collections, snapshots and object counts; median over the repeats), and the
difference of the two tests' ``result.seconds`` (medians), which any plugin version gives
(older ones report only their rerun's loop) but which the window's own noise blurs.
The evidence is summarised by its top allocation site (file:line, and the user's line it was
called from), its top growing type, the retaining path of the first type that got one (its
root and first step) or why none, the top native stack where there is one, and the threads
and descriptors it lists.

``--plugin-from DIR`` measures the copy of ``pytest_membudget/`` in DIR (an older commit, say)
instead of a frozen copy of the installed one; ``--compare`` prints, per case, the cost and
the top site against an earlier ``--json`` file. Figures only: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.detection.cases import Case, missing_requirements, select
from bench.detection.generate import write_suite
from bench.detection.running import _FROZEN, ROOT, freeze_plugin, plugin_fingerprint, run_pytest

ITERATIONS = 2000

_TESTS = '''

@pytest.mark.membudget(rss=0, threads=0, fds=0, iterations={iterations})
def test_{name}__on(membudget):
    _run(membudget, {name!r})


@pytest.mark.membudget(rss=0, threads=0, fds=0, iterations={iterations}, evidence=False)
def test_{name}__off(membudget):
    _run(membudget, {name!r})
'''


def write(directory: Path, cases: Sequence[Case], iterations: int) -> None:
    """The detection suite's files, with the two tests per case."""
    write_suite(directory, ROOT, [])
    body = (directory / "test_detection.py").read_text()
    body += "".join(_TESTS.format(name=c.name, iterations=iterations) for c in cases)
    (directory / "test_detection.py").write_text(body)


def summarise_evidence(evidence: dict[str, Any]) -> dict[str, Any]:
    sites = evidence.get("sites") or []
    top = sites[0] if sites else None
    types = evidence.get("types") or []
    return {
        "top_site": f"{Path(top['file']).name}:{top['line']}" if top else None,
        "top_via": (f"{Path(top['via_file']).name}:{top['via_line']}"
                    if top and top.get("via_file") else None),
        "sites": [f"{Path(s['file']).name}:{s['line']}" for s in sites[:3]],
        "top_type": types[0]["type"] if types else None,
        "kept_by": _kept_by(evidence.get("paths") or []),
        "native": _native_top(evidence.get("native")),
        "threads": len(evidence.get("threads") or []),
        "fds": len(evidence.get("fds") or []),
        "iterations": evidence.get("iterations"),
        "reported_seconds": evidence.get("seconds"),
    }


def _kept_by(paths: list[dict[str, Any]]) -> str | None:
    """``module registry.py: REGISTRY`` for the first type with a path, else its reason."""
    for entry in paths:
        if entry.get("path"):
            root, steps = entry["path"]["root"], entry["path"]["steps"]
            where = Path(root["file"]).name if root.get("file") else root.get("name")
            return f"{root['kind']} {where}: {steps[0]['step']}"
    return f"none: {paths[0].get('reason')}" if paths else None


def _native_top(native: dict[str, Any] | None) -> str | None:
    if not native:
        return None
    if native.get("missing"):
        return "memray missing"
    stacks = native.get("stacks") or []
    return stacks[0]["frames"][0]["function"] if stacks else "no stack"


def run_case(directory: Path, case: Case, repeats: int, timeout: float) -> dict[str, Any]:
    seconds: dict[str, list[float]] = {"on": [], "off": []}
    evidence: list[dict[str, Any]] = []
    reported: list[float] = []
    for _ in range(repeats):
        for mode in ("on", "off"):
            records, _, _, output = run_pytest(
                directory, [f"test_detection.py::test_{case.name}__{mode}"], timeout)
            record = next((r for r in records if r["when"] == "call"), None)
            data = (record or {}).get("membudget") or {}
            if not data:
                raise SystemExit(f"{case.name} ({mode}): no result\n{output}")
            if data.get("passed", True):
                print(f"  {case.name} ({mode}): passed, no evidence to time", file=sys.stderr)
                continue
            seconds[mode].append(float(data["seconds"]))
            if mode == "on":
                evidence.append(summarise_evidence(data.get("evidence") or {}))
                if evidence[-1]["reported_seconds"] is not None:
                    reported.append(float(evidence[-1]["reported_seconds"]))
    on, off = seconds["on"], seconds["off"]
    cost = statistics.median(on) - statistics.median(off) if on and off else None
    return {"case": case.name, "cost": cost, "on": on, "off": off, "reported": reported,
            "evidence_seconds": statistics.median(reported) if reported else None,
            "evidence": evidence[0] if evidence else None,
            "stable": len({e["top_site"] for e in evidence}) <= 1}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default=None, help="names, substrings or fnmatch patterns "
                        "(default: every leak of the corpus)")
    parser.add_argument("--iterations", type=int, default=ITERATIONS)
    parser.add_argument("--plugin-from", default=None, metavar="DIR")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", dest="json_path", default=None, metavar="PATH")
    parser.add_argument("--compare", default=None, metavar="PATH",
                        help="an earlier --json file of this benchmark")
    args = parser.parse_args(argv)
    cases = [c for c in select(args.cases) if c.truth == "leak" and not missing_requirements(c)]
    directory = Path(tempfile.mkdtemp(prefix="membudget-evidence-"))
    write(directory, cases, args.iterations)
    if args.plugin_from:
        _FROZEN.append(str(Path(args.plugin_from).resolve()))
        fingerprint = plugin_fingerprint()
    else:
        fingerprint = freeze_plugin(directory)
    print(f"plugin {fingerprint}; {len(cases)} leak cases, {args.repeats} repeats, "
          f"iterations={args.iterations}", file=sys.stderr)
    rows = []
    for case in cases:
        row = run_case(directory, case, args.repeats, args.timeout)
        rows.append(row)
        cost = "-" if row["cost"] is None else f"{row['cost']:.2f} s"
        top = (row["evidence"] or {}).get("top_site")
        print(f"  {case.name:28s} cost {cost}  top {top}", file=sys.stderr)
    previous = {}
    if args.compare:
        previous = {r["case"]: r for r in json.loads(Path(args.compare).read_text())["rows"]}
    print(f"\nEvidence cost per failing test (plugin {fingerprint}, median of {args.repeats}, "
          f"window of {args.iterations} iterations)")
    header = (f"  {'case':28s}{'evidence s':>11s}{'on-off s':>9s}  {'top site':24s}"
              f"{'called from':24s}{'top type':16s}{'kept by / native stack':44s}")
    if previous:
        header += f"{'before on-off s':>16s}  same top site"
    print(header)
    for row in rows:
        e = row["evidence"] or {}
        cost = "-" if row["cost"] is None else f"{row['cost']:.2f}"
        own = row.get("evidence_seconds")
        own_text = "-" if own is None else f"{own:.2f}"
        line = (f"  {row['case']:28s}{own_text:>11s}{cost:>9s}  {e.get('top_site') or '-':24s}"
                f"{e.get('top_via') or '-':24s}{(e.get('top_type') or '-')[:15]:16s}"
                f"{(e.get('kept_by') or e.get('native') or '-')[:43]:44s}")
        before = previous.get(row["case"])
        if before:
            b = before.get("evidence") or {}
            old = "-" if before["cost"] is None else f"{before['cost']:.2f}"
            same = b.get("top_site") == e.get("top_site") and b.get("top_via") == e.get("top_via")
            line += f"{old:>16s}  {'yes' if same else 'NO: ' + str(b.get('top_site'))}"
        if not row["stable"]:
            line += "  (top site differs between repeats)"
        print(line)
    for label, key in (("evidence s (reported by the plugin)", "evidence_seconds"),
                       ("on-off s", "cost")):
        costs = [r[key] for r in rows if r.get(key) is not None]
        if costs:
            print(f"\n  {label}: median {statistics.median(costs):.2f} s, range "
                  f"{min(costs):.2f}-{max(costs):.2f} s over {len(costs)} failing cases")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(
            {"plugin": fingerprint, "repeats": args.repeats, "iterations": args.iterations,
             "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
