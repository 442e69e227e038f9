"""What the sweep's screen asks of its probes: values alone (no RSS peak, no free memory handed
back where ``malloc`` sees its reuse), and the OS-resource probes without a psutil handle
where /proc is there."""

from __future__ import annotations

import os

import psutil
import pytest

from pytest_membudget.measure.loop import open_measurement
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.probes import create, osres, rss
from pytest_membudget.settings import default_run
from pytest_membudget.sweep.driver import ScreenMeasurement, screen_spec


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the RSS probe's hand-back of free memory and its reset of the peak mark."""
    made: list[str] = []
    monkeypatch.setattr(rss, "release_free_memory", lambda: made.append("trim"))

    def reset() -> None:
        made.append("reset")

    monkeypatch.setattr(rss, "open_peak_mark", reset)
    return made


def run_rss(options: dict[str, object]) -> rss.RssProbe:
    probe = create("rss", options)
    assert isinstance(probe, rss.RssProbe)
    probe.start()
    probe.before_window()
    return probe


def test_a_screen_reading_malloc_keeps_no_peak_and_hands_back_no_free_memory(
        calls: list[str]) -> None:
    probe = run_rss(ScreenMeasurement.probe_options(("py_blocks", "malloc", "rss")))
    assert calls == [] and probe.peak() is None
    probe.stop()


def test_a_screen_without_malloc_still_hands_free_memory_back(calls: list[str]) -> None:
    # Without glibc's exact count, RSS is what sees growth that reuses free memory.
    run_rss(ScreenMeasurement.probe_options(("py_blocks", "rss"))).stop()
    assert calls == ["trim"]


def test_every_other_run_resets_the_peak_and_hands_free_memory_back(calls: list[str]) -> None:
    run_rss(Measurement.probe_options(("rss",))).stop()
    # Before the start's reading (a rise is measured from it) and before the window.
    assert calls == ["trim", "reset", "trim"]


def test_the_storage_gives_its_options_to_the_probes_it_opens() -> None:
    spec = screen_spec(default_run())
    screen = open_measurement(spec, ("malloc", "rss"), ScreenMeasurement)
    plain = open_measurement(spec, ("malloc", "rss"), Measurement)
    assert screen.probes["rss"].options["peaks"] is False
    assert "peaks" not in plain.probes["rss"].options


def test_threads_and_descriptors_read_through_psutil_without_proc(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(osres, "has_procfs", lambda: False)
    monkeypatch.setattr(os.path, "isdir", lambda path: False)
    threads, fds = osres.ThreadsProbe(), osres.FdsProbe()
    threads.start()
    fds.start()
    process = psutil.Process()
    assert threads.read() == process.num_threads()
    if hasattr(process, "num_fds"):
        assert fds.read() == process.num_fds()
    threads.stop()
    fds.stop()


def test_with_proc_they_make_no_psutil_handle(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (osres.has_procfs() and os.path.isdir("/proc/self/fd")):
        pytest.skip("needs /proc")

    def refuse() -> None:
        raise AssertionError("a psutil handle was made")

    monkeypatch.setattr(psutil, "Process", refuse)
    threads, fds = osres.ThreadsProbe(), osres.FdsProbe()
    threads.start()
    fds.start()
    assert threads.read() >= 1 and fds.read() >= 1
    threads.stop()
