"""``membudget merge``: shards in, one report (or baseline) out; exit status 0 or 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_membudget.artifacts import files as storage
from pytest_membudget.artifacts.document import build_document
from pytest_membudget.cli import main

FACTS = {"fingerprint": "Linux-x86_64-CPython-3.11-2cpu", "cuda_device": None}


def shard(path: Path, *tests: str, fingerprint: str = FACTS["fingerprint"]) -> str:
    data = {"passed": True, "iterations": 40, "warmup": 2, "stopped": "fixed",
            "probes": {"rss": {"slope": 5.0, "ci": [0.0, 10.0], "peak": 1e6, "growth": 0.0,
                               "verdict": "pass", "budgets": {"slope": 4096.0}}}}
    storage.write_json(path, build_document([(t, data) for t in tests], {}, samples=False,
                                            machine_facts={**FACTS, "fingerprint": fingerprint}))
    return str(path)


def read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.fixture
def shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "shards").mkdir()
    for i, tests in enumerate((["a.py::t1", "a.py::t2"], ["b.py::t3"], ["c.py::t4"]), 1):
        shard(tmp_path / "shards" / f"membudget-{i}.json", *tests)
    return tmp_path


def test_a_glob_makes_one_report_that_show_and_compare_take(
        shards: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["merge", "shards/*.json", "-o", "all.json"]) == 0
    assert "merged 3 report(s), 4 budgeted test(s), into all.json" in capsys.readouterr().err
    merged = read(shards / "all.json")
    assert sorted(merged["tests"]) == ["a.py::t1", "a.py::t2", "b.py::t3", "c.py::t4"]
    assert main(["show", "all.json"]) == 0
    out = capsys.readouterr().out
    assert "merged from 3 shard(s): shards/membudget-1.json (2 test(s))" in out
    assert "4 budgeted test(s): 4 within budget" in out
    assert main(["compare", "all.json", "all.json"]) == 0
    assert main(["export", "all.json", "--format", "bencher"]) == 0


def test_save_makes_a_baseline_under_the_reports_machine(
        shards: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["merge", "shards/membudget-1.json", "shards/membudget-2.json",
                 "shards/membudget-3.json", "--save", "main", "--storage", "baselines"]) == 0
    path = shards / "baselines" / FACTS["fingerprint"] / "main.json"
    assert read(path)["name"] == "main" and len(read(path)["tests"]) == 4
    assert main(["merge", "shards/*.json", "--save", "main", "--storage", "baselines"]) == 2
    err = capsys.readouterr().err
    assert "a baseline named 'main' already exists" in err and "add --overwrite" in err
    assert main(["merge", "shards/*.json", "--save", "main", "--storage", "baselines",
                 "--overwrite"]) == 0


@pytest.mark.parametrize(("extra", "args", "message"), [
    ("other-machine", ["shards/*.json", "other.json", "-o", "all.json"],
     "machine fingerprint differs"),
    ("duplicate", ["shards/*.json", "other.json", "-o", "all.json"],
     "1 test(s) appear in more than one shard: b.py::t3 (in shards/membudget-2.json and "
     "other.json)"),
    (None, ["shards/*.json"], "say where the merged report goes"),
    (None, ["shards/*.json", "-o", "shards/membudget-1.json", "--overwrite"],
     "is one of the reports being merged"),
    (None, ["missing/*.json", "-o", "all.json"], "no file matches 'missing/*.json'"),
    (None, ["gone.json", "-o", "all.json"], "gone.json does not exist"),
    ("not-ours", ["shards/*.json", "other.json", "-o", "all.json"],
     "is not a pytest-membudget report"),
    (None, ["shards/*.json", "--save", "../up"], "baseline name '../up' from --save"),
])
def test_what_cannot_be_merged_is_status_2_and_writes_nothing(
        shards: Path, capsys: pytest.CaptureFixture[str], extra: str | None,
        args: list[str], message: str) -> None:
    if extra == "other-machine":
        shard(shards / "other.json", "d.py::t5", fingerprint="Linux-aarch64-CPython-3.11-2cpu")
    elif extra == "duplicate":
        shard(shards / "other.json", "b.py::t3")
    elif extra == "not-ours":
        (shards / "other.json").write_text('{"benchmarks": []}')
    before = sorted(p.name for p in shards.rglob("*"))
    assert main(["merge", *args]) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in shards.rglob("*")) == before


def test_an_existing_out_is_kept_unless_overwrite(shards: Path) -> None:
    (shards / "all.json").write_text("keep")
    assert main(["merge", "shards/*.json", "-o", "all.json"]) == 2
    assert (shards / "all.json").read_text() == "keep"
    assert main(["merge", "shards/*.json", "-o", "all.json", "--overwrite"]) == 0
    assert len(read(shards / "all.json")["tests"]) == 4
