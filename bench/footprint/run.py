"""A footprint corpus under the plugin: one fresh pytest process per shape, variant and repeat.

    python bench/footprint/run.py [--corpus synthetic|libraries] [--repeats 3] [--shapes a,b]
        [--variants warmup0,warmup1,default,default_iter1] [--plugin-from DIR] [--tag T]

Each shape becomes a test whose body is ``membudget.run(shape, *args)`` (the shape's setup
runs in a fixture, outside the measured call), marked with ``rss_rise`` at half the ground
truth's rise of the call the variant measures, in one of the marker's forms
(``variants.py``): ``iterations=1, warmup=0``; ``warmup=1, iterations=1`` (measured against
the call after one warm-up); ``rss_rise`` alone; ``rss_rise`` and ``iterations=1``. A clean
case gets 16 MiB and must pass. The test files are generated in a temporary folder, run
serially with ``--membudget-json``, and each result is scored by ``scoring.py``: the
verdict, whether it was stopped at the hard ceiling, the rise against the ground truth's,
whether the peak evidence names a ``# PEAK LINE`` of the shape first, the dominant kind and
the first line's state against the shape's declaration, whether the composition's shares
add up to its rise, and what the evidence cost; for each miss, the line of the failure's
text that shows its cause. ``--plugin-from DIR`` puts DIR first on PYTHONPATH (another
checkout of the plugin). Output: a table on stdout and ``results/run_[<corpus>_]<date>
[_<tag>].{md,txt,json}``. Needs the corpus's ground truth (``ground_truth.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import protocol  # noqa: E402 - the folder above is not a package
import run_report  # noqa: E402
import scoring  # noqa: E402
import variants  # noqa: E402
from failure_text import causes, failure_section  # noqa: E402
from run_report import Run, ShapeRuns  # noqa: E402

RESULTS = HERE / "results"
MiB = protocol.MiB
#: The clean case's budget: far above its rise, so that only a broken rise fails it.
CLEAN_BUDGET = 16 * MiB


def expected_of(chosen: protocol.Shape, truth_rise: float | None) -> scoring.Expected:
    source, lines = chosen.peak_lines()
    return scoring.Expected(chosen.fails, chosen.kind, chosen.state, source, tuple(lines),
                            truth_rise)


def ground_truth_rises(path: Path) -> dict[tuple[str, str], float]:
    """The ground truth's rise of each shape's cold and warm call."""
    if not path.exists():
        raise SystemExit(f"{path} is missing: run python bench/footprint/ground_truth.py "
                         f"first (the budgets are half of each shape's measured rise)")
    document = json.loads(path.read_text())
    rises = {}
    for entry in document["shapes"]:
        for call, key in (("cold", "median"), ("warm", "warm")):
            if key in entry:
                rises[(entry["name"], call)] = entry[key]["rise"]
    return rises


def budget_for(chosen: protocol.Shape, rise: float) -> int:
    return CLEAN_BUDGET if not chosen.fails else int(rise / 2)


def run_once(corpus: str, chosen: protocol.Shape, variant: variants.Variant,
             shape: ShapeRuns, plugin_from: str | None) -> Run:
    test = f"test_{chosen.name}"
    with tempfile.TemporaryDirectory(prefix="membudget-footprint-") as directory:
        folder = Path(directory)
        variants.write_test(folder, corpus, chosen.name, shape.budget, variant, HERE)
        report = folder / "report.json"
        began = time.perf_counter()
        done = variants.run_pytest(folder, report, test, plugin_from)
        wall = time.perf_counter() - began
        location = folder / "plugin_location.txt"
        plugin = location.read_text() if location.exists() else ""
        entries = scoring.tests_of(json.loads(report.read_text())) if report.exists() else []
    score = scoring.score_result(entries[0] if entries else None, shape.expected)
    output = done.stdout + done.stderr
    text = failure_section(done.stdout, test)
    if score.verdict == "E":
        score.notes.append(f"pytest exited {done.returncode}: {variants.error_line(output)}")
    tail = "" if score.verdict != "E" else output[-3000:]
    return Run(score, done.returncode, wall, plugin, tail, text, causes(text))


def run_shape(corpus: str, chosen: protocol.Shape, variant: variants.Variant,
              rises: dict[tuple[str, str], float], args: argparse.Namespace) -> ShapeRuns:
    key = (chosen.name, variant.call)
    if key not in rises:
        raise SystemExit(f"{chosen.name} has no ground truth for its {variant.call} call: run "
                         f"ground_truth.py --corpus {corpus} --shapes {chosen.name}")
    rise = rises[key]
    shape = ShapeRuns(chosen.name, variant.name, expected_of(chosen, rise),
                      budget_for(chosen, rise), rise)
    shape.skipped = chosen.available()
    if shape.skipped:
        print(f"{chosen.name}: skipped, {shape.skipped}", file=sys.stderr)
        return shape
    for repeat in range(args.repeats):
        shape.runs.append(run_once(corpus, chosen, variant, shape, args.plugin_from))
        s = shape.runs[-1].score
        print(f"{chosen.name} {variant.name} {repeat + 1}/{args.repeats}: {s.verdict}"
              f"{' stopped' if s.stopped else ''} line {s.line_named or '-'} kind "
              f"{s.kind_named or '-'} state {s.state_named or '-'} "
              f"({shape.runs[-1].wall:.1f} s)", file=sys.stderr, flush=True)
    return shape


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="synthetic", choices=tuple(protocol.CORPORA))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shapes", default="", help="comma-separated names (default: all)")
    parser.add_argument("--variants", default="",
                        help=f"comma-separated, of {', '.join(variants.VARIANTS)} (default: "
                             "warmup0 for the synthetic corpus, all for the others)")
    parser.add_argument("--plugin-from", default=None, metavar="DIR",
                        help="put DIR first on PYTHONPATH (another copy of pytest_membudget)")
    parser.add_argument("--ground-truth", default=None,
                        help="the ground truth's JSON (default: the corpus's in results/)")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--tag", default="", help="added to the output files' names")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    shapes = protocol.load(args.corpus)
    names = [n for n in args.shapes.split(",") if n] or protocol.corpus_names(shapes)
    unknown = [n for n in names if n not in shapes]
    if unknown:
        raise SystemExit(f"unknown shape(s) {', '.join(unknown)} in the {args.corpus} "
                         f"corpus; known: {', '.join(shapes)}")
    chosen_variants = variants.chosen(args.variants, args.corpus)
    stem = "ground_truth" if args.corpus == "synthetic" else f"ground_truth_{args.corpus}"
    rises = ground_truth_rises(Path(args.ground_truth or RESULTS / f"{stem}.json"))
    meta: dict[str, Any] = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
                            "corpus": args.corpus, "repeats": args.repeats,
                            "variants": [v.name for v in chosen_variants],
                            "load_before": run_report.load_average(),
                            "plugin_from": args.plugin_from,
                            "plugin_before": variants.plugin_fingerprint(args.plugin_from)}
    began = time.perf_counter()
    results = [run_shape(args.corpus, shapes[n], v, rises, args)
               for v in chosen_variants for n in names]
    meta.update(load_after=run_report.load_average(), seconds=time.perf_counter() - began,
                plugins=sorted({r.plugin for s in results for r in s.runs if r.plugin}),
                plugin_after=variants.plugin_fingerprint(args.plugin_from))
    text = run_report.report(results, meta)
    print(text)
    run_report.write(results, meta, text, Path(args.out), args.tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
