"""JUnit XML properties of a test's result (pytest's ``user_properties``): readable figures
for CI systems that show them, from the result's record."""

from __future__ import annotations

from pytest_membudget.measure.records import ResultRecord
from pytest_membudget.render.footprint import kinds_line, line_summary
from pytest_membudget.render.session import inconclusive_reasons, note_reasons, peak_text
from pytest_membudget.render.units import budget_text, fmt, slope_text
from pytest_membudget.vocabulary import ProbeVerdict, StopReason


def junit_properties(data: ResultRecord) -> list[tuple[str, str]]:
    """Readable per-test properties for JUnit XML (user_properties), one set per probe:
    ``membudget.rss.slope = 198 B/iter [152 B/iter, 220 B/iter]`` and so on."""
    verdicts = [p.get("verdict") for p in data.get("probes", {}).values()]
    overall = (ProbeVerdict.STOPPED if data.get("stopped") == StopReason.CEILING else
               ProbeVerdict.FAIL if not data.get("passed", True) else
               StopReason.DISABLED if data.get("stopped") == StopReason.DISABLED else
               ProbeVerdict.INCONCLUSIVE if ProbeVerdict.INCONCLUSIVE in verdicts
               else ProbeVerdict.PASS).value
    props = [("membudget.verdict", overall),
             ("membudget.iterations", f"{data.get('iterations')} after {data.get('warmup')} "
                                      f"warm-up ({data.get('stopped')})")]
    props += [("membudget.inconclusive", line) for line in inconclusive_reasons(data)]
    props += [("membudget.note", line) for line in note_reasons(data.get("notes", ()))]
    props += footprint_properties(data)
    for name, probe in data.get("probes", {}).items():
        props += [
            (f"membudget.{name}.slope", slope_text(name, probe.get("slope"), probe.get("ci"))),
            (f"membudget.{name}.budget", budget_text(name, probe.get("budgets", {}))),
            (f"membudget.{name}.peak", peak_text(name, probe)),
            (f"membudget.{name}.verdict", str(probe.get("verdict"))),
        ]
    return props


def footprint_properties(data: ResultRecord) -> list[tuple[str, str]]:
    """The evidence at a failing peak (its first lines and what the rise was made of) and
    every phase, as readable properties."""
    props = []
    evidence = data.get("peak_evidence") or {}
    for entry in evidence.get("lines", [])[:3]:
        props.append(("membudget.peak.line", line_summary(entry)))
    found = evidence.get("composition")
    if found:
        props.append(("membudget.peak.made_of", kinds_line(found.get("kinds", {}),
                                                           found.get("rise"))))
    for phase in data.get("phases", []):
        props.append((f"membudget.phase.{phase['name']}",
                      f"rise {fmt('rss', phase.get('rise'))}, left "
                      f"{fmt('rss', phase.get('left'))}, {phase.get('verdict')}"))
    return props
