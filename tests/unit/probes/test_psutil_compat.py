"""Process memory through psutil, old names and new: psutil 5.9 to 7 (a stand-in and the
installed psutil) and 8.0's names (a stand-in), with every DeprecationWarning an error, as a
user's ``-W error`` makes it."""

from __future__ import annotations

import sys
import warnings

import psutil
import pytest
from support.fake_psutil import RSS, USS, Psutil7Process, Psutil8Process

from pytest_membudget.probes import psutil_compat, rss
from pytest_membudget.probes.psutil_compat import rss_reader, uss_reader, uss_unavailable

pytestmark = pytest.mark.filterwarnings("error::DeprecationWarning")


def test_psutil_8_stand_in_warns_on_the_names_it_deprecates() -> None:
    """The stand-in must warn where psutil 8.0 does, or the tests below could not fail."""
    process = Psutil8Process()
    with pytest.warns(DeprecationWarning, match="memory_footprint"):
        process.memory_full_info()
    with pytest.warns(DeprecationWarning, match="'dirty' field"):
        assert process.memory_info().dirty == 0
    with pytest.warns(DeprecationWarning, match="'wset' field"):
        assert process.memory_info().wset == RSS


def test_psutil_8_uss_comes_from_memory_footprint_without_a_warning() -> None:
    process = Psutil8Process()
    read = uss_reader(process)
    assert [read(), read()] == [USS, USS]
    assert process.calls["memory_footprint"] == 2
    assert process.calls["memory_full_info"] == 0


def test_psutil_7_uss_comes_from_memory_full_info() -> None:
    process = Psutil7Process()
    assert uss_reader(process)() == USS
    assert process.calls["memory_full_info"] == 1


@pytest.mark.parametrize("process_class", [Psutil7Process, Psutil8Process])
def test_rss_is_read_by_its_own_name_on_both(process_class: type) -> None:
    process = process_class()
    assert rss_reader(process)() == RSS
    assert process.calls["memory_info"] == 1


@pytest.mark.parametrize("process_class", [Psutil7Process, Psutil8Process])
def test_the_probes_read_through_the_adapter(process_class: type,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    process = process_class()
    monkeypatch.setattr(rss, "this_process", lambda: process)
    monkeypatch.setattr(rss, "has_procfs", lambda: False)  # RSS from psutil, as on macOS
    rss_probe, uss_probe = rss.RssProbe(), rss.UssProbe()
    rss_probe.start()
    uss_probe.start()
    assert (rss_probe.read(), uss_probe.read()) == (RSS, USS)
    rss_probe.stop()
    uss_probe.stop()


def test_uss_is_unavailable_where_psutil_cannot_read_it() -> None:
    assert uss_unavailable("linux") is None
    assert uss_unavailable("darwin") is None
    assert uss_unavailable("win32") is None
    reason = uss_unavailable("freebsd14")
    assert reason is not None
    assert "freebsd14" in reason and "'rss'" in reason


def test_the_uss_probe_is_skipped_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rss, "uss_unavailable", lambda: "no USS on this platform")
    assert rss.UssProbe().unavailable() == "no USS on this platform"


@pytest.mark.skipif(not sys.platform.startswith(psutil_compat.USS_PLATFORMS),
                    reason=f"psutil reads no USS on {sys.platform}")
def test_the_installed_psutil_reads_without_a_warning() -> None:
    """Whichever psutil is installed (CI runs 5.9 on Python 3.10, the newest elsewhere)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        process = psutil.Process()
        resident = rss_reader(process)()
        unique = uss_reader(process)()
    assert unique > 0
    # Private pages are a part of the resident ones (a little slack: the reads are apart).
    assert unique <= resident + 16 * 1024**2
