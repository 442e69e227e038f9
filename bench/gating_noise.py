"""How often the baseline gate calls unchanged code a regression, and how small a real change
it catches.

    python bench/gating_noise.py run --runs 20 --changed-runs 10 --out DIR [-n 2]
    python bench/gating_noise.py score DIR [--fail FIGURE:TOL ...] [--spread]
    python bench/gating_noise.py shards --out DIR [--shards 4]

``run`` writes a small corpus of budgeted tests (leaks of 64 B to 64 KiB a call, clean loops,
heavy steps, footprints and phases) and runs it with pytest, a fresh process per run, ``--runs``
times as it is and ``--changed-runs`` times changed (every leak doubled, every footprint grown
by a quarter), each run's ``--membudget-json`` report kept in DIR (``base-NN.json``,
``changed-NN.json``). ``score`` reads them back and applies the gate's rule
(``pytest_membudget.judge.regression.compare``) at the default tolerances, or at the ones
given with ``--fail``:

- per case, how many of the unchanged runs 2..N compared with run 1 are called a regression
  (the target is none), and over all ordered pairs of unchanged runs;
- per case, how many changed runs compared with each unchanged run are caught;
- per case and figure, the spread of the estimates over the unchanged runs (``--spread``).

``shards`` runs the corpus once whole and once in shards (``-k`` of each shard's tests), merges
the shards' reports with ``membudget merge`` and prints every test's verdicts in both.

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

def run_once(corpus: Path, report: Path, changed: bool, workers: int | None,
             random_order: bool, extra: Sequence[str] = ()) -> float:
    """One pytest run of ``corpus`` (the corpus file, or its folder) into ``report``."""
    env = {**os.environ, "GATING_LEAK": "2" if changed else "1",
           "GATING_PARTS": "5" if changed else "4"}
    args = [sys.executable, "-m", "pytest", str(corpus), "-q", "-p", "no:cacheprovider",
            f"--membudget-json={report}", "--rootdir", str(_folder(corpus))]
    if workers:
        args += ["-n", str(workers)]
    if not random_order:
        args += ["-p", "no:randomly"]
    args += list(extra)
    started = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, env=env, cwd=_folder(corpus))
    seconds = time.perf_counter() - started
    if not report.is_file():
        raise SystemExit(f"pytest wrote no report ({out.returncode}):\n{out.stdout[-2000:]}")
    tail = out.stdout.strip().splitlines()[-1:] or ["?"]
    print(f"  {report.name}: {seconds:.1f} s, {tail[0]}", flush=True)
    return seconds


def _folder(corpus: Path) -> Path:
    return corpus if corpus.is_dir() else corpus.parent


def run(args: argparse.Namespace) -> None:
    from bench.gating_corpus import write_corpus

    out = Path(args.out)
    corpus = write_corpus(out / "corpus")
    plan = [("changed", i) if changed else ("base", i) for changed, i in itertools.chain(
        ((False, i) for i in range(1, args.runs + 1)),
        ((True, i) for i in range(1, args.changed_runs + 1)))]
    # Interleave the changed runs among the unchanged ones (after the first, the baseline):
    # a drift of the machine's load then falls on both.
    base = [p for p in plan if p[0] == "base"]
    changed = [p for p in plan if p[0] == "changed"]
    order = base[:1]
    rest = base[1:]
    step = max(1, len(rest) // max(1, len(changed)))
    for k, item in enumerate(rest):
        order.append(item)
        if changed and (k + 1) % step == 0:
            order.append(changed.pop(0))
    order += changed
    print(f"{len(order)} runs of {corpus} into {out}", flush=True)
    for kind, i in order:
        report = out / f"{kind}-{i:02d}.json"
        if report.is_file() and not args.again:
            continue
        run_once(corpus, report, kind == "changed", args.workers, args.random_order)


def shards(args: argparse.Namespace) -> None:
    """The corpus and three failing tests run whole and in ``--shards`` shards (the tests
    dealt round-robin, by node id, chosen with ``-k``), the shards merged with ``membudget
    merge``: every verdict of the two reports side by side, and the comparison of the merged
    report with the whole run's."""
    from bench.gating_corpus import FAILING, write_corpus
    from pytest_membudget.artifacts.files import read_document
    from pytest_membudget.cli import main as membudget

    out = Path(args.out)
    corpus = write_corpus(out / "corpus")
    (corpus.parent / "test_gating_failing.py").write_text(FAILING)
    whole = out / "whole.json"
    run_once(corpus.parent, whole, False, None, False)
    nodeids = sorted(read_document(whole)["tests"])
    for shard in range(args.shards):
        part = [n.split("::", 1)[1] for i, n in enumerate(nodeids) if i % args.shards == shard]
        report = out / f"shard-{shard + 1}.json"
        run_once(corpus.parent, report, False, None, False, ["-k", " or ".join(part)])
    merged = out / "merged.json"
    merged.unlink(missing_ok=True)
    membudget(["merge", str(out / "shard-*.json"), "-o", str(merged)])
    one, other = verdicts(read_document(whole)), verdicts(read_document(merged))
    same = sum(one[n] == other.get(n) for n in one)
    print(f"{same} of {len(one)} tests with the same verdicts in the whole run and the merged "
          f"shards ({len(other)} tests merged)")
    for nodeid in sorted(set(one) | set(other)):
        mark = "same" if one.get(nodeid) == other.get(nodeid) else "DIFFERENT"
        print(f"  {mark:9} {nodeid}: {one.get(nodeid)} | {other.get(nodeid)}")
    membudget(["compare", str(whole), str(merged)])


def verdicts(document: Mapping[str, Any]) -> dict[str, Any]:
    """Each test's outcome, each probe's verdict and budget statuses, each phase's verdict."""
    return {nodeid: (test.get("outcome"), test.get("passed"),
                     sorted((name, p.get("verdict"), tuple(o.get("status") for o in
                                                           p.get("outcomes", [])))
                            for name, p in test.get("probes", {}).items()),
                     [(p.get("name"), p.get("verdict")) for p in test.get("phases", [])])
            for nodeid, test in document.get("tests", {}).items()}


def _load(folder: Path, kind: str) -> list[dict[str, Any]]:
    from pytest_membudget.artifacts.files import read_document

    return [read_document(p) for p in sorted(folder.glob(f"{kind}-*.json"))]


def case_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


Counts = tuple[dict[str, int], dict[str, int]]


def outcomes(base: Mapping[str, Any], new: Mapping[str, Any],
             policy: Any) -> dict[str, bool]:
    """Whether each case, and each case's figure (``case :: figure``), regressed."""
    from pytest_membudget.judge.regression import REGRESSED, compare
    from pytest_membudget.render.comparison import figure_name

    found: dict[str, bool] = {}
    for c in compare(base, new, policy).changes:
        case = case_of(c.nodeid)
        hit = c.status == REGRESSED
        found[case] = found.get(case, False) or hit
        found[f"{case} :: {figure_name(c)}"] = hit
    return found


def spread(runs: Sequence[Mapping[str, Any]], policy: Any) -> dict[str, list[str]]:
    """Per case, one line per compared figure: the lowest and highest estimate over the runs,
    and the widest gap between two runs relative to the first's figure."""
    from pytest_membudget.judge.regression import compare
    from pytest_membudget.render.comparison import figure_name

    figures: dict[tuple[str, str], list[float]] = {}
    for document in runs:
        for c in compare(document, document, policy).changes:
            value = c.new.value
            if value is not None:
                figures.setdefault((case_of(c.nodeid), figure_name(c)), []).append(value)
    lines: dict[str, list[str]] = {}
    for (case, label), values in figures.items():
        median = statistics.median(values)
        lines.setdefault(case, []).append(
            f"{label} {_short(min(values))}..{_short(max(values))} (median {_short(median)})")
    return lines


def _short(value: float) -> str:
    for unit, size in (("MiB", 1024.0**2), ("KiB", 1024.0)):
        if abs(value) >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.3g}"


def score(args: argparse.Namespace) -> None:
    from pytest_membudget.judge.tolerance import parse_tolerances

    folder = Path(args.folder)
    policy = parse_tolerances(args.fail or [], "from --fail")
    base, changed = _load(folder, "base"), _load(folder, "changed")
    if len(base) < 2:
        raise SystemExit(f"{folder} holds fewer than two unchanged runs (base-NN.json)")
    first = base[0]
    against_first = _count(((first, b) for b in base[1:]), policy)
    pairs = _count(((a, b) for a, b in itertools.permutations(base, 2)), policy)
    caught = _count(((b, c) for b in base for c in changed), policy)
    caught_first = _count(((first, c) for c in changed), policy)
    tolerances = ", ".join(args.fail) if args.fail else "defaults"
    print(f"{folder}: {len(base)} unchanged runs, {len(changed)} changed runs; "
          f"tolerances: {tolerances}")
    print("a case counts as regressed when any of its figures did; its figures follow it")
    print(f"{'case / figure':44} {'false: vs run 1':>16} {'all pairs':>10} "
          f"{'caught: vs run 1':>17} {'vs every run':>13}")
    for key in sorted(against_first[1], key=lambda k: (k.split(" :: ")[0], " :: " in k, k)):
        label = key if " :: " not in key else "    " + key.split(" :: ", 1)[1]
        print(f"{label:44} {_ratio(against_first, key):>16} {_ratio(pairs, key):>10} "
              f"{_ratio(caught_first, key):>17} {_ratio(caught, key):>13}")
    cases = [k for k in against_first[1] if " :: " not in k]
    print(f"cases called regressed on unchanged code: {sum(against_first[0][k] for k in cases)} "
          f"of {sum(against_first[1][k] for k in cases)} comparisons with run 1, "
          f"{sum(pairs[0][k] for k in cases)} of {sum(pairs[1][k] for k in cases)} over all "
          "ordered pairs")
    if args.spread:
        print("\nspread of the unchanged runs' figures:")
        for case, lines in sorted(spread(base, policy).items()):
            print(f"  {case}")
            for line in lines:
                print(f"    {line}")


def _count(pairs: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
           policy: Any) -> Counts:
    hits: dict[str, int] = {}
    seen: dict[str, int] = {}
    for base, new in pairs:
        for key, hit in outcomes(base, new, policy).items():
            seen[key] = seen.get(key, 0) + 1
            hits[key] = hits.get(key, 0) + hit
    return hits, seen


def _ratio(counts: Counts, case: str) -> str:
    hits, seen = counts
    return f"{hits.get(case, 0)}/{seen.get(case, 0)}" if case in seen else "-"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="run the corpus, keep each run's report")
    run_parser.add_argument("--runs", type=int, default=20)
    run_parser.add_argument("--changed-runs", type=int, default=10)
    run_parser.add_argument("--out", required=True)
    run_parser.add_argument("-n", "--workers", type=int, default=None,
                            help="run each under pytest-xdist with this many workers")
    run_parser.add_argument("--random-order", action="store_true",
                            help="leave pytest-randomly on (where installed): a new test order "
                                 "each run; by default the order is the file's")
    run_parser.add_argument("--again", action="store_true",
                            help="run again where a report exists (default: keep it)")
    shards_parser = commands.add_parser(
        "shards", help="the corpus whole and in shards: are the merged verdicts the same?")
    shards_parser.add_argument("--shards", type=int, default=4)
    shards_parser.add_argument("--out", required=True)
    score_parser = commands.add_parser("score", help="apply the gate to the kept reports")
    score_parser.add_argument("folder")
    score_parser.add_argument("--fail", action="append", metavar="PROBE:TOL")
    score_parser.add_argument("--spread", action="store_true",
                              help="also print the spread of each figure over the runs")
    args = parser.parse_args(argv)
    {"run": run, "score": score, "shards": shards}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
