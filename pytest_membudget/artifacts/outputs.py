"""Session-level outputs on the controller: JSON report, baselines, comparison, plots.

Everything here runs in the process that receives the test reports (the controller under
pytest-xdist) and works from the reports' plain dicts, so every worker's tests are covered.
Problems with files are found in pytest_configure where possible (a usage error before any
test runs); what can only fail at the end is printed and sets the exit status.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_membudget.artifacts import document
from pytest_membudget.artifacts import files as storage
from pytest_membudget.distributed import is_worker
from pytest_membudget.judge.regression import Comparison, compare
from pytest_membudget.judge.spec import SpecError, parse_bool
from pytest_membudget.judge.tolerance import ToleranceError, Tolerances, parse_tolerances
from pytest_membudget.render.comparison import comparison_lines
from pytest_membudget.settings import option_by_key, raw_value
from pytest_membudget.vocabulary import SweepMode

if TYPE_CHECKING:  # types only
    from pytest_membudget.measure.records import ResultRecord
    from pytest_membudget.sweep.outcome import SweepRecord

#: Exit status when a report, baseline or plot could not be written at the end of a run
#: that had otherwise passed (a problem of paths or permissions, as with a usage error).
WRITE_FAILED = pytest.ExitCode.USAGE_ERROR
CUDA_FACT = "membudget_cuda_device"


@dataclass(frozen=True)
class OutputSettings:
    json_path: Path | None
    json_samples: bool
    storage: Path
    save: str | None
    autosave: bool
    save_overwrite: bool
    compare: str | None
    policy: Tolerances
    plot_dir: Path | None

    @property
    def active(self) -> bool:
        return bool(self.json_path or self.save or self.autosave or self.compare is not None
                    or self.plot_dir)


def _raw(config: pytest.Config, key: str) -> tuple[Any, str]:
    return raw_value(config, option_by_key(key))


def _path(config: pytest.Config, key: str) -> Path | None:
    """Paths from a flag are relative to the invocation directory, from the ini or the
    default to the rootdir, so that a run from a subdirectory finds the same files."""
    value, _ = _raw(config, key)
    if not value:
        return None
    from_flag = config.getoption(option_by_key(key).ini, default=None) is not None
    base = config.invocation_params.dir if from_flag else config.rootpath
    return (base / Path(value).expanduser()).resolve()


def resolve(config: pytest.Config) -> OutputSettings:
    try:
        flags = {key: parse_bool(key, *_raw(config, key))
                 for key in ("json_samples", "autosave", "save_overwrite")}
        lines, where = _raw(config, "compare_fail")
        policy = parse_tolerances(lines, where)
    except (SpecError, ToleranceError) as exc:
        raise pytest.UsageError(f"pytest-membudget: {exc}") from None
    compare_name, _ = _raw(config, "compare")
    if config.getoption(option_by_key("compare_fail").ini, default=None) and compare_name is None:
        raise pytest.UsageError(
            "pytest-membudget: --membudget-compare-fail sets the tolerances of "
            "--membudget-compare, which is not given; add --membudget-compare (the latest "
            "baseline saved on this machine) or --membudget-compare=NAME")
    return OutputSettings(
        json_path=_path(config, "json"), json_samples=flags["json_samples"],
        storage=_path(config, "storage") or config.rootpath / ".membudget",
        save=_raw(config, "save")[0] or None, autosave=flags["autosave"],
        save_overwrite=flags["save_overwrite"], compare=compare_name, policy=policy,
        plot_dir=_path(config, "plot"))


#: The sweep's mode and its records (test -> outcome dict), when the sweep is on.
SweepRecords = tuple[SweepMode, dict[str, "SweepRecord"]]


def configure(config: pytest.Config, results: list[tuple[str, ResultRecord]],
              sweep: SweepRecords | None = None) -> None:
    """Check every output before the first test; register the controller's plugin."""
    gating = resolve(config)
    if not gating.active:
        return
    if is_worker(config):  # pytest-xdist worker: the controller writes
        config.pluginmanager.register(WorkerFacts(config), "membudget-worker-facts")
        return
    config.pluginmanager.register(Gate(config, gating, results, sweep), "membudget-gate")


class WorkerFacts:
    """Facts only a worker knows (it imported the tests, and so torch), for the controller."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_sessionfinish(self) -> None:
        output: dict[str, Any] = getattr(self.config, "workeroutput", {})
        output[CUDA_FACT] = document.cuda_device()


def _usage(error: storage.ReportFileError) -> pytest.UsageError:
    return pytest.UsageError(f"pytest-membudget: {error}")


class Gate:
    def __init__(self, config: pytest.Config, gating: OutputSettings,
                 results: list[tuple[str, ResultRecord]],
                 sweep: SweepRecords | None = None) -> None:
        from pytest_membudget.render.plots import missing_matplotlib

        self.config, self.gating, self.results = config, gating, results
        self.sweep = sweep
        self.outcomes: dict[str, str] = {}
        self.worker_cuda: str | None = None
        self.lines: list[str] = []
        self.problems: list[str] = []
        self.comparison: Comparison | None = None
        self.machine = document.machine()
        self.fingerprint = str(self.machine["fingerprint"])
        if gating.plot_dir is not None:
            reason = missing_matplotlib("--membudget-plot")
            if reason:
                raise pytest.UsageError(f"pytest-membudget: {reason}")
        if gating.json_path is not None and gating.json_path.is_dir():
            raise pytest.UsageError(f"pytest-membudget: --membudget-json: {gating.json_path} "
                                    "is a directory; give the path of a file to write")
        if gating.plot_dir is not None and gating.plot_dir.is_file():
            raise pytest.UsageError(f"pytest-membudget: --membudget-plot: {gating.plot_dir} "
                                    "is a file; give a directory for the PNG files")
        self.baseline: document.Document | None = None
        self.baseline_path: Path | None = None
        try:
            if gating.save:
                storage.check_save(gating.storage, self.fingerprint, gating.save,
                                   overwrite=gating.save_overwrite)
            if gating.compare is not None:
                self.baseline_path = storage.find_baseline(
                    gating.storage, self.fingerprint, gating.compare or None)
                self.baseline = storage.read_document(self.baseline_path)
        except storage.ReportFileError as exc:
            raise _usage(exc) from None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.outcomes[report.nodeid] = report.outcome

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        self.worker_cuda = self.worker_cuda or output.get(CUDA_FACT)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        full = document.build_document(
            self.results, self.outcomes, samples=True, exitstatus=int(session.exitstatus),
            machine_facts={**self.machine,
                           # Known now that the tests may have imported torch.
                           "cuda_device": document.cuda_device() or self.worker_cuda})
        if self.sweep is not None:
            from pytest_membudget.sweep.table import sweep_document

            full["sweep"] = sweep_document(self.sweep[1], self.sweep[0])
        kept = full if self.gating.json_samples else document.without_samples(full)
        for step in (self._write_json, self._save, self._plot):
            try:
                step(full, kept)
            except storage.ReportFileError as exc:
                self.problems.append(str(exc))
            except OSError as exc:
                self.problems.append(f"{step.__name__.strip('_')}: {exc}")
        if self.baseline is not None and self.baseline_path is not None:
            self.comparison = compare(self.baseline, full, self.gating.policy)
            other = self.baseline.get("machine", {}).get("fingerprint")
            if other != self.fingerprint:
                self.lines.append(f"membudget: note: the baseline comes from another machine "
                                  f"({other}, this one is {self.fingerprint}); slopes may "
                                  "differ for that reason alone")
            verbose = self.config.get_verbosity() > 0
            self.lines += comparison_lines(self.comparison, self.baseline_path, verbose=verbose)
            if self.comparison.regressions and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.problems and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = WRITE_FAILED

    def _write_json(self, full: document.Document, kept: document.Document) -> None:
        if self.gating.json_path is not None:
            storage.write_json(self.gating.json_path, kept)
            self.lines.append(f"membudget: wrote {len(kept['tests'])} budgeted test(s) to "
                              f"{self.gating.json_path}")

    def _save(self, full: document.Document, kept: document.Document) -> None:
        gating = self.gating
        if gating.save:
            path = storage.check_save(gating.storage, self.fingerprint, gating.save,
                                      overwrite=gating.save_overwrite)
        elif gating.autosave:
            path = storage.autosave_path(gating.storage, self.fingerprint)
        else:
            return
        storage.write_json(path, {**kept, "name": path.stem})
        self.lines.append(f"membudget: saved baseline {path.stem!r} ({len(kept['tests'])} "
                          f"test(s)) to {path}")

    def _plot(self, full: document.Document, kept: document.Document) -> None:
        if self.gating.plot_dir is not None:
            from pytest_membudget.render.plots import plot_all

            written = plot_all(full["tests"], self.gating.plot_dir)
            self.lines.append(f"membudget: wrote {len(written)} plot(s) to "
                              f"{self.gating.plot_dir}")

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not (self.lines or self.problems):
            return
        terminalreporter.write_sep("-", "membudget gating")
        for line in self.lines:
            terminalreporter.write_line(line)
        for line in self.problems:
            terminalreporter.write_line(f"membudget error: {line}", red=True, bold=True)

