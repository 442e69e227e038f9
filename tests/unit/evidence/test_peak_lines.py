"""The live set at the peak by the user's line: library lines merged under the user's, the
watch's rise by line beside the census, retained or transient."""

from __future__ import annotations

from dataclasses import replace

from pytest_membudget.evidence.composition import MemoryReading
from pytest_membudget.evidence.peak import merge, peak_report, shown, state, user_line
from pytest_membudget.render.footprint import peak_lines

MIB = 1024.0**2

NP = "/venv/site-packages/numpy/_core/numeric.py"


def traced(file: str, line: int, size: int, kept: int, via: tuple[str, int] | None = None
           ) -> dict:
    entry = {"file": file, "line": line, "bytes": size, "count": 1, "retained": kept,
             "state": state(size, kept), "source": "traced"}
    if via:
        entry.update(via_file=via[0], via_line=via[1])
    return entry


def test_state_says_how_much_outlived_the_call() -> None:
    assert state(100, 95) == "retained"
    assert state(100, 5) == "transient"
    assert state(100, 50) == "partly retained"


def test_library_lines_under_one_user_line_are_one_entry() -> None:
    # numpy's ones: empty() allocates the buffer, copyto() a few bytes.
    lines = merge([traced(NP, 232, 160_000_000, 0, ("/t.py", 6)),
                   traced(NP, 233, 104, 0, ("/t.py", 6))], [])
    assert len(lines) == 1
    assert user_line(lines[0]) == ("/t.py", 6)
    assert lines[0]["bytes"] == 160_000_104 and lines[0]["state"] == "transient"


def test_the_watch_adds_what_tracemalloc_cannot_see() -> None:
    rose = [{"file": "/t.py", "line": 9, "bytes": 100_000_000, "function": "f"},
            {"file": "/t.py", "line": 6, "bytes": 150_000_000, "function": "f"}]
    lines = merge([traced(NP, 232, 160_000_000, 0, ("/t.py", 6))], rose)
    assert [user_line(e) for e in lines] == [("/t.py", 6), ("/t.py", 9)]
    assert lines[1]["source"] == "rose"
    assert lines[0]["traced_bytes"] == 160_000_000 and lines[0]["rose_bytes"] == 150_000_000


def test_small_lines_are_summed_up() -> None:
    lines = merge([traced("/t.py", 1, 100_000_000, 0), traced("/t.py", 2, 10_000, 10_000)], [])
    head, rest = shown(lines, rise=100_000_000)
    assert len(head) == 1 and rest == {"lines": 1, "bytes": 10_000}


def test_a_traced_call_past_its_time_keeps_the_peak_it_saw() -> None:
    import time
    import tracemalloc

    from pytest_membudget.evidence.peak import PeakCensus, traced_call

    if tracemalloc.is_tracing():
        import pytest

        pytest.skip("a tracer of the session's own")
    census = PeakCensus(deadline=time.perf_counter() - 1.0)
    call = traced_call(0, census)
    next(call)
    held = bytearray(4 * 1024 * 1024)  # 4 MiB traced, then the watch's tick cuts tracing
    census.tick()
    assert not tracemalloc.is_tracing() and census.cut
    del held
    try:
        next(call)
    except StopIteration as done:
        found = done.value
    assert found["cut"] and found["traced"] >= 4 * 1024 * 1024 and found["lines"] == []


def test_a_traced_call_in_time_names_its_lines_and_their_state() -> None:
    import tracemalloc

    from pytest_membudget.evidence.peak import PeakCensus, traced_call

    if tracemalloc.is_tracing():
        import pytest

        pytest.skip("a tracer of the session's own")
    census = PeakCensus()
    call = traced_call(0, census)
    next(call)
    transient = bytearray(2 * 1024 * 1024)
    census.tick()  # the watch's copy at the peak
    del transient
    try:
        next(call)
    except StopIteration as done:
        found = done.value
    first = found["lines"][0]
    assert first["bytes"] >= 2 * 1024 * 1024 and first["state"] == "transient"
    assert found["traced"] >= 2 * 1024 * 1024 and "cut" not in found


def test_a_missed_peak_is_said_and_its_state_is_read_against_the_measured_rise() -> None:
    """The watch read 1 MiB of a 150 MiB rise, and nothing was left when the call returned:
    the call's memory was transient (against 1 MiB of the reading, 1 MiB of allocators' free
    memory left would read retained), and the failure says the peak was missed."""
    start = MemoryReading(rss=100 * MIB, anon=80 * MIB, file=20 * MIB, shmem=0.0,
                          malloc_used=10 * MIB, malloc_free=MIB, pymalloc_used=20 * MIB,
                          pymalloc_free=2 * MIB)
    reading = replace(start, rss=101 * MIB, anon=81 * MIB, malloc_free=2 * MIB)
    end = replace(start, rss=101 * MIB, anon=81 * MIB, malloc_free=2 * MIB)
    rose = [{"file": "t.py", "line": 8, "bytes": 75 * MIB, "rose_bytes": 75 * MIB,
             "source": "rose"}]
    report = peak_report("rss", 150 * MIB, start, reading, end, rose, None)
    assert report["composition"]["dominant"] is None
    assert report["lines"][0]["state"] == "transient"
    text = "\n".join(peak_lines(report))
    assert "the watch missed the peak" in text and "150 MiB measured" in text
    assert "fragmentation" not in text
    # One more traced call whose own peak held most of the measured rise names it Python.
    census = {"traced": 148 * MIB, "lines": []}
    named = peak_report("rss", 150 * MIB, start, reading, end, rose, census)
    assert named["composition"]["dominant"] == "python"
    text = "\n".join(peak_lines(named))
    assert "the watch missed the peak" in text and "mostly Python objects" in text
    # A run of many calls is not the rerun's one: its traced peak names nothing.
    assert peak_report("rss", 150 * MIB, start, reading, end, rose, census,
                       one_call=False)["composition"]["dominant"] is None
    # A heap rise is tracemalloc's, not RSS: the RSS reading is not held against it.
    assert peak_report("heap", 150 * MIB, start, reading, end, rose,
                       None)["composition"]["dominant"] is not None


def test_a_peak_of_no_data_kind_is_transient_when_nothing_is_left() -> None:
    """A reading whose whole rise is other anonymous memory (none of Python's, the native
    heap's, a file's or a stack's) says nothing by kind of what outlived the call: the rise
    as a whole against what was left of it (nothing: transient, not retained)."""
    start = MemoryReading(rss=100 * MIB, anon=80 * MIB, file=20 * MIB, shmem=0.0,
                          malloc_used=10 * MIB, malloc_free=MIB, pymalloc_used=20 * MIB,
                          pymalloc_free=2 * MIB)
    reading = replace(start, rss=250 * MIB, anon=230 * MIB)
    rose = [{"file": "t.py", "line": 8, "bytes": 150 * MIB, "rose_bytes": 150 * MIB,
             "source": "rose"}]
    freed = peak_report("rss", 150 * MIB, start, reading, start, rose, None)
    assert freed["composition"]["dominant"] == "other"
    assert freed["lines"][0]["state"] == "transient"
    kept = peak_report("rss", 150 * MIB, start, reading, reading, rose, None)
    assert kept["lines"][0]["state"] == "retained"


def test_arrays_the_run_kept_are_python_objects_at_its_end_as_at_its_peak() -> None:
    """200,000 small numpy arrays kept in a cache (120 MiB of buffers from glibc, nothing
    traced): the peak counts them as Python objects, and so does what was left when the call
    returned (it read them as native heap before); the call's state is the same either way."""
    start = MemoryReading(rss=60 * MIB, anon=40 * MIB, file=20 * MIB, shmem=0.0,
                          malloc_used=10 * MIB, malloc_free=MIB, pymalloc_used=20 * MIB,
                          pymalloc_free=2 * MIB)
    reading = replace(start, rss=190 * MIB, anon=170 * MIB, malloc_used=130 * MIB,
                      pymalloc_used=30 * MIB)
    rose = [{"file": "t.py", "line": 8, "bytes": 130 * MIB, "rose_bytes": 130 * MIB,
             "source": "rose"}]
    report = peak_report("rss", 130 * MIB, start, reading, reading, rose, None,
                         retained_large=115 * MIB)
    at_peak, left = report["composition"]["kinds"], report["left"]
    assert at_peak["python"] >= 115 * MIB and left["python"] >= 115 * MIB, (at_peak, left)
    assert left["native"] < 10 * MIB, left
    assert report["lines"][0]["state"] == "retained"


def test_what_the_run_kept_is_python_at_its_end_when_its_peak_was_traced_too() -> None:
    """A fragmented heap: 32,000 bytes objects of 1 KiB and a 16 MiB array kept (48 MiB of
    glibc's memory). The traced call reads the peak's Python share; the end is read
    untraced all the same, and counts the kept objects as Python's (it read them as native
    heap while the peak read them as Python objects)."""
    start = MemoryReading(rss=300 * MIB, anon=280 * MIB, file=20 * MIB, shmem=0.0,
                          malloc_used=10 * MIB, malloc_free=MIB, pymalloc_used=20 * MIB,
                          pymalloc_free=2 * MIB)
    peak = replace(start, rss=445 * MIB, anon=425 * MIB, malloc_used=150 * MIB,
                   malloc_free=4 * MIB)
    end = replace(start, rss=400 * MIB, anon=380 * MIB, malloc_used=58 * MIB,
                  malloc_free=50 * MIB)
    census = {"traced": 140 * MIB, "lines": [traced("/t.py", 9, 140 * MIB, 48 * MIB)]}
    report = peak_report("rss", 145 * MIB, start, peak, end, [], census,
                         retained_large=48 * MIB)
    left = report["left"]
    assert left["python"] >= 47 * MIB, left
    assert left["native"] < MIB, left
    # the peak's Python share is tracemalloc's, the kept objects not added a second time
    assert report["composition"]["kinds"]["python"] <= 140 * MIB


def test_a_traced_call_stopped_past_its_time_is_no_figure_for_the_python_share() -> None:
    """The traced call of a fragmented heap ran past its time and its tracing was stopped
    with 30 MiB traced of the call's 132 MiB: that peak is the least the Python share was,
    not the share, and no "most of it was not Python objects" is drawn from it."""
    start = MemoryReading(rss=300 * MIB, anon=280 * MIB, file=20 * MIB, shmem=0.0,
                          malloc_used=10 * MIB, malloc_free=MIB, pymalloc_used=20 * MIB,
                          pymalloc_free=2 * MIB)
    peak = replace(start, rss=443 * MIB, anon=423 * MIB, malloc_used=58 * MIB,
                   malloc_free=95 * MIB)
    census = {"traced": 30 * MIB, "lines": [], "cut": True}
    report = peak_report("rss", 143 * MIB, start, peak, peak, [], census,
                         retained_large=48 * MIB)
    assert report["composition"]["traced_least"] == 30 * MIB
    assert report["composition"]["kinds"]["python"] >= 47 * MIB
    text = "\n".join(peak_lines(report))
    assert "not Python objects" not in text, text
    assert "when its tracing was stopped" in text, text
