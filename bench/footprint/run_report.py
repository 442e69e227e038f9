"""The runner's tables: one row per shape and variant, totals per variant, and for each miss
the line of the failure's text that shows its cause; written to ``results/`` as markdown,
text (with each run's failure text) and JSON."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import scoring
import variants
from failure_text import short

MiB = 1 << 20
#: The issue's target for the peak evidence's cost.
EVIDENCE_TARGET_S = 1.0


@dataclass
class Run:
    """One pytest process: its score, its failure's text and what explains an error."""

    score: scoring.Score
    returncode: int
    wall: float
    plugin: str = ""
    output_tail: str = ""
    text: str = ""
    causes: dict[str, str] = field(default_factory=dict)


@dataclass
class ShapeRuns:
    name: str
    variant: str
    expected: scoring.Expected
    budget: int
    truth_rise: float
    runs: list[Run] = field(default_factory=list)
    skipped: str | None = None


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value / MiB:.1f}"


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _marks(flags: list[bool | None]) -> str:
    return "".join("-" if f is None else ("y" if f else "n") for f in flags)


def _fmt_s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def row(shape: ShapeRuns) -> dict[str, str]:
    if shape.skipped:
        return {"shape": shape.name, "variant": shape.variant, "expected": "skipped",
                "verdicts": shape.skipped}
    scores = [r.score for r in shape.runs]
    e = shape.expected

    def named(values: list[str | None]) -> str:
        return ", ".join(sorted({v for v in values if v}))

    kinds = named([s.kind_named for s in scores])
    return {
        "shape": shape.name, "variant": shape.variant,
        "expected": ("fail" if e.fails else "pass")
        + (f", {e.kind}, {e.state}" if e.kind else ""),
        "verdicts": "".join(s.verdict for s in scores),
        "stopped": _marks([s.stopped for s in scores]).replace("y", "S").replace("n", "."),
        "rise": f"{_mib(shape.truth_rise)} / {_mib(_median([s.rise for s in scores]))} "
                f"{_marks([s.rise_right for s in scores])}",
        "line": f"{_marks([s.line_right for s in scores])} "
                f"{named([s.line_named for s in scores])}".strip(),
        "kind": " ".join(filter(None, [_marks([s.kind_right for s in scores]), kinds,
                                       _mib(_median([s.kind_bytes for s in scores]))
                                       if kinds else ""])),
        "state": f"{_marks([s.state_right for s in scores])} "
                 f"{named([s.state_named for s in scores])}".strip(),
        "shares": f"{_marks([s.shares_right for s in scores])} "
                  f"{'; '.join(sorted({s.shares for s in scores if s.shares}))}".strip(),
        "seconds": _fmt_s(_median([s.seconds for s in scores])),
        "evidence": _fmt_s(_median([s.evidence_seconds for s in scores])),
    }


COLUMNS = {"shape": "shape", "variant": "variant", "expected": "expected",
           "verdicts": "verdicts", "stopped": "stopped", "rise": "rise MiB truth / measured, "
           "within 5%?", "line": "first line right? named",
           "kind": "dominant kind right? named, MiB", "state": "first line's state right?",
           "shares": "shares add up?", "seconds": "test s", "evidence": "evidence s"}


def markdown_table(rows: list[dict[str, str]]) -> list[str]:
    out = ["| " + " | ".join(COLUMNS.values()) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(r.get(key, "") for key in COLUMNS) + " |" for r in rows]
    return out


def _count(shapes: list[ShapeRuns], repeats: int, right: Any) -> str:
    """"k/n in every repeat (per repeat: ...)" for a predicate on a score."""
    counts = [sum(bool(right(s.runs[i].score)) for s in shapes if i < len(s.runs))
              for i in range(repeats)]
    every = sum(all(right(r.score) for r in s.runs) for s in shapes)
    return (f"{every}/{len(shapes)} in every repeat (per repeat: "
            f"{', '.join(f'{c}/{len(shapes)}' for c in counts)})")


def totals(results: list[ShapeRuns], variant: str, repeats: int) -> list[str]:
    ran = [s for s in results if not s.skipped and s.variant == variant]
    failing = [s for s in ran if s.expected.fails]
    timed = [r.score.evidence_seconds for s in failing for r in s.runs
             if r.score.evidence_seconds is not None]
    cost = (f"median {statistics.median(timed):.2f} s, max {max(timed):.2f} s over "
            f"{len(timed)} runs; {sum(v <= EVIDENCE_TARGET_S for v in timed)} at or under "
            f"{EVIDENCE_TARGET_S:.0f} s" if timed else "no evidence timed")
    return [f"- verdict right: {_count(ran, repeats, lambda s: s.verdict_right)}",
            f"- not stopped at the ceiling: {_count(ran, repeats, lambda s: not s.stopped)}",
            f"- user's line first: {_count(failing, repeats, lambda s: s.line_right)}",
            f"- dominant kind right: {_count(failing, repeats, lambda s: s.kind_right)}",
            f"- first line's state right: {_count(failing, repeats, lambda s: s.state_right)}",
            f"- rise within 5% of the measured call's: "
            f"{_count(failing, repeats, lambda s: s.rise_right)}",
            f"- shares add up to the rise, none over 100%: "
            f"{_count(failing, repeats, lambda s: s.shares_right)}",
            f"- peak evidence's cost: {cost}"]


def misses(shape: ShapeRuns, index: int, run: Run) -> list[str]:
    """One line per miss of a run, each with the failure text's line that shows its cause."""
    s, c = run.score, run.causes
    where = f"- {shape.name} {shape.variant} r{index + 1}"
    found = []
    if not s.verdict_right:
        found.append(f"verdict {s.verdict}: rise {_mib(s.rise)} MiB, budget "
                     f"{_mib(shape.budget)} MiB")
    if s.stopped:
        found.append(f"stopped: {c.get('stop', '')}")
    if s.line_right is False:
        found.append(f"line {s.line_named or '-'}: {c.get('first_line') or '(no line)'}")
    if s.kind_right is False and not s.stopped:
        found.append(f"kind {s.kind_named}: {c.get('made_of') or '(no composition)'}")
    if s.state_right is False and not s.stopped:
        found.append(f"state {s.state_named}: {c.get('first_line') or '(no line)'}")
    if s.rise_right is False:
        found.append(f"rise {_mib(s.rise)} of {_mib(shape.truth_rise)} MiB: "
                     f"{c.get('header', '')} {c.get('rise', '')}")
    if s.shares_right is False:
        found.append(f"shares {s.shares}: {c.get('made_of', '')}")
    if s.evidence_seconds is not None and s.evidence_seconds > EVIDENCE_TARGET_S:
        found.append(f"evidence {s.evidence_seconds:.2f} s: {c.get('evidence', '')}")
    found += [f"note: {note}" for note in s.notes if "stopped at" not in note]
    return [f"{where}: {short(line)}" for line in found]


def report(results: list[ShapeRuns], meta: dict[str, Any]) -> str:
    head = [f"# Footprint corpus ({meta['corpus']}) under the plugin ({meta['date']})", "",
            f"{meta['repeats']} repeat(s), serial, one pytest process each; plugin "
            f"{meta['plugin_before']}"
            + ("" if meta["plugin_after"] == meta["plugin_before"]
               else f" (**changed during the run**: {meta['plugin_after']} at its end)")
            + f" (the runs imported {', '.join(meta['plugins']) or 'nothing'})"
            + f"; load average {meta['load_before']} before, {meta['load_after']} after; "
            f"{meta['seconds']:.0f} s in all.", "",
            "Variants: " + "; ".join(f"`{v}`: `rss_rise=...{variants.VARIANTS[v].marker}` "
                                     f"({variants.VARIANTS[v].doc}; ground truth: the "
                                     f"{variants.VARIANTS[v].call} call)"
                                     for v in meta["variants"]) + ".", "",
            "Verdicts: F failed, . passed, E no result; stopped: S stopped at the hard "
            "ceiling. y/n per repeat: right or wrong (- where nothing was graded). Budgets: "
            "half the ground truth's rise of the measured call.", ""]
    body = [*markdown_table([row(s) for s in results])]
    for variant in meta["variants"]:
        body += ["", f"Totals, `{variant}`:", "", *totals(results, variant, meta["repeats"])]
    found = [line for s in results for i, r in enumerate(s.runs) for line in misses(s, i, r)]
    return "\n".join(head + body + (["", "Misses, with the failure's line that shows the "
                                         "cause:", "", *found] if found else [])) + "\n"


def texts(results: list[ShapeRuns]) -> str:
    out = []
    for s in results:
        for i, r in enumerate(s.runs):
            body = r.text or r.output_tail or "(passed: no failure text)"
            out.append(f"--- {s.name} {s.variant} repeat {i + 1} (pytest exited "
                       f"{r.returncode}) ---\n{body}")
    return "\n\nEach run's failure text:\n\n" + "\n\n".join(out) + "\n"


def write(results: list[ShapeRuns], meta: dict[str, Any], text: str, out: Path,
          tag: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    corpus = "" if meta["corpus"] == "synthetic" else f"{meta['corpus']}_"
    stem = base = f"run_{corpus}{meta['date'].replace('-', '')}{'_' + tag if tag else ''}"
    # A record already written (an earlier run the same day, with the same tag) is kept.
    again = 1
    while any((out / f"{stem}.{ext}").exists() for ext in ("md", "txt", "json")):
        again += 1
        stem = f"{base}_{again}"
    (out / f"{stem}.md").write_text(text)
    (out / f"{stem}.txt").write_text(text + texts(results))
    raw = {"meta": meta, "shapes": [
        {"name": s.name, "variant": s.variant, "budget": s.budget, "truth_rise": s.truth_rise,
         "skipped": s.skipped,
         "runs": [{**r.score.to_dict(), "returncode": r.returncode, "wall": r.wall,
                   "plugin": r.plugin, "causes": r.causes} for r in s.runs]}
        for s in results]}
    (out / f"{stem}.json").write_text(json.dumps(raw, indent=1) + "\n")
    print(f"wrote {out / stem}.{{md,txt,json}}", flush=True)
