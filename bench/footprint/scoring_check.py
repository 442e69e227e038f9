"""A check of ``scoring.py`` on a hand-made report (``sample_report.json``, in the shape the
plugin's ``--membudget-json`` writes), kept beside the benchmark rather than in the plugin's
test suite. Run it with ``python bench/footprint/scoring_check.py`` (or name the file to
pytest)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scoring  # noqa: E402 - the folder above is not a package
import shapes  # noqa: E402


def expected(name: str) -> scoring.Expected:
    chosen = shapes.SHAPES[name]
    source, lines = chosen.peak_lines()
    return scoring.Expected(chosen.fails, chosen.kind, chosen.state, source, tuple(lines))


def sample() -> dict[str, dict[str, Any]]:
    """The sample report's tests by shape name, with the placeholders for shapes.py's path
    and the numpy temporary's first peak line filled in."""
    source, lines = shapes.SHAPES["numpy_temporary"].peak_lines()
    text = (HERE / "sample_report.json").read_text()
    text = text.replace("{shapes}", source).replace('"{numpy_temporary}"', str(lines[0]))
    document = json.loads(text)
    return {entry["nodeid"].split("::test_")[1]: entry for entry in scoring.tests_of(document)}


def test_a_library_line_is_scored_by_the_user_line_that_called_it() -> None:
    score = scoring.score_result(sample()["numpy_temporary"], expected("numpy_temporary"))
    assert (score.verdict, score.verdict_right) == ("F", True)
    assert score.line_right is True and score.line_named.startswith("shapes.py:")
    assert (score.kind_named, score.kind_right, score.kind_bytes) == ("python", True,
                                                                      155099136.0)
    assert (score.state_named, score.state_right) == ("transient", True)
    assert (score.rise, score.evidence_seconds) == (157110272.0, 0.06)


def test_a_wrong_line_kind_and_state_score_wrong_and_a_missing_rise_is_computed() -> None:
    score = scoring.score_result(sample()["torch_step"], expected("torch_step"))
    assert score.verdict_right is True
    assert score.line_right is False and score.line_named == "shapes.py:2"
    assert (score.kind_named, score.kind_right) == ("python", False)
    assert score.state_right is False
    assert score.rise == 140000000.0


def test_missing_evidence_keys_score_wrong_with_the_reason() -> None:
    score = scoring.score_result(sample()["mapped_file"], expected("mapped_file"))
    assert score.line_right is False and score.kind_right is False
    assert "peak_evidence has no lines" in score.notes
    assert "peak_evidence has no composition.dominant" in score.notes
    assert score.state_right is False
    threads = scoring.score_result(sample()["idle_threads"], expected("idle_threads"))
    assert threads.line_right is False and "failed without peak_evidence" in threads.notes


def test_a_passing_clean_case_is_right_and_has_nothing_to_grade() -> None:
    score = scoring.score_result(sample()["clean"], expected("clean"))
    assert (score.verdict, score.verdict_right) == (".", True)
    assert score.line_right is None and score.kind_right is None


def test_a_failing_clean_case_or_a_passing_shape_is_a_wrong_verdict() -> None:
    clean = dict(sample()["clean"], passed=False)
    assert scoring.score_result(clean, expected("clean")).verdict_right is False
    passing = dict(sample()["numpy_temporary"], passed=True)
    assert scoring.score_result(passing, expected("numpy_temporary")).verdict_right is False


def test_no_result_and_a_list_of_tests_are_read() -> None:
    assert scoring.score_result(None, expected("clean")).verdict == "E"
    listed = scoring.tests_of({"tests": [{"passed": True}]})
    assert listed == [{"passed": True}]
    assert scoring.tests_of({}) == []


def main() -> int:
    checks = [value for name, value in globals().items() if name.startswith("test_")]
    for check in checks:
        check()
    print(f"scoring: {len(checks)} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
