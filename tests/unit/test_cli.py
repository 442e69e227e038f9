"""The membudget command: show, compare, plot; exit status 0, 1 or 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_membudget.artifacts import files as storage
from pytest_membudget.artifacts.document import build_document
from pytest_membudget.cli import main

FACTS = {"fingerprint": "Linux-x86_64-CPython-3.11-2cpu", "cuda_device": None}


def report(tmp_path: Path, name: str, rss_ci: list[float], samples: bool = False) -> str:
    slope = sum(rss_ci) / 2
    probe = {"slope": slope, "ci": rss_ci, "peak": 1e6, "growth": 39 * slope,
             "verdict": "pass", "budgets": {"slope": 4096.0}}
    if samples:
        probe |= {"samples": [1e6 + i * 10.0 for i in range(40)],
                  "sample_iterations": list(range(40))}
    data = {"passed": True, "iterations": 39, "warmup": 2, "stopped": "fixed",
            "probes": {"rss": probe}}
    path = tmp_path / f"{name}.json"
    storage.write_json(path, build_document([("t.py::test_loop", data)], {}, samples=samples,
                                            machine_facts=FACTS))
    return str(path)


def test_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", report(tmp_path, "run", [0.0, 10.0])]) == 0
    out = capsys.readouterr().out
    assert "machine Linux-x86_64-CPython-3.11-2cpu" in out
    assert "1 budgeted test(s): 1 within budget" in out
    assert "t.py::test_loop" in out and "4 KiB/iter" in out


def test_compare_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = report(tmp_path, "base", [0.0, 10.0])
    worse = report(tmp_path, "worse", [50_000.0, 70_000.0])  # 2.3 MiB more over 39 calls
    assert main(["compare", base, worse]) == 1
    out = capsys.readouterr().out
    assert "MEMORY REGRESSIONS" in out and "t.py::test_loop" in out and "regressed" in out
    assert main(["compare", base, worse, "--fail", "rss:64 KiB/iter"]) == 0
    assert "0 regressed, 1 worse within tolerance" in capsys.readouterr().out
    assert main(["compare", base, base]) == 0


@pytest.mark.parametrize("bad", ["missing", "corrupt", "foreign", "tolerance"])
def test_compare_bad_input_is_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       bad: str) -> None:
    base = report(tmp_path, "base", [0.0, 10.0])
    other = tmp_path / "other.json"
    other.write_text({"corrupt": "{", "foreign": '{"a": 1}'}.get(bad, "{}"))
    args = ["compare", base, str(other if bad in ("corrupt", "foreign")
                                 else tmp_path / "nope.json" if bad == "missing" else base)]
    if bad == "tolerance":
        args += ["--fail", "rss:lots"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("membudget: error: ")
    assert ("rss:lots" if bad == "tolerance" else "other.json" if bad != "missing"
            else "nope.json") in err


def test_argparse_errors_are_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["plot", "x.json"])  # --out is required
    assert info.value.code == 2


def test_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    without = report(tmp_path, "plain", [0.0, 10.0])
    assert main(["plot", without, "--out", str(tmp_path / "png")]) == 2
    assert "--membudget-json-samples" in capsys.readouterr().err
    with_samples = report(tmp_path, "full", [0.0, 10.0], samples=True)
    assert main(["plot", with_samples, "--out", str(tmp_path / "png")]) == 0
    assert len(list((tmp_path / "png").glob("*.png"))) == 1


def test_plot_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    path = report(tmp_path, "full", [0.0, 10.0], samples=True)
    assert main(["plot", path, "--out", str(tmp_path / "png")]) == 2
    assert "pytest-membudget[plot]" in capsys.readouterr().err


def test_module_and_console_script_in_subprocesses(tmp_path: Path) -> None:
    base = report(tmp_path, "base", [0.0, 10.0])
    worse = report(tmp_path, "worse", [50_000.0, 70_000.0])  # 2.3 MiB more over 39 calls
    run = subprocess.run([sys.executable, "-m", "pytest_membudget", "compare", base, worse],
                         capture_output=True, text=True)
    assert run.returncode == 1 and "regressed" in run.stdout
    script = shutil.which("membudget", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the membudget console script is not installed (pip install -e .)")
    shown = subprocess.run([script, "show", base], capture_output=True, text=True)
    assert shown.returncode == 0 and json.loads(Path(base).read_text())["tests"]
    assert "t.py::test_loop" in shown.stdout


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"membudget {version('pytest-membudget')}"
