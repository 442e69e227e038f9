"""Loading the plugin, which pytest does in every session where it is installed, stays light."""

from __future__ import annotations

import subprocess
import sys


def test_loading_the_plugin_imports_neither_numpy_nor_torch() -> None:
    code = ("import sys, pytest_membudget.plugin; "
            "print(sorted(m for m in ('numpy', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
