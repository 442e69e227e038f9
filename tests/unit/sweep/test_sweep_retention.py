"""The sweep's table and JSON carry what keeps a leak alive (its retaining path) and, for a
native leak, the top native stack, as structured data and as one line."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from pytest_membudget.catalog import PROBES
from pytest_membudget.sweep.outcome import top_evidence
from pytest_membudget.sweep.table import evidence_text
from pytest_membudget.vocabulary import LeftBehind

PATH: dict[str, Any] = {
    "root": {"kind": "module global", "name": "tests.test_x", "file": "tests/test_x.py"},
    "steps": [{"step": "KEEP", "type": "list"}, {"step": "[3]", "type": "dict"},
              {"step": "['rows']", "type": "list"}, {"step": "[0]", "type": "bytes"}],
}
SITE = {"file": "tests/test_x.py", "line": 9, "bytes": 6400, "per_iter": 64.0, "blocks": 100,
        "code": "KEEP.append(row)"}
STACK = {"bytes": 40960, "allocations": 10, "allocator": "malloc",
         "frames": [{"function": "membudget_keep", "file": "leaky.c", "line": 3},
                    {"function": "ffi_call", "file": "<unknown>", "line": 0}],
         "python": {"function": "step", "file": "tests/test_x.py", "line": 12}}


def test_a_python_leak_carries_its_first_path() -> None:
    evidence = {"iterations": 100, "sites": [SITE],
                "paths": [{"type": "list", "count": 3, "reason": "stopped short"},
                          {"type": "bytes", "count": 100, "path": PATH}]}
    top = top_evidence(evidence, ("py_blocks",))
    assert top is not None and top["path"] == PATH
    json.dumps(top)
    text = evidence_text(top)
    assert text.endswith("; kept by module tests/test_x.py: KEEP (list) -> [3] (dict) -> "
                         "['rows'] (list) -> [0] (bytes)"), text


def test_a_native_leak_carries_its_top_stack() -> None:
    evidence = {"iterations": 100, "sites": [], "native": {"iterations": 10,
                                                           "stacks": [STACK]}}
    top = top_evidence(evidence, ("rss",))
    assert top == {"kind": "native", "stack": STACK}
    assert evidence_text(top) == (
        "native +40 KiB: membudget_keep <- ffi_call from step (tests/test_x.py:12)")


def test_a_native_leak_without_stacks_reads_as_before() -> None:
    top = top_evidence({"iterations": 10, "sites": [], "native": {"missing": "pip ..."}})
    assert evidence_text(top) == "native memory (tracemalloc saw no Python growth)"


def test_sites_that_explain_little_of_a_native_leak_do_not_lead_its_line() -> None:
    """A counter's int is a traced site beside 1.6 KiB a call of native memory: the line is
    the native memory, with how little tracemalloc saw of it."""
    explained = {"probe": "malloc", "slope": 1616.0, "traced": 0.5, "share": 0.0003,
                 "rest": "native"}
    evidence = {"iterations": 64, "sites": [dict(SITE, bytes=32, per_iter=0.5)],
                "explained": explained, "native": {"missing": "pip ..."}}
    top = top_evidence(evidence, ("malloc",))
    assert top is not None and top["kind"] == "native", top
    assert evidence_text(top) == (
        "native memory (tracemalloc saw 0.5 B/call of malloc's 1.58 KiB/call)")
    # Sites that account for most of the slope still lead it, and so do sites of Python
    # objects that grow beside the native memory (the objects that hold it).
    python = dict(explained, traced=1600.0, share=0.99, rest="python")
    assert top_evidence(dict(evidence, explained=python), ("malloc",))["kind"] == "site"
    assert top_evidence(evidence, ("py_blocks", "malloc"))["kind"] == "site"


THREAD = {"name": "poller", "daemon": True, "target": "tests/test_x.py:20 poll"}


def test_what_a_probe_left_behind_leads_as_its_catalog_entry_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog's evidence_list, not the probe's name, says which list of what was left
    behind is the first line: the threads probe's thread, the fds probe's descriptor; a
    probe whose entry lists nothing gets its growing line."""
    evidence = {"iterations": 10, "sites": [SITE], "threads": [THREAD],
                "fds": ["/tmp/x.log"]}
    assert top_evidence(evidence, ("threads",))["kind"] == "thread"
    assert top_evidence(evidence, ("fds",)) == {"kind": "fd", "target": "/tmp/x.log"}
    assert top_evidence(evidence, ("gc_objects", "fds", "threads"))["kind"] == "thread"
    assert top_evidence(evidence, ("gc_objects",))["kind"] == "site"
    monkeypatch.setitem(PROBES, "threads", replace(PROBES["threads"], evidence_list=None))
    monkeypatch.setitem(PROBES, "gc_objects",
                        replace(PROBES["gc_objects"], evidence_list=LeftBehind.FDS))
    assert top_evidence(evidence, ("threads",))["kind"] == "site"
    assert top_evidence(evidence, ("gc_objects",))["kind"] == "fd"
    # Tasks left pending stand beside the lines, which lead.
    monkeypatch.setitem(PROBES, "gc_objects",
                        replace(PROBES["gc_objects"], evidence_list=LeftBehind.TASKS))
    assert top_evidence(evidence, ("gc_objects",))["kind"] == "site"
