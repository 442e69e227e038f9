"""The benchmarks load: every module under bench/ imports (a refactor of the package or a lint
fix that drops a name they import shows here, not at the next measurement)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for path in (ROOT / "bench").rglob("*.py")
    if path.name != "__main__.py"
)


@pytest.mark.parametrize("name", MODULES)
def test_bench_module_imports(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setattr(sys, "argv", ["bench"])
    importlib.import_module(name)
