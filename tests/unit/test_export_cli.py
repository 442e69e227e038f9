"""``membudget export``: where the output goes, what is refused, exit status 0 or 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.dashboard_formats import bmf_problems, custom_benchmark_problems

from pytest_membudget.artifacts import files as storage
from pytest_membudget.artifacts.document import build_document
from pytest_membudget.cli import main

FACTS = {"fingerprint": "Linux-x86_64-CPython-3.11-2cpu", "cuda_device": None}


def write_report(path: Path, *, name: str | None = None, finished: bool = True) -> str:
    probe = {"unit": "B", "slope": 12.0, "ci": [8.0, 30.0], "peak": 2e7, "growth": 0.0,
             "verdict": "pass", "budgets": {"slope": 4096.0}}
    data: dict[str, Any] = {"passed": True, "complete": finished, "iterations": 640,
                            "warmup": 5, "stopped": "clear" if finished else "running",
                            "probes": {"rss": probe}}
    storage.write_json(path, build_document([("t.py::test_loop", data)], {}, samples=False,
                                            name=name, machine_facts=FACTS))
    return str(path)


def test_standard_output_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = write_report(tmp_path / "r.json")
    assert main(["export", report, "--format", "bencher"]) == 0
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert bmf_problems(data) == []
    assert data["t.py::test_loop"]["rss slope (B/iter)"]["upper_value"] == 30.0
    assert out.err == ""
    assert main(["export", report, "--format", "github-action-benchmark", "--out", "-"]) == 0
    assert custom_benchmark_problems(json.loads(capsys.readouterr().out)) == []


def test_a_saved_baseline_exports_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = write_report(tmp_path / ".membudget" / FACTS["fingerprint"] / "main.json",
                            name="main")
    out = tmp_path / "gab.json"
    assert main(["export", baseline, "--format", "github-action-benchmark", "--out",
                 str(out)]) == 0
    assert "wrote 1 figure(s) in the github-action-benchmark format" in capsys.readouterr().err
    entries = json.loads(out.read_text())
    assert custom_benchmark_problems(entries) == []
    assert entries[0]["name"] == "t.py::test_loop - rss slope"


def test_an_existing_file_is_kept_unless_overwrite(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    report = write_report(tmp_path / "r.json")
    out = tmp_path / "bmf.json"
    out.write_text("precious")
    assert main(["export", report, "--format", "bencher", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_text() == "precious"
    assert main(["export", report, "--format", "bencher", "--out", str(out),
                 "--overwrite"]) == 0
    assert bmf_problems(json.loads(out.read_text())) == []


def test_the_report_itself_is_never_overwritten(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    report = write_report(tmp_path / "r.json")
    before = Path(report).read_text()
    assert main(["export", report, "--format", "bencher", "--out", report, "--overwrite"]) == 2
    assert "is the report being exported" in capsys.readouterr().err
    assert Path(report).read_text() == before


def test_a_directory_is_not_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = write_report(tmp_path / "r.json")
    assert main(["export", report, "--format", "bencher", "--out", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_nothing_to_export_is_bad_input(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    report = write_report(tmp_path / "r.json", finished=False)
    out = tmp_path / "bmf.json"
    assert main(["export", report, "--format", "bencher", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "left out t.py::test_loop: its run did not finish" in err
    assert "holds no measured figure to export" in err and not out.exists()


@pytest.mark.parametrize("args", [["--format", "csv"], []])
def test_a_format_is_required_and_known(tmp_path: Path, args: list[str],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    report = write_report(tmp_path / "r.json")
    with pytest.raises(SystemExit) as exit_info:
        main(["export", report, *args])
    assert exit_info.value.code == 2
    assert "--format" in capsys.readouterr().err


def test_a_foreign_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}')
    assert main(["export", str(other), "--format", "bencher"]) == 2
    assert "is not a pytest-membudget report" in capsys.readouterr().err
