"""Every ini key and command-line flag, declared once and resolved once into frozen settings.

Precedence: marker > command line > ini > default. Flags default to None so that an absent
flag leaves the ini value in force.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.policy import MIN_VERDICT_ITERATIONS
from pytest_membudget.judge.screen import SCREEN_CALLS
from pytest_membudget.judge.spec import (
    RUN_KEYS,
    Budget,
    RunSettings,
    SpecError,
    parse_bool,
    parse_budget_line,
    parse_run_value,
    parse_seconds,
    positive_int,
)
from pytest_membudget.vocabulary import SweepMode


@dataclass(frozen=True)
class Option:
    """One setting: ini key ``membudget_<key>`` and flag ``--membudget-<key with dashes>``."""

    key: str
    help: str
    default: Any
    #: "string", "bool", "linelist" (ini type); "bool" flags are switches, "linelist" flags
    #: may be repeated.
    kind: str = "string"
    metavar: str | None = None
    #: Only a command-line flag (no ini key), e.g. for one-off runs.
    flag_only: bool = False
    #: kind "optional": the value of the flag given without one (``--membudget-compare``).
    const: str | None = None

    @property
    def ini(self) -> str:
        return f"membudget_{self.key}"

    @property
    def flag(self) -> str:
        return "--membudget-" + self.key.replace("_", "-")

    @property
    def negative_flag(self) -> str | None:
        """``--no-membudget-<key>``: turns off a bool that the ini (or its default) turns on."""
        if self.kind != "bool" or self.flag_only:
            return None
        return "--no-membudget-" + self.key.replace("_", "-")


OPTIONS: tuple[Option, ...] = (
    Option("iterations", "measured iterations after warm-up: 'auto' (stop when the verdict is "
           f"clear, at {MIN_VERDICT_ITERATIONS} at the soonest or max_iterations if lower; extend "
           "while it is not) or a whole number", "auto", metavar="N|auto"),
    Option("warmup", "iterations run before measuring (lazy initialisation, caches filling)",
           "5", metavar="N"),
    Option("min_iterations", "auto: measured iterations before the first judgement", "64",
           metavar="N"),
    Option("max_iterations", "auto: most measured iterations, or 'none': an auto run whose "
           "verdict is still ambiguous goes on while max_seconds allows", "none",
           metavar="N|none"),
    Option("max_seconds", "auto: most seconds of measuring per test", "60", metavar="S"),
    Option("gc", "'collect': collect garbage before each sample so cycles awaiting the "
           "collector do not read as growth; 'off': leave the collector alone", "collect",
           metavar="collect|off"),
    Option("evidence", "on failure, rerun a few iterations under tracemalloc to show the lines "
           "and object types that grew", "true", kind="bool"),
    Option("confidence", "one-sided confidence a slope must reach to fail a test", "0.99",
           metavar="P"),
    Option("budget", "a default budget for every test that uses the marker or the fixture, "
           "e.g. 'rss=0' or 'rss_peak=2 GiB' (ini: one per line; flag: may be repeated); "
           f"probes: {', '.join(PROBES)}", (), kind="linelist", metavar="PROBE=VALUE"),
    Option("disable", "run each budgeted test once, with no measurement", "false", kind="bool"),
    Option("json", "write every budgeted test's results to this JSON file (a relative path "
           "is taken from the invocation directory for the flag, the rootdir for the ini key)",
           "", metavar="PATH"),
    Option("json_samples", "include each probe's samples in the JSON report and in saved "
           "baselines (membudget plot needs them)", "false", kind="bool"),
    Option("storage", "directory of saved baselines, one subdirectory per machine "
           "fingerprint", ".membudget", metavar="DIR"),
    Option("save", "save this run as the baseline NAME (refused when NAME exists, unless "
           "--membudget-save-overwrite)", None, metavar="NAME", flag_only=True),
    Option("save_overwrite", "let --membudget-save replace a baseline of the same name",
           "false", kind="bool", flag_only=True),
    Option("autosave", "save every run as a new baseline named auto-<UTC time>", "false",
           kind="bool"),
    Option("compare", "compare slopes, rises, peaks and phases with a saved baseline: =NAME, "
           "=PATH.json, or no value for the latest saved on this machine; a regression fails "
           "the run", None,
           kind="optional", metavar="NAME", flag_only=True, const="latest"),
    Option("compare_fail", "tolerance of --membudget-compare for one figure, named like its "
           "budget: rss:10%, heap:64 KiB/iter, rss_rise:32 MiB, rss_peak:5%, iter_time:off, "
           "or all:10% (ini: one per line; flag: may be repeated; default: the probe's run "
           "spread for slopes, 30% or 4 MiB for rises and peaks)", (),
           kind="linelist", metavar="FIGURE:TOL"),
    Option("plot", "write one PNG per budgeted test into this directory (needs matplotlib: "
           "the [plot] extra)", "", metavar="DIR"),
    Option("device", "the CUDA device the cuda_* probes read, e.g. 'cuda:1' or 1 (default: "
           "the current device)", "", metavar="DEVICE"),
    Option("cuda_history", "record the CUDA allocator's history during the window, so that a "
           "failing cuda_* budget names the lines that allocated the live blocks (costly)",
           "false", kind="bool"),
    Option("strict", "fail a test whose budget ends inconclusive (by default it passes, with "
           "a line in the summary saying what would settle it)", "false", kind="bool"),
    Option("ceiling", "when the plugin stops a footprint test's workload (one with a _peak "
           "or _rise budget, or a phase) and fails the test, so that a runaway fails the test "
           "and not the machine: 'machine' (before the machine or its cgroup runs out of "
           "memory), or besides that '4x' the largest rss or uss rise or peak budget or a "
           "size of RSS rise such as '8 GiB' above the measured call's start; 'off': never",
           "machine", metavar="machine|4x|SIZE|off"),
    Option("require_cuda", "fail, instead of skipping, a test whose budget on a device probe "
           "(cuda_*, jax_device_*, xpu_*, mps_*, cupy_*) cannot be measured (no torch, JAX or "
           "CuPy, no device): for GPU CI jobs", "false", kind="bool"),
    Option("sweep", "repeat every test in place and judge it for leaks, marked or not: 'fail' "
           "(the flag alone) fails the leaking tests, 'report' fails nothing and lists them, "
           "'off'; see docs/sweep.md", "off", kind="optional", metavar="fail|report|off",
           const="fail"),
    Option("sweep_screen", "calls the sweep's screen measures after its warm-up: a test is "
           "flagged for the full verdict when it grew on every one (threads and descriptors: "
           "overall); more calls cost more and see rarer growth", str(SCREEN_CALLS),
           metavar="N"),
    Option("sweep_seconds", "most seconds the sweep spends repeating one test (its screen and "
           "full verdict; a flagged test too slow for a verdict within them gets the time its "
           "verdict needs, up to 10 s); a test it cuts short is listed, not failed; under "
           "pytest-timeout it also keeps within half the test's timeout", "2", metavar="S"),
)



@dataclass(frozen=True)
class SessionSettings:
    run: RunSettings
    budgets: tuple[Budget, ...]
    disable: bool
    require_cuda: bool = False
    sweep: SweepMode = SweepMode.OFF
    sweep_seconds: float = 2.0
    sweep_screen: int = SCREEN_CALLS


def add_options(parser: pytest.Parser, extra: Sequence[Option] = ()) -> None:
    group = parser.getgroup("membudget", "memory budgets (pytest-membudget)")
    for option in (*OPTIONS, *extra):
        # argparse %-formats a flag's help ("%(default)s"); "10%" must reach it as "10%%".
        flag_help = option.help.replace("%", "%%")
        if option.kind == "bool":
            group.addoption(option.flag, action="store_const", const="true", default=None,
                            dest=option.ini, help=flag_help)
            if option.negative_flag is not None:
                group.addoption(option.negative_flag, action="store_const", const="false",
                                dest=option.ini, help=f"turn off {option.flag}")
        elif option.kind == "linelist":
            group.addoption(option.flag, action="append", default=None, dest=option.ini,
                            metavar=option.metavar, help=flag_help)
        elif option.kind == "optional":
            group.addoption(option.flag, action="store", nargs="?", const=option.const,
                            default=None, dest=option.ini, metavar=option.metavar,
                            help=flag_help)
        else:
            group.addoption(option.flag, action="store", default=None, dest=option.ini,
                            metavar=option.metavar, help=flag_help)
        if not option.flag_only:
            if option.kind == "linelist":
                parser.addini(option.ini, option.help, type="linelist",
                              default=list(option.default))
            else:
                parser.addini(option.ini, option.help, type="string", default=option.default)


def raw_value(config: pytest.Config, option: Option) -> tuple[Any, str]:
    """The value in force for one option and where it came from (for error messages)."""
    cli = config.getoption(option.ini, default=None)
    if cli is not None:
        return cli, f"from {option.flag}"
    if not option.flag_only:
        ini = config.getini(option.ini)
        if ini not in (None, "", []):
            return ini, f"from ini key {option.ini}"
    return option.default, f"from the default of {option.ini}"


def default_run(**overrides: Any) -> RunSettings:
    """The run settings when nothing is configured (each option's declared default), with
    ``overrides`` put in as they are: for code that measures outside a pytest session."""
    values = {key: parse_run_value(key, option_by_key(key).default, "from the default")
              for key in RUN_KEYS}
    return replace(RunSettings(**values), **overrides)


def resolve(config: pytest.Config) -> SessionSettings:
    """Read every option once; bad values raise pytest.UsageError naming the key."""
    try:
        values: dict[str, Any] = {}
        for key in RUN_KEYS:
            raw, where = raw_value(config, option_by_key(key))
            values[key] = parse_run_value(key, raw, where)
        raw_budgets, where = raw_value(config, option_by_key("budget"))
        budgets = tuple(parse_budget_line(line, where) for line in raw_budgets if line.strip())
        raw_disable, where = raw_value(config, option_by_key("disable"))
        disable = parse_bool("disable", raw_disable, where)
        raw_require, where = raw_value(config, option_by_key("require_cuda"))
        require_cuda = parse_bool("require_cuda", raw_require, where)
        sweep = parse_sweep(*raw_value(config, option_by_key("sweep")))
        raw_seconds, where = raw_value(config, option_by_key("sweep_seconds"))
        sweep_seconds = parse_seconds("sweep_seconds", raw_seconds, where)
        raw_screen, where = raw_value(config, option_by_key("sweep_screen"))
        sweep_screen = positive_int("sweep_screen", raw_screen, where, minimum=2)
    except SpecError as exc:
        raise pytest.UsageError(f"pytest-membudget: {exc}") from None
    return SessionSettings(RunSettings(**values), budgets, disable, require_cuda, sweep,
                           sweep_seconds, sweep_screen)


_SWEEP_WORDS = {"true": SweepMode.FAIL, "yes": SweepMode.FAIL, "on": SweepMode.FAIL,
                "1": SweepMode.FAIL, "false": SweepMode.OFF, "no": SweepMode.OFF,
                "0": SweepMode.OFF, "": SweepMode.OFF}


def bind_bare_sweep_flag(args: list[str]) -> None:
    """``pytest --membudget-sweep tests/``: argparse would take ``tests/`` for the flag's
    optional value. A bare flag followed by anything but a sweep mode is the flag alone
    (``fail``); the word after it stays a path. ``args`` is changed in place, before pytest
    parses it."""
    flag = option_by_key("sweep").flag
    words = {*_SWEEP_WORDS, *(mode.value for mode in SweepMode)} - {""}
    for index, arg in enumerate(args[:-1]):
        if arg == "--":
            return
        following = args[index + 1]
        if arg == flag and following.lower() not in words and not following.startswith("-"):
            args[index] = f"{flag}={SweepMode.FAIL.value}"


def parse_sweep(value: object, where: str) -> SweepMode:
    """'fail', 'report' or 'off' (true/false and the like read as fail/off)."""
    text = str(value).strip().lower() if value is not None else ""
    if text in _SWEEP_WORDS:
        return _SWEEP_WORDS[text]
    try:
        return SweepMode(text)
    except ValueError:
        hint = (f"; {value!r} looks like a path: the flag takes an optional value, so write "
                "--membudget-sweep=fail (or put the paths before the flag)"
                if any(mark in text for mark in "/.:") or os.path.exists(str(value)) else "")
        raise SpecError(f"sweep={value!r} {where}: expected fail, report or off{hint}") from None


def option_by_key(key: str, options: Sequence[Option] = OPTIONS) -> Option:
    return next(o for o in options if o.key == key)
