"""A check of ``scoring.py`` on a hand-made report (``sample_report.json``, in the shape the
plugin's ``--membudget-json`` writes) and of ``failure_text.py`` on pytest's output of two
footprint failures (``sample_failure.txt``), kept beside the benchmark rather than in the plugin's
test suite. Run it with ``python bench/footprint/scoring_check.py`` (or name the file to
pytest)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import failure_text  # noqa: E402 - the folder above is not a package
import scoring  # noqa: E402
import shapes  # noqa: E402

MiB = 1 << 20


def expected(name: str) -> scoring.Expected:
    chosen = shapes.SHAPES[name]
    source, lines = chosen.peak_lines()
    return scoring.Expected(chosen.fails, chosen.kind, chosen.state, source, tuple(lines))


def sample() -> dict[str, dict[str, Any]]:
    """The sample report's tests by shape name, with the placeholders for shapes.py's path
    and the numpy temporary's first peak line filled in."""
    source, lines = shapes.SHAPES["numpy_temporary"].peak_lines()
    cache_line = shapes.SHAPES["small_array_cache"].peak_lines()[1][0]
    text = (HERE / "sample_report.json").read_text()
    text = text.replace("{shapes}", source).replace('"{numpy_temporary}"', str(lines[0]))
    text = text.replace('"{small_array_cache}"', str(cache_line))
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


def test_the_rise_is_right_within_5_percent_of_the_measured_call() -> None:
    close = dataclasses.replace(expected("numpy_temporary"), truth_rise=152 * MiB)
    assert scoring.score_result(sample()["numpy_temporary"], close).rise_right is True
    far = dataclasses.replace(expected("numpy_temporary"), truth_rise=140 * MiB)
    assert scoring.score_result(sample()["numpy_temporary"], far).rise_right is False
    assert scoring.score_result(sample()["numpy_temporary"],
                                expected("numpy_temporary")).rise_right is None


def test_shares_over_100_percent_or_not_adding_up_score_wrong() -> None:
    right = scoring.score_result(sample()["numpy_temporary"], expected("numpy_temporary"))
    assert right.shares_right is True and right.shares.startswith("sum 99%")
    over = scoring.score_result(sample()["million_dicts"], expected("million_dicts"))
    assert over.shares_right is False and "python 109%" in over.shares
    assert over.evidence_seconds == 1.4


def test_a_stopped_run_names_its_line_and_no_kind_or_state() -> None:
    score = scoring.score_result(sample()["small_array_cache"], expected("small_array_cache"))
    assert score.stopped is True and score.verdict == "F" and score.verdict_right is True
    assert score.line_right is True
    assert score.kind_right is False and score.state_right is False
    assert any("stopped at the hard ceiling of 195 MiB" in note for note in score.notes)
    assert scoring.score_result(sample()["clean"], expected("clean")).stopped is False


def test_a_failure_text_gives_one_line_per_cause() -> None:
    output = (HERE / "sample_failure.txt").read_text()
    text = failure_text.failure_section(output, "test_w1")
    assert text.startswith("membudget = <membudget")
    found = failure_text.causes(text)
    assert found["header"].startswith("1 iteration measured after 1 warm-up")
    assert found["rise"].startswith("- rss rose 99.8 MiB above its start")
    assert found["made_of"].endswith("native heap in use 98 MiB (100%)")
    assert found["first_line"].startswith("test_x.py:5: 100 MiB in 4 blocks, transient")
    assert found["evidence"].startswith("Evidence at the peak (one more call, traced; 0.45 s)")
    stopped = failure_text.causes(failure_text.failure_section(output, "test_stop"))
    assert "was stopped: RSS rose 89.2 MiB" in stopped["stop"] and stopped["rise"] == ""
    assert stopped["first_line"] == "test_x.py:10: 89.2 MiB"


def main() -> int:
    checks = [value for name, value in globals().items() if name.startswith("test_")]
    for check in checks:
        check()
    print(f"scoring: {len(checks)} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
