"""The marker's forms a shape is scored in, and the generated test that runs one shape in one
form under the plugin (in a fresh pytest process, with ``--membudget-json``)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Variant:
    """One form of the marker: what follows ``rss_rise=<budget>`` in it, and which call of
    the ground truth it measures (``cold``: the first call; ``warm``: the call after one
    warm-up)."""

    name: str
    marker: str
    call: str
    doc: str


VARIANTS = {v.name: v for v in (
    Variant("warmup0", ", iterations=1, warmup=0", "cold", "one call, no warm-up, explicit"),
    Variant("warmup1", ", warmup=1, iterations=1", "warm",
            "one call after one warm-up call"),
    Variant("default", "", "cold", "rss_rise alone: the marker's default (one call, no "
            "warm-up, as the docs say)"),
    Variant("default_iter1", ", iterations=1", "cold",
            "rss_rise and iterations=1, no warmup in the marker: one call"),
)}
#: The forms each corpus is scored in unless --variants names others.
DEFAULTS = {"synthetic": ("warmup0",)}


def chosen(names: str, corpus: str) -> list[Variant]:
    wanted = [n for n in names.split(",") if n] or list(DEFAULTS.get(corpus, VARIANTS))
    unknown = [n for n in wanted if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant(s) {', '.join(unknown)}; known: "
                         f"{', '.join(VARIANTS)}")
    return [VARIANTS[n] for n in wanted]


TEST_FILE = '''\
import sys

sys.path.insert(0, {here!r})

import pytest
import protocol

SHAPE = protocol.load({corpus!r})[{name!r}]


@pytest.fixture
def arguments():
    return SHAPE.arguments()


@pytest.mark.membudget(rss_rise={budget}{marker})
def test_{name}(membudget, arguments):
    membudget.run(SHAPE.func, *arguments)
'''

#: Records which copy of the plugin the run imported (--plugin-from must win).
CONFTEST = '''\
import pathlib

import pytest_membudget

pathlib.Path("plugin_location.txt").write_text(pytest_membudget.__file__)
'''


def write_test(folder: Path, corpus: str, name: str, budget: int, variant: Variant,
               here: Path) -> None:
    (folder / f"test_{name}.py").write_text(TEST_FILE.format(
        here=str(here), corpus=corpus, name=name, budget=budget, marker=variant.marker))
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = "
                                       "function\n")


def plugin_env(plugin_from: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if plugin_from:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(plugin_from).resolve()),
                                                          env.get("PYTHONPATH")]))
    return env


def run_pytest(folder: Path, report: Path, test: str,
               plugin_from: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         f"--membudget-json={report}", f"{test}.py"],
        cwd=folder, env=plugin_env(plugin_from), capture_output=True, text=True, timeout=900)


def plugin_fingerprint(plugin_from: str | None) -> str:
    """Where the runs import the plugin from and a hash of its sources: the plugin is edited
    beside this benchmark, and a table must say which code it measured."""
    done = subprocess.run([sys.executable, "-c", "import pytest_membudget; "
                           "print(pytest_membudget.__file__)"], env=plugin_env(plugin_from),
                          capture_output=True, text=True, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        return "(the plugin does not import)"
    package = Path(done.stdout.strip()).parent
    digest = hashlib.sha1()
    for source in sorted(package.rglob("*.py")):
        digest.update(str(source.relative_to(package)).encode())
        digest.update(source.read_bytes())
    return f"{package} sha1:{digest.hexdigest()[:12]}"


UNKNOWN_RISE = "unknown budget 'rss_rise'"


def error_line(output: str) -> str:
    """The line of pytest's output that says what went wrong, for the table's notes."""
    if UNKNOWN_RISE in output:
        return ("this copy of the plugin does not know the rss_rise budget (the footprint "
                "budgets have not landed in it): expected until they do")
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line.lstrip("_ ").startswith("ERROR at") and index + 1 < len(lines):
            return lines[index + 1].strip()[:300]
    for line in reversed(lines):
        if line.startswith(("E ", "ERROR", "INTERNALERROR")) or "Error" in line:
            return line.strip()[:300]
    return (output.strip().splitlines() or ["(no output)"])[-1][:300]
