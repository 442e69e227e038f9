"""``membudget``: read JSON reports and baselines outside pytest.

    membudget show REPORT.json
    membudget compare BASE.json NEW.json [--fail FIGURE:TOL ...]
    membudget plot REPORT.json --out DIR
    membudget export REPORT.json --format bencher|github-action-benchmark [--out PATH]
    membudget merge SHARD.json ... (--out ALL.json | --save NAME) [--storage DIR]

Exit status: 0 success (no regression), 1 a regression was found (compare), 2 bad input
(unreadable, foreign or newer-schema file, bad tolerance, bad arguments, nothing to export,
an output file that exists, shards of different runs or a test in two shards).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path
from typing import Any

from pytest_membudget.artifacts.document import Document
from pytest_membudget.artifacts.files import ReportFileError, read_document


class Exit(IntEnum):
    """The command's exit statuses."""

    OK = 0
    REGRESSION = 1
    BAD_INPUT = 2


class InputError(Exception):
    """Input the command cannot use; the message says what to do."""


def _load(path: str) -> Document:
    try:
        return read_document(Path(path))
    except ReportFileError as exc:
        raise InputError(str(exc)) from None


def show(args: argparse.Namespace) -> int:
    from pytest_membudget.render.session import summary_table

    document = _load(args.report)
    machine = document.get("machine", {})
    versions = document.get("versions", {})
    name = f" (baseline {document['name']!r})" if document.get("name") else ""
    print(f"{args.report}{name}: written {document.get('created', '?')}")
    print(f"machine {machine.get('fingerprint', '?')}"
          + (f", CUDA {machine['cuda_device']}" if machine.get("cuda_device") else ""))
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v))
    shards = document.get("shards")
    if isinstance(shards, list) and shards:
        print(f"merged from {len(shards)} shard(s): " + ", ".join(
            f"{s.get('file')} ({s.get('tests')} test(s))" for s in shards if isinstance(s, dict)))
    tests = document["tests"]
    failed = sum(1 for t in tests.values() if not t.get("passed", True))
    print(f"{len(tests)} budgeted test(s): {len(tests) - failed} within budget, "
          f"{failed} over budget")
    for line in summary_table(list(tests.items()), 1 if args.verbose else 0):
        print(line)
    return Exit.OK


def compare_files(args: argparse.Namespace) -> int:
    from pytest_membudget.judge.regression import compare
    from pytest_membudget.judge.tolerance import ToleranceError, parse_tolerances
    from pytest_membudget.render.comparison import comparison_lines

    try:
        policy = parse_tolerances(args.fail or [], "from --fail")
    except ToleranceError as exc:
        raise InputError(str(exc)) from None
    base, new = _load(args.base), _load(args.new)
    fingerprints = {d.get("machine", {}).get("fingerprint") for d in (base, new)}
    if len(fingerprints) > 1:
        print("note: the two runs come from different machines ("
              + " vs ".join(str(f) for f in fingerprints) + "); slopes may differ for that "
              "reason alone", file=sys.stderr)
    comparison = compare(base, new, policy)
    for line in comparison_lines(comparison, args.base, verbose=True):
        print(line)
    if comparison.regressions:
        print(f"{len(comparison.regressions)} regression(s)")
        return Exit.REGRESSION
    return Exit.OK


def plot(args: argparse.Namespace) -> int:
    from pytest_membudget.artifacts.document import has_samples
    from pytest_membudget.render.plots import missing_matplotlib, plot_all

    reason = missing_matplotlib("membudget plot")
    if reason:
        raise InputError(reason)
    document = _load(args.report)
    if not has_samples(document):
        raise InputError(f"{args.report} holds no samples to draw; write the report with "
                         "pytest --membudget-json=PATH --membudget-json-samples")
    written = plot_all(document["tests"], Path(args.out))
    print(f"wrote {len(written)} plot(s) to {args.out}")
    return Exit.OK


def export_file(args: argparse.Namespace) -> int:
    import json

    from pytest_membudget.artifacts.exporters import export
    from pytest_membudget.artifacts.files import write_json

    document = _load(args.report)
    out = None if args.out in (None, "-") else Path(args.out)
    if out is not None:
        if out.exists() and out.resolve() == Path(args.report).resolve():
            raise InputError(f"--out {out} is the report being exported; write the export "
                             "to another file")
        if out.is_dir():
            raise InputError(f"--out {out} is a directory; give the path of a file")
        if out.exists() and not args.overwrite:
            raise InputError(f"--out {out} already exists; choose another path, or add "
                             "--overwrite to replace it")
    result = export(document, args.format)
    for test, why in result.left_out:
        print(f"membudget export: left out {test}: {why}", file=sys.stderr)
    if not result.figures:
        raise InputError(f"{args.report} holds no measured figure to export (no budgeted test "
                         "with a finished run); run pytest with --membudget-json=PATH first")
    if out is None:
        print(json.dumps(result.data, indent=1, allow_nan=False))
    else:
        try:
            write_json(out, result.data)
        except ReportFileError as exc:
            raise InputError(str(exc)) from None
        print(f"wrote {result.figures} figure(s) in the {args.format} format to {out}",
              file=sys.stderr)
    return Exit.OK


def merge_files(args: argparse.Namespace) -> int:
    from pytest_membudget.artifacts.files import check_save, write_json
    from pytest_membudget.artifacts.merge import MergeError, merge, shard_paths

    if not (args.out or args.save):
        raise InputError("say where the merged report goes: --out ALL.json, or --save NAME "
                         "for a baseline")
    try:
        paths, notes = shard_paths(args.reports)
        for note in notes:
            print(f"membudget merge: {note}", file=sys.stderr)
        out = None if args.out is None else _check_out(Path(args.out), paths, args.overwrite)
        merged = merge([(str(p), _load(str(p))) for p in paths])
        writes = [(out, merged)] if out is not None else []
        if args.save:
            fingerprint = str(merged["machine"].get("fingerprint"))
            saved = check_save(Path(args.storage), fingerprint, args.save,
                               overwrite=args.overwrite)
            writes.append((saved, {**merged, "name": args.save}))
        for target, document in writes:
            write_json(target, document)
            print(f"merged {len(paths)} report(s), {len(merged['tests'])} budgeted test(s), "
                  f"into {target}", file=sys.stderr)
    except (MergeError, ReportFileError) as exc:
        raise InputError(str(exc).replace("--membudget-save-overwrite", "--overwrite")
                         .replace("from --membudget-save", "from --save")) from None
    return Exit.OK


def _check_out(out: Path, inputs: Sequence[Path], overwrite: bool) -> Path:
    if any(out.resolve() == p.resolve() for p in inputs):
        raise InputError(f"--out {out} is one of the reports being merged; write the merged "
                         "report to another file (or leave it out of the pattern)")
    if out.is_dir():
        raise InputError(f"--out {out} is a directory; give the path of a file")
    if out.exists() and not overwrite:
        raise InputError(f"--out {out} already exists; choose another path, or add "
                         "--overwrite to replace it")
    return out


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-membudget")
    except PackageNotFoundError:
        return "(not installed)"


def parser() -> argparse.ArgumentParser:
    main_parser = argparse.ArgumentParser(
        prog="membudget", description="Read pytest-membudget JSON reports and baselines.",
        epilog="exit status: 0 success, 1 a regression was found, 2 bad input")
    main_parser.add_argument("--version", action="version",
                             version=f"%(prog)s {_installed_version()}")
    commands = main_parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    show_parser = commands.add_parser("show", help="print a report's summary table")
    show_parser.add_argument("report", metavar="REPORT.json")
    show_parser.add_argument("-v", "--verbose", action="store_true",
                             help="more columns: growth, warm-up, why the run stopped")
    show_parser.set_defaults(handler=show)
    compare_parser = commands.add_parser(
        "compare", help="compare slopes, rises and peaks of two runs; exit 1 on a regression",
        description="A slope regressed when NEW's lower bound is above 0 and above BASE's "
                    "upper bound plus the tolerance, and the growth over the window agrees; "
                    "a rise or a peak when it is above BASE's plus the tolerance. Default "
                    "tolerances: the probe's run spread for slopes (50%% for page probes, "
                    "25%% for the others), 30%% or 4 MiB for rises and peaks.")
    compare_parser.add_argument("base", metavar="BASE.json")
    compare_parser.add_argument("new", metavar="NEW.json")
    compare_parser.add_argument("--fail", action="append", metavar="FIGURE:TOL",
                                help="tolerance, e.g. rss:10%%, heap:64 KiB/iter, "
                                     "rss_rise:10%%, rss_peak:64 MiB, iter_time:off, all:5%% "
                                     "(may be repeated)")
    compare_parser.set_defaults(handler=compare_files)
    plot_parser = commands.add_parser("plot", help="one PNG per test (needs matplotlib)")
    plot_parser.add_argument("report", metavar="REPORT.json")
    plot_parser.add_argument("--out", required=True, metavar="DIR",
                             help="directory for the PNG files")
    plot_parser.set_defaults(handler=plot)
    _add_export(commands)
    _add_merge(commands)
    return main_parser


def _add_merge(commands: Any) -> None:
    merge_parser = commands.add_parser(
        "merge", help="one report from the reports of a run's shards (CI jobs)",
        description="Merge the --membudget-json reports of the shards of one run (a CI job "
                    "matrix, pytest-split groups) into one report that show, compare, export "
                    "and plot take. Refused: reports of different machines or plugin "
                    "versions, and a test found in two shards.")
    merge_parser.add_argument("reports", nargs="+", metavar="SHARD.json",
                              help="the shards' reports, or glob patterns such as "
                                   "'shards/*.json'")
    merge_parser.add_argument("-o", "--out", metavar="ALL.json",
                              help="file to write the merged report to")
    merge_parser.add_argument("--save", metavar="NAME",
                              help="also save the merged report as the baseline NAME (in "
                                   "--storage, under the reports' machine fingerprint)")
    merge_parser.add_argument("--storage", default=".membudget", metavar="DIR",
                              help="directory of saved baselines (default: .membudget)")
    merge_parser.add_argument("--overwrite", action="store_true",
                              help="replace --out, or the baseline NAME, when it exists")
    merge_parser.set_defaults(handler=merge_files)


def _add_export(commands: Any) -> None:
    from pytest_membudget.artifacts.exporters import FORMATS

    export_parser = commands.add_parser(
        "export", help="write the figures for a dashboard (Bencher, github-action-benchmark)",
        description="Each test's slope per probe with its bounds (and, for Bencher, its peak), "
                    "in the probe's base unit. Runs that did not finish are left out and "
                    "named on stderr.")
    export_parser.add_argument("report", metavar="REPORT.json",
                               help="a --membudget-json report or a saved baseline")
    export_parser.add_argument("--format", required=True, choices=FORMATS,
                               help="bencher: Bencher Metric Format JSON; "
                                    "github-action-benchmark: customSmallerIsBetter JSON")
    export_parser.add_argument("--out", metavar="PATH",
                               help="file to write (default, or '-': standard output)")
    export_parser.add_argument("--overwrite", action="store_true",
                               help="replace --out when it exists")
    export_parser.set_defaults(handler=export_file)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        status: int = args.handler(args)
    except InputError as exc:
        print(f"membudget: error: {exc}", file=sys.stderr)
        return Exit.BAD_INPUT
    except OSError as exc:
        print(f"membudget: error: {exc}", file=sys.stderr)
        return Exit.BAD_INPUT
    return status


if __name__ == "__main__":
    sys.exit(main())
