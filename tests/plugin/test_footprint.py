"""Footprint budgets as a user writes them: ``_rise`` (how far above the start), the evidence
at a failing peak, the hard ceiling that stops a runaway, and phases. Subprocess runs: the
peak watch reads this process's RSS, which an in-process inner run would share."""

from __future__ import annotations

import pytest
from support.evidence_runs import LIBC_PRELUDE
from support.footprint_runs import run

TEMPORARY = """
import numpy as np, pytest

KEEP = []

def phase():
    big = np.ones(20_000_000)  # 160 MB, freed before the call returns
    KEEP.append(np.ones(1000))
    return float(big.sum())

@pytest.mark.membudget(rss_rise="60 MiB")
def test_temporary(membudget):
    membudget.run(phase)

@pytest.mark.membudget(rss_rise="600 MiB")
def test_within(membudget):
    membudget.run(phase)
"""


#: The evidence's time set out of reach, for tests about what the traced call shows: under
#: load a 160 MB np.ones can take most of the evidence's second, and rightly not be run again.
TRACE_ANY_CALL = """
import pytest
import pytest_membudget.evidence.steps as steps


@pytest.fixture(autouse=True)
def _evidence_out_of_reach(monkeypatch):
    monkeypatch.setitem(steps.EVIDENCE_SECONDS, "footprint", 60.0)
"""


def test_a_rise_fails_with_what_was_alive_at_the_peak(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(TRACE_ANY_CALL)
    result, tests = run(pytester, TEMPORARY)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*rss rose * MiB above its start (* -> peak *), budget 60 MiB*",
        "*Evidence at the peak (one more call, traced*",
        "*what the rise was made of:*",
        "*Python objects 1?? MiB*",
        "*alive at the peak, by line*",
        "*test_a_rise_fails_with_what_was_alive_at_the_peak.py:6: 15? MiB in * blocks, "
        "transient (freed before the call returned)*",
        "*big = np.ones(20_000_000)*",
    ])
    failed = tests["test_temporary"]
    assert failed["iterations"] == 1 and failed["warmup"] == 0  # one call, as budgeted
    rss = failed["probes"]["rss"]
    assert rss["rise"] == rss["peak"] - rss["start"] and rss["rise"] > 100 * 1024**2
    evidence = failed["peak_evidence"]
    assert evidence["lines"][0]["via_line"] == 6 and evidence["lines"][0]["state"] == "transient"
    assert evidence["composition"]["dominant"] == "python"
    assert tests["test_within"]["passed"] and not tests["test_within"]["peak_evidence"]


def test_growth_evidence_is_not_given_for_a_peak(pytester: pytest.Pytester) -> None:
    result, tests = run(pytester, TEMPORARY, only=("test_temporary",))
    assert "top growing allocation sites" not in result.stdout.str()
    assert tests["test_temporary"]["evidence"] == {}


RUNAWAY = """
import numpy as np, pytest

def grow():
    keep = []
    for _ in range(100):
        keep.append(np.ones(2_000_000))  # 16 MB each: 1.6 GB if nothing stops it

@pytest.mark.membudget(rss_rise="40 MiB")
def test_runaway(membudget):
    membudget.run(grow)
"""


@pytest.mark.parametrize("how", ["marker", "flag", "ini"])
def test_a_runaway_is_stopped_at_the_ceiling(pytester: pytest.Pytester, how: str) -> None:
    source, args = RUNAWAY, []
    if how == "marker":
        source = source.replace('rss_rise="40 MiB"', 'rss_rise="40 MiB", ceiling="3x"')
    elif how == "flag":
        args = ["--membudget-ceiling=120 MiB"]
    else:
        pytester.makeini("[pytest]\nmembudget_ceiling = 3x\n")
    result, tests = run(pytester, source, *args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*test_runaway was stopped: RSS rose * above its start*past the hard ceiling of 120 MiB*",
        "*stopped at *.py:6 in grow*",
    ])
    seen = tests["test_runaway"]["runaway"]
    assert 120 * 1024**2 < seen["rise"] < 600 * 1024**2


def test_the_ceiling_can_be_turned_off(pytester: pytest.Pytester) -> None:
    source = RUNAWAY.replace("range(100)", "range(12)").replace(
        'rss_rise="40 MiB"', 'rss_rise="40 MiB", ceiling="off"')
    result, _ = run(pytester, source)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*rss rose * MiB above its start*budget 40 MiB*"])
    assert "hard ceiling" not in result.stdout.str()


PHASES = """
import numpy as np, pytest

CACHE = {}

def test_phases(membudget):
    with membudget.phase("load"):
        table = np.ones(2_000_000)
    with membudget.phase("solve", rss_rise="30 MiB"):
        work = np.ones(12_000_000)  # 96 MB at the peak, freed
        CACHE["row"] = work[:10].copy()
        del work
    with membudget.phase("report"):
        pass

def test_nested(membudget):
    with membudget.phase("outer", rss_rise="400 MiB"):
        with membudget.phase("inner", rss_rise="400 MiB"):
            np.ones(1_000_000).sum()

def test_itself(membudget):
    with membudget.phase("a"):
        with membudget.phase("a"):
            pass

def test_bad_budget(membudget):
    with membudget.phase("a", rss_rise="lots"):
        pass

def test_no_name(membudget):
    with membudget.phase(""):
        pass

KEPT = []

def test_kept(membudget):
    KEPT.append(membudget)

def test_after_its_test(membudget):
    with KEPT[0].phase("late"):
        pass
"""


def test_phases_fail_at_the_end_with_every_phase_in_one_table(pytester: pytest.Pytester) -> None:
    result, tests = run(pytester, PHASES, only=("test_phases", "test_nested"))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*1 phase budget(s) exceeded in *::test_phases*",
        "*phase 'solve': rss rose * MiB above its start*budget 30 MiB*",
        "*phases (RSS):*",
        "*phase*calls*rise*left at its end*made of*budgets*verdict*",
        "*load*1*MiB*pass*",
        "*solve*1*MiB*rss_rise 30 MiB*fail*",
        "*report*1*pass*",
        "*phase 'solve' at its peak:*",
        "*RSS rose while these lines ran:*",
        "*work = np.ones(12_000_000)*",
    ])
    phases = {p["name"]: p for p in tests["test_phases"]["phases"]}
    assert list(phases) == ["load", "solve", "report"]
    assert phases["solve"]["verdict"] == "fail" and phases["solve"]["rise"] > 60 * 1024**2
    assert phases["solve"]["left"] < 16 * 1024**2
    assert not tests["test_phases"]["passed"]
    nested = {p["name"]: p for p in tests["test_nested"]["phases"]}
    # The inner phase's reset of the peak mark must not erase the outer phase's.
    assert nested["outer"]["rise"] >= nested["inner"]["rise"] > 4 * 1024**2


def test_phase_misuse_gets_a_clear_error(pytester: pytest.Pytester) -> None:
    result, _ = run(pytester, PHASES, only=("test_itself", "test_bad_budget", "test_no_name",
                                            "test_kept", "test_after_its_test"))
    result.assert_outcomes(passed=1, failed=4)
    result.stdout.fnmatch_lines_random([
        "*test_itself: membudget.phase('a') was entered inside itself*",
        "*test_bad_budget: rss_rise='lots' in membudget.phase('a'): cannot read this*",
        "*test_no_name: membudget.phase() takes a name for the phase*",
        "*test_kept: membudget.phase('late') was entered outside the test*",
    ])


CACHE_OF_ARRAYS = """
import numpy as np, pytest

CACHE = {}

def fill():
    for state in range(20_000):
        CACHE[state] = {a: np.zeros(2, dtype=np.int8) for a in range(10)}

@pytest.mark.membudget(rss_rise="16 MiB")
def test_cache(membudget):
    membudget.run(fill)
"""


def test_a_retained_cache_names_the_types_it_left_alive(pytester: pytest.Pytester) -> None:
    result, tests = run(pytester, CACHE_OF_ARRAYS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*object types the run left alive (new since its start):*",
                                 "*numpy.ndarray: +200,0??*", "*dict: +20,0??*"])
    evidence = tests["test_cache"]["peak_evidence"]
    rows = {row["type"]: row["count"] for row in evidence["types"]["rows"]}
    assert rows["numpy.ndarray"] >= 200_000 and rows["dict"] >= 20_000
    # A cache's many small objects: where RSS rose, with its line first.
    assert evidence["lines"][0]["line"] == 7


WAITING_FOR_A_POOL = LIBC_PRELUDE + """
import time
from concurrent.futures import ThreadPoolExecutor
import pytest

POOL = ThreadPoolExecutor(1)

def parse():
    # The worker's native memory (as a C parser's): 80 MiB touched over 0.4 s, freed
    # before it returns; tracemalloc sees none of it.
    chunks = []
    for _ in range(8):
        chunks.append(LIBC.malloc(10 << 20))
        LIBC.memset(chunks[-1], 1, 10 << 20)
        time.sleep(0.05)
    for chunk in chunks:
        LIBC.free(chunk)
    return len(chunks)

def load():
    return POOL.submit(parse).result()  # the test's thread waits here

@pytest.mark.membudget(rss_rise="30 MiB")
def test_pool(membudget):
    membudget.run(load)
"""


def test_a_rise_in_a_pools_worker_names_the_workers_line_and_the_line_that_waited(
        pytester: pytest.Pytester) -> None:
    """The measured thread waits in ``Future.result`` while a pool's worker runs the user's
    own function and allocates: the rise goes to the worker's line, with the line that
    waited for it beside it, never to threading.py."""
    result, tests = run(pytester, WAITING_FOR_A_POOL)
    result.assert_outcomes(failed=1)
    first = tests["test_pool"]["peak_evidence"]["lines"][0]
    # pytester writes the source stripped of its leading blank line.
    numbered = list(enumerate(WAITING_FOR_A_POOL.strip().splitlines(), 1))
    waits = next(number for number, text in numbered if "the test's thread waits here" in text)
    work = {number for number, text in numbered if "LIBC.m" in text and "chunks" in text}
    assert first["line"] in work and first.get("waited_line") == waits, first
    assert "threading.py" not in first.get("inner_file", ""), first
    text = result.stdout.str()
    assert "run by other threads while" in text and "waited for them" in text, text
    assert "C code held the interpreter" not in text, text


LIBRARY_POOL = """
from concurrent.futures import ThreadPoolExecutor
import zlib
import pytest

POOL = ThreadPoolExecutor(1)
# zlib lets go of the interpreter while it inflates, as a parser in a library's pool does.
PACKED = zlib.compress(bytes(80 << 20))

def load():
    return len(POOL.submit(zlib.decompress, PACKED).result())  # the test's thread waits here

@pytest.mark.membudget(rss_rise="30 MiB")
def test_pool(membudget):
    membudget.run(load)
"""


def test_a_rise_in_a_librarys_threads_names_the_line_that_waited(
        pytester: pytest.Pytester) -> None:
    """A library's own threads allocate (pandas' ``read_csv`` parses in a pool): no line of
    the user's code runs there, so the rise goes to the user's line that waited, said to be
    waiting for other threads, not to be running in threading.py."""
    result, tests = run(pytester, LIBRARY_POOL)
    result.assert_outcomes(failed=1)
    first = tests["test_pool"]["peak_evidence"]["lines"][0]
    waits = next(number for number, text in enumerate(LIBRARY_POOL.strip().splitlines(), 1)
                 if "the test's thread waits here" in text)
    assert (first.get("via_line") or first["line"]) == waits, first
    text = result.stdout.str()
    assert "threading.py" not in text.split("Evidence at the peak")[-1], text


HELD_INTERPRETER = """
import json, pytest

TEXT = json.dumps([{"id": i, "tag": f"k{i % 100}"} for i in range(300_000)])
KEPT = []

def load():
    KEPT.clear()
    KEPT.append(json.loads(TEXT))  # one C call that holds the GIL throughout

# The rise is about 84 MiB: the hard ceiling (4x the budget) stays above it, or a watch that
# reads while load() still runs would stop it as a runaway.
@pytest.mark.membudget(rss_rise="40 MiB")
def test_loads(membudget):
    membudget.run(load)
"""


def test_a_rise_inside_a_call_that_held_the_interpreter_is_attributed(
        pytester: pytest.Pytester) -> None:
    """json.loads holds the GIL from start to end: the watch first reads when the C call
    returns (json's decoder, beneath the user's line), or, later, in this plugin's code
    between calls. The rise is the call's and goes to the json.loads line (the failure
    named a line that rose 84 KiB of a 148 MiB rise, and later the run(load) line, while
    the watch's thread opened its files after the run had begun)."""
    result, tests = run(pytester, HELD_INTERPRETER)
    result.assert_outcomes(failed=1)
    evidence = tests["test_loads"]["peak_evidence"]
    first = evidence["lines"][0]
    assert first["bytes"] >= 0.5 * evidence["rise"], evidence["lines"]
    assert first["line"] == 8, first  # the json.loads line


KEPT_BYTES = """
import pytest

HELD = []

def phase():
    blocks = [bytes(4000) for _ in range(32_000)]  # 128 MB of glibc's chunks
    HELD.append(blocks[::4])  # a quarter kept: 32 MB of bytes objects
    del blocks

@pytest.mark.membudget(rss_rise="40 MiB")
def test_kept(membudget):
    membudget.run(phase)
"""


def test_what_a_traced_peak_read_as_python_is_python_at_the_calls_end(
        pytester: pytest.Pytester) -> None:
    """The peak's Python share comes from the traced call; the call's end is read untraced,
    and the 32 MB of bytes objects the run kept (each over 512 B: glibc's memory) count as
    Python objects there too, not as native heap."""
    pytester.makeconftest(TRACE_ANY_CALL)
    result, tests = run(pytester, KEPT_BYTES)
    result.assert_outcomes(failed=1)
    evidence = tests["test_kept"]["peak_evidence"]
    assert evidence["census"].get("traced_peak"), evidence["census"]  # the call was traced
    left = evidence["left"]
    assert left["python"] > 25 * 1024**2, left
    assert left["native"] < 8 * 1024**2, left
    assert evidence["types"]["large_bytes"] > 25 * 1024**2, evidence["types"]


POOL_THREADS = """
import json, time
from concurrent.futures import ThreadPoolExecutor
import pytest

DOC = "[" * 900 + "]" * 900

def parse():
    json.loads(DOC)  # touches the worker's C stack
    time.sleep(0.2)

def work():
    with ThreadPoolExecutor(max_workers=40) as pool:
        futures = [pool.submit(parse) for _ in range(40)]  # the pool starts its workers here
        time.sleep(0.1)
        for future in futures:
            future.result()

@pytest.mark.membudget(rss_rise="1 MiB", iterations=1, warmup=0, ceiling="off")
def test_pool(membudget):
    membudget.run(work)
"""


def test_a_pools_threads_are_named_at_the_line_that_made_it_start_them(
        pytester: pytest.Pytester) -> None:
    """Thread stacks most of the rise: the line first is the one whose ``submit`` made the
    pool start its workers, said to have started them in the pool's code."""
    result, tests = run(pytester, POOL_THREADS)
    result.assert_outcomes(failed=1)
    evidence = tests["test_pool"]["peak_evidence"]
    assert evidence["composition"]["dominant"] == "stacks", evidence["composition"]
    first = evidence["lines"][0]
    assert first["source"] == "threads" and "pool.submit(parse)" in first["code"], first
    assert first["threads"] >= 10, first
    result.stdout.fnmatch_lines(["*.py:13: started * thread(s) whose stacks hold *",
                                 "*futures = [[]pool.submit(parse)*",
                                 "*started in *concurrent/futures/thread.py:*"])


PHASE_THREADS = """
import json, threading, time

DOC = "[" * 900 + "]" * 900

def parse():
    json.loads(DOC)  # touches the thread's C stack
    time.sleep(0.2)

def test_spawn(membudget):
    with membudget.phase("spawn", rss_rise="1 MiB"):
        workers = [threading.Thread(target=parse) for _ in range(40)]
        for worker in workers:
            worker.start()  # the starting line
        time.sleep(0.1)
        for worker in workers:
            worker.join()
"""


def test_a_phase_whose_rise_is_thread_stacks_names_the_lines_that_started_them(
        pytester: pytest.Pytester) -> None:
    result, tests = run(pytester, PHASE_THREADS, "--membudget-ceiling=off")
    result.assert_outcomes(failed=1)
    phase = tests["test_spawn"]["phases"][0]
    assert phase["composition"]["dominant"] == "stacks", phase["composition"]
    assert "worker.start()" in phase["threads"][0]["code"], phase["threads"]
    assert phase["threads"][0]["threads"] == 40, phase["threads"]
    result.stdout.fnmatch_lines(["*threads' stacks are most of the rise; these lines started "
                                 "the threads:*",
                                 "*: started 40 thread(s)*",
                                 "*worker.start()  # the starting line*"])


def test_the_source_lines_the_evidence_reads_are_no_type_the_run_kept(
        pytester: pytest.Pytester) -> None:
    """The watch reads the test file's lines (linecache keeps the file, a string a line) as
    the run ends: a file of 200 lines whose run keeps nothing lists no strings kept."""
    pytester.makeconftest(TRACE_ANY_CALL)
    padding = "\n".join(f"# line {n} of a long test module" for n in range(200))
    result, tests = run(pytester, TEMPORARY + padding + "\n", only=("test_temporary",))
    result.assert_outcomes(failed=1)
    rows = tests["test_temporary"]["peak_evidence"]["types"]["rows"]
    assert all(row["type"] != "str" for row in rows), rows
