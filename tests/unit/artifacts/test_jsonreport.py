"""The JSON document: environment facts, JSON safety, samples on request."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from pytest_membudget.artifacts import document as jsonreport

DATA = {
    "schema": 1, "passed": False, "iterations": 3, "warmup": 1,
    "probes": {"iter_time": {"slope": 0.0, "ci": [-math.inf, math.inf],
                             "samples": [math.nan, 0.1, 0.1], "sample_iterations": [0, 1, 2]}},
}


def test_document_is_strict_json_with_samples_only_on_request() -> None:
    facts = {"fingerprint": "fp", "cuda_device": None}
    with_samples = jsonreport.build_document([("t::a", DATA)], {"t::a": "failed"}, samples=True,
                                             machine_facts=facts, exitstatus=1)
    text = json.dumps(with_samples, allow_nan=False)
    probe = json.loads(text)["tests"]["t::a"]["probes"]["iter_time"]
    assert probe["samples"] == [None, 0.1, 0.1] and probe["ci"] == [None, None]
    assert with_samples["tests"]["t::a"]["outcome"] == "failed"
    assert jsonreport.has_samples(with_samples)
    without = jsonreport.without_samples(with_samples)
    assert not jsonreport.has_samples(without) and without["samples"] is False
    assert "samples" in with_samples["tests"]["t::a"]["probes"]["iter_time"]  # a copy
    plain = jsonreport.build_document([("t::a", DATA)], {}, samples=False, machine_facts=facts)
    assert not jsonreport.has_samples(plain) and plain["tests"]["t::a"]["outcome"] is None
    assert plain["format"] == jsonreport.FORMAT and plain["schema"] == jsonreport.SCHEMA


def test_machine_facts_and_fingerprint() -> None:
    facts = jsonreport.machine()
    assert facts["cpu_count"] >= 1 and facts["python_version"].count(".") == 2
    assert facts["fingerprint"] == jsonreport.fingerprint(facts)
    assert jsonreport.fingerprint({"system": "Linux", "machine": "x86_64",
                                   "python_implementation": "CPython",
                                   "python_version": "3.12.4", "cpu_count": 16}) \
        == "Linux-x86_64-CPython-3.12-16cpu"
    assert "/" not in jsonreport.fingerprint({"system": "a/b c"})


def test_versions_come_from_metadata() -> None:
    found = jsonreport.versions()
    assert found["python"] and found["pytest"] and found["numpy"] and found["psutil"]
    assert "torch" in found


def test_versions_and_cuda_do_not_import_torch() -> None:
    code = ("import sys; from pytest_membudget.artifacts import document as jsonreport; "
            "jsonreport.machine(); jsonreport.versions(); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_cuda_device_only_from_an_imported_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert jsonreport.cuda_device() is None

    class Cuda:  # a process that has used CUDA
        @staticmethod
        def is_initialized() -> bool:
            return True

        @staticmethod
        def current_device() -> int:
            return 0

        @staticmethod
        def get_device_name(index: int) -> str:
            return "NVIDIA H200"

    monkeypatch.setitem(sys.modules, "torch", type("FakeTorch", (), {"cuda": Cuda}))
    assert jsonreport.cuda_device() == "cuda:0 NVIDIA H200"
