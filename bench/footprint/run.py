"""The footprint corpus under the plugin: one fresh pytest process per shape and repeat.

    python bench/footprint/run.py [--repeats 3] [--shapes a,b] [--plugin-from DIR]

Each shape becomes a test marked ``@pytest.mark.membudget(rss_rise=<half the shape's
ground-truth rise>, iterations=1, warmup=0)`` whose body is ``membudget.run(shape, *args)``
(the shape's setup runs in a fixture, outside the measured call); the clean case gets 16 MiB
and must pass. The test files are generated in a temporary folder, run serially with
``--membudget-json``, and the report is scored by ``scoring.py``: the verdict, the rise
measured against the ground truth's, whether the peak evidence names a ``# PEAK LINE`` of the
shape first, the dominant kind of memory and the first line's state against the shape's
declaration, and what the run and its evidence cost. ``--plugin-from DIR`` puts DIR first on
PYTHONPATH (a copy of the plugin at another commit: before and after). Output: a table on
stdout and ``results/run_<date>.{md,txt,json}``. Needs ``results/ground_truth.json``
(``ground_truth.py``) for the budgets.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scoring  # noqa: E402 - the folder above is not a package
import shapes  # noqa: E402

RESULTS = HERE / "results"
MiB = 1 << 20
#: The clean case's budget: far above its rise, so that only a broken rise fails it.
CLEAN_BUDGET = 16 * MiB
#: Shapes whose ground-truth rise is at least this are "the 150 MB cases" of the cost target.
SIZEABLE = 100 * MiB
#: The issue's target for the peak evidence's cost on those.
EVIDENCE_TARGET_S = 1.0

TEST_FILE = '''\
import sys

sys.path.insert(0, {here!r})

import pytest
import shapes

SHAPE = shapes.SHAPES[{name!r}]


@pytest.fixture
def arguments():
    return SHAPE.arguments()


@pytest.mark.membudget(rss_rise={budget}, iterations=1, warmup=0)
def test_{name}(membudget, arguments):
    membudget.run(SHAPE.func, *arguments)
'''

#: Records which copy of the plugin the run imported (--plugin-from must win).
CONFTEST = '''\
import pathlib

import pytest_membudget

pathlib.Path("plugin_location.txt").write_text(pytest_membudget.__file__)
'''


@dataclass
class Run:
    """One pytest process: its score, and what is needed to explain an error."""

    score: scoring.Score
    returncode: int
    wall: float
    plugin: str = ""
    output_tail: str = ""


@dataclass
class ShapeRuns:
    name: str
    expected: scoring.Expected
    budget: int
    truth_rise: float
    runs: list[Run] = field(default_factory=list)
    skipped: str | None = None


def expected_of(chosen: shapes.Shape) -> scoring.Expected:
    source, lines = chosen.peak_lines()
    return scoring.Expected(chosen.fails, chosen.kind, chosen.state, source, tuple(lines))


def ground_truth_rises(path: Path) -> dict[str, float]:
    if not path.exists():
        raise SystemExit(f"{path} is missing: run python bench/footprint/ground_truth.py "
                         f"first (the budgets are half of each shape's measured rise)")
    document = json.loads(path.read_text())
    return {entry["name"]: entry["median"]["rise"] for entry in document["shapes"]
            if "median" in entry}


def budget_for(chosen: shapes.Shape, rise: float) -> int:
    return CLEAN_BUDGET if not chosen.fails else int(rise / 2)


def plugin_env(plugin_from: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if plugin_from:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(plugin_from).resolve()),
                                                          env.get("PYTHONPATH")]))
    return env


def plugin_fingerprint(plugin_from: str | None) -> str:
    """Where the runs import the plugin from and a hash of its sources: the plugin is edited
    beside this benchmark, and a table must say which code it measured."""
    done = subprocess.run([sys.executable, "-c", "import pytest_membudget; "
                           "print(pytest_membudget.__file__)"], env=plugin_env(plugin_from),
                          capture_output=True, text=True, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        return "(the plugin does not import)"
    package = Path(done.stdout.strip()).parent
    digest = hashlib.sha1()
    for source in sorted(package.rglob("*.py")):
        digest.update(str(source.relative_to(package)).encode())
        digest.update(source.read_bytes())
    return f"{package} sha1:{digest.hexdigest()[:12]}"


def run_once(chosen: shapes.Shape, budget: int, plugin_from: str | None) -> Run:
    expected = expected_of(chosen)
    with tempfile.TemporaryDirectory(prefix="membudget-footprint-") as directory:
        folder = Path(directory)
        (folder / f"test_{chosen.name}.py").write_text(
            TEST_FILE.format(here=str(HERE), name=chosen.name, budget=budget))
        (folder / "conftest.py").write_text(CONFTEST)
        (folder / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = "
                                           "function\n")
        env = plugin_env(plugin_from)
        report = folder / "report.json"
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
             f"--membudget-json={report}", f"test_{chosen.name}.py"],
            cwd=folder, env=env, capture_output=True, text=True, timeout=600)
        wall = time.perf_counter() - began
        location = folder / "plugin_location.txt"
        plugin = location.read_text() if location.exists() else ""
        entries = scoring.tests_of(json.loads(report.read_text())) if report.exists() else []
    score = scoring.score_result(entries[0] if entries else None, expected)
    tail = "" if score.verdict != "E" else (done.stdout + done.stderr)[-3000:]
    if score.verdict == "E":
        score.notes.append(f"pytest exited {done.returncode}: {error_line(done.stdout)}")
    return Run(score, done.returncode, wall, plugin, tail)


UNKNOWN_RISE = "unknown budget 'rss_rise'"


def error_line(output: str) -> str:
    """The line of pytest's output that says what went wrong, for the table's notes."""
    if UNKNOWN_RISE in output:
        return ("this copy of the plugin does not know the rss_rise budget (the footprint "
                "budgets have not landed in it): expected until they do")
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line.lstrip("_ ").startswith("ERROR at") and index + 1 < len(lines):
            return lines[index + 1].strip()[:300]
    for line in reversed(lines):
        if line.startswith(("E ", "ERROR", "INTERNALERROR")) or "Error" in line:
            return line.strip()[:300]
    return (output.strip().splitlines() or ["(no output)"])[-1][:300]


# --- the table ------------------------------------------------------------------------------

def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value / MiB:.1f}"


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _marks(flags: list[bool | None]) -> str:
    return "".join("-" if f is None else ("y" if f else "n") for f in flags)


def row(shape: ShapeRuns) -> dict[str, str]:
    if shape.skipped:
        return {"shape": shape.name, "expected": "skipped", "verdicts": shape.skipped}
    scores = [r.score for r in shape.runs]
    named = sorted({s.line_named for s in scores if s.line_named})
    kinds = sorted({s.kind_named for s in scores if s.kind_named})
    states = sorted({s.state_named for s in scores if s.state_named})
    return {
        "shape": shape.name,
        "expected": ("fail" if shape.expected.fails else "pass")
        + (f", {shape.expected.kind}, {shape.expected.state}" if shape.expected.kind else ""),
        "verdicts": "".join(s.verdict for s in scores),
        "rise": f"{_mib(shape.truth_rise)} / {_mib(_median([s.rise for s in scores]))}",
        "line": f"{_marks([s.line_right for s in scores])} {', '.join(named)}".strip(),
        "kind": " ".join(filter(None, [_marks([s.kind_right for s in scores]), ", ".join(kinds),
                                       _mib(_median([s.kind_bytes for s in scores]))
                                       if kinds else ""])),
        "state": f"{_marks([s.state_right for s in scores])} {', '.join(states)}".strip(),
        "seconds": _fmt_s(_median([s.seconds for s in scores])),
        "evidence": _fmt_s(_median([s.evidence_seconds for s in scores])),
    }


def _fmt_s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


COLUMNS = {"shape": "shape", "expected": "expected", "verdicts": "verdicts",
           "rise": "rise MiB truth / measured", "line": "first line right? named",
           "kind": "dominant kind right? named, MiB", "state": "first line's state right?",
           "seconds": "test s", "evidence": "evidence s"}


def markdown_table(rows: list[dict[str, str]]) -> list[str]:
    out = ["| " + " | ".join(COLUMNS.values()) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(r.get(key, "") for key in COLUMNS) + " |" for r in rows]
    return out


def totals(results: list[ShapeRuns], repeats: int) -> list[str]:
    ran = [s for s in results if not s.skipped]
    failing = [s for s in ran if s.expected.fails]

    def per_repeat(shapes_: list[ShapeRuns], attribute: str) -> str:
        counts = [sum(bool(getattr(s.runs[i].score, attribute)) for s in shapes_
                      if i < len(s.runs)) for i in range(repeats)]
        every = sum(all(getattr(r.score, attribute) for r in s.runs) for s in shapes_)
        return (f"{every}/{len(shapes_)} in every repeat "
                f"(per repeat: {', '.join(f'{c}/{len(shapes_)}' for c in counts)})")

    sizeable = [r.score.evidence_seconds for s in failing if s.truth_rise >= SIZEABLE
                for r in s.runs if r.score.evidence_seconds is not None]
    cost = (f"median {statistics.median(sizeable):.2f} s, max {max(sizeable):.2f} s over "
            f"{len(sizeable)} runs; {sum(v <= EVIDENCE_TARGET_S for v in sizeable)} at or "
            f"under {EVIDENCE_TARGET_S:.0f} s" if sizeable else "no evidence timed")
    lines = [f"- right verdicts: {per_repeat(ran, 'verdict_right')}",
             f"- user's line first: {per_repeat(failing, 'line_right')}",
             f"- dominant kind right: {per_repeat(failing, 'kind_right')}",
             f"- first line's state right: {per_repeat(failing, 'state_right')}",
             f"- peak evidence's cost on the cases of {SIZEABLE // MiB} MiB or more: {cost}"]
    errors = sum(r.score.verdict == "E" for s in ran for r in s.runs)
    if errors:
        lines.append(f"- ERRORS: {errors} of {sum(len(s.runs) for s in ran)} runs gave no "
                     f"result (see the notes)")
    skipped = [s for s in results if s.skipped]
    if skipped:
        lines.append(f"- skipped: {', '.join(f'{s.name} ({s.skipped})' for s in skipped)}")
    return lines


def notes(results: list[ShapeRuns]) -> list[str]:
    out = []
    for s in results:
        for i, r in enumerate(s.runs):
            if r.score.notes:
                out.append(f"- {s.name} repeat {i + 1}: {'; '.join(r.score.notes)}")
    return out


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def report(results: list[ShapeRuns], meta: dict[str, Any]) -> str:
    rows = [row(s) for s in results]
    head = [f"# Footprint corpus under the plugin ({meta['date']})", "",
            f"{meta['repeats']} repeat(s), serial, one pytest process each; plugin "
            f"{meta['plugin_before']}"
            + ("" if meta["plugin_after"] == meta["plugin_before"]
               else f" (**changed during the run**: {meta['plugin_after']} at its end)")
            + f" (the runs imported {', '.join(meta['plugins']) or 'nothing'})"
            + f"; load average {meta['load_before']} before, {meta['load_after']} after; "
            f"{meta['seconds']:.0f} s in all.", "",
            "Verdicts: F failed, . passed, E no result. y/n per repeat: right or wrong "
            "(- where nothing was graded).", ""]
    body = [*markdown_table(rows), "", "Totals:", "", *totals(results, meta["repeats"])]
    found = notes(results)
    return "\n".join(head + body + (["", "Notes:", "", *found] if found else [])) + "\n"


def error_tails(results: list[ShapeRuns]) -> str:
    tails = [f"--- {s.name} repeat {i + 1} (pytest exited {r.returncode}) ---\n{r.output_tail}"
             for s in results for i, r in enumerate(s.runs) if r.output_tail]
    return ("\n\nOutput of the runs that gave no result:\n\n" + "\n".join(tails)) if tails else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shapes", default="", help="comma-separated names (default: all)")
    parser.add_argument("--plugin-from", default=None, metavar="DIR",
                        help="put DIR first on PYTHONPATH (another copy of pytest_membudget)")
    parser.add_argument("--ground-truth", default=str(RESULTS / "ground_truth.json"))
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--tag", default="", help="added to the output files' names")
    args = parser.parse_args(argv)
    names = [n for n in args.shapes.split(",") if n] or shapes.corpus()
    unknown = [n for n in names if n not in shapes.SHAPES]
    if unknown:
        raise SystemExit(f"unknown shape(s) {', '.join(unknown)}; "
                         f"known: {', '.join(shapes.SHAPES)}")
    rises = ground_truth_rises(Path(args.ground_truth))
    meta: dict[str, Any] = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
                            "repeats": args.repeats, "load_before": load_average(),
                            "plugin_from": args.plugin_from,
                            "plugin_before": plugin_fingerprint(args.plugin_from)}
    began = time.perf_counter()
    results = [run_shape(shapes.SHAPES[n], rises, args) for n in names]
    meta.update(load_after=load_average(), seconds=time.perf_counter() - began,
                plugins=sorted({r.plugin for s in results for r in s.runs if r.plugin}),
                plugin_after=plugin_fingerprint(args.plugin_from))
    text = report(results, meta)
    print(text)
    write(results, meta, text, Path(args.out), args.tag)
    return 0


def run_shape(chosen: shapes.Shape, rises: dict[str, float],
              args: argparse.Namespace) -> ShapeRuns:
    if chosen.name not in rises:
        raise SystemExit(f"{chosen.name} has no ground truth: run ground_truth.py "
                         f"--shapes {chosen.name}")
    rise = rises[chosen.name]
    shape = ShapeRuns(chosen.name, expected_of(chosen), budget_for(chosen, rise), rise)
    shape.skipped = chosen.available()
    if shape.skipped:
        print(f"{chosen.name}: skipped, {shape.skipped}", file=sys.stderr)
        return shape
    for repeat in range(args.repeats):
        shape.runs.append(run_once(chosen, shape.budget, args.plugin_from))
        s = shape.runs[-1].score
        print(f"{chosen.name} {repeat + 1}/{args.repeats}: {s.verdict} line "
              f"{s.line_named or '-'} kind {s.kind_named or '-'} "
              f"({shape.runs[-1].wall:.1f} s)", file=sys.stderr, flush=True)
    return shape


def write(results: list[ShapeRuns], meta: dict[str, Any], text: str, out: Path,
          tag: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    stem = base = f"run_{meta['date'].replace('-', '')}{'_' + tag if tag else ''}"
    # A record already written (an earlier run the same day, with the same tag) is kept.
    again = 1
    while any((out / f"{stem}.{ext}").exists() for ext in ("md", "txt", "json")):
        again += 1
        stem = f"{base}_{again}"
    (out / f"{stem}.md").write_text(text)
    (out / f"{stem}.txt").write_text(text + error_tails(results))
    raw = {"meta": meta, "shapes": [
        {"name": s.name, "budget": s.budget, "truth_rise": s.truth_rise, "skipped": s.skipped,
         "runs": [{**r.score.to_dict(), "returncode": r.returncode, "wall": r.wall,
                   "plugin": r.plugin} for r in s.runs]} for s in results]}
    (out / f"{stem}.json").write_text(json.dumps(raw, indent=1) + "\n")
    print(f"wrote {out / stem}.{{md,txt,json}}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
