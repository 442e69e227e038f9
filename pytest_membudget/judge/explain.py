"""What the evidence's facts change in a verdict: growth that bounded caches still filling
hold is no leak yet."""

from __future__ import annotations

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.verdict import AMBIGUOUS, FAIL, Outcome, ProbeJudgement, Verdict
from pytest_membudget.vocabulary import BudgetKind


def held_by_caches(verdict: Verdict, python_explains: bool | None) -> Verdict:
    """A failure whose growth the evidence found held by bounded caches still filling (every
    retaining path runs through one) turns inconclusive: the growth stops when they are full.
    Only probes whose growth the traced rerun explains (catalog ``traced_evidence``) are held;
    a probe that sees native memory beside Python's (catalog ``python_share``) stays failed
    when the traced growth does not explain its slope (native growth beside the cache). The
    failing slope budgets of the held probes turn ambiguous (a finished run reports them
    inconclusive, with the cache); ``Verdict.held`` names them."""
    held = sorted(name for name, p in verdict.probes.items()
                  if p.failed and PROBES[name].traced_evidence
                  and not (PROBES[name].python_share and python_explains is False))
    if not held:
        return verdict
    changed = dict(verdict.probes)
    for name in held:
        judgement = changed[name]
        outcomes = tuple(
            Outcome(o.budget, AMBIGUOUS, o.measured)
            if o.status is FAIL and o.budget.kind is BudgetKind.SLOPE else o
            for o in judgement.outcomes)
        changed[name] = ProbeJudgement(name, judgement.trend, judgement.peak, outcomes)
    return Verdict(changed, held=tuple(held))
