"""Marker arguments and defaults -> a validated, frozen BudgetSpec. Pure: no pytest here."""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_membudget.catalog import PROBES, ProbeInfo
from pytest_membudget.vocabulary import BudgetKind, GcPolicy, ProbeKind

SIZE_UNITS = {
    "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_QUANTITY = re.compile(
    r"^\s*(?P<num>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>[A-Za-zµ]*)\s*"
    r"(?P<per>/\s*it(?:er(?:ation)?)?)?\s*$"
)


class SpecError(ValueError):
    """A budget or run setting that cannot be used; the message says where and what to do."""


@dataclass(frozen=True)
class Budget:
    probe: str
    kind: BudgetKind
    limit: float
    source: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", BudgetKind(self.kind))  # "slope" -> SLOPE

    @property
    def key(self) -> str:
        """The marker keyword that sets this budget."""
        return self.probe + self.kind.suffix


@dataclass(frozen=True)
class Ceiling:
    """When a footprint run is stopped (the test fails, not the machine). ``machine``: before
    the machine, or the cgroup the process runs in, would have too little memory left (the
    kernel's OOM killer would act), where the run holds much of what was taken; on top of
    that, where set, once RSS rose ``multiple`` times the largest rss or uss rise budget (a
    peak budget counts as its distance from the start) or ``size`` bytes above the measured
    window's start. None of them: never."""

    multiple: float | None = None
    size: float | None = None
    machine: bool = True

    def limit(self, budgets: Iterable[Budget], rss_start: float) -> float:
        """The RSS rise above ``rss_start`` at which to stop; inf for none."""
        if self.size is not None:
            return self.size
        if self.multiple is None:
            return math.inf
        room = [b.limit if b.kind is BudgetKind.RISE else b.limit - rss_start
                for b in budgets if PROBES[b.probe].resident and b.kind.footprint]
        return self.multiple * max(room) if room and max(room) > 0 else math.inf


@dataclass(frozen=True)
class RunSettings:
    iterations: int | None  # None: auto
    warmup: int
    min_iterations: int
    #: None: no cap on the count; an ambiguous auto run goes on while max_seconds allows.
    max_iterations: int | None
    max_seconds: float
    gc: GcPolicy
    evidence: bool
    confidence: float
    device: str | None = None
    cuda_history: bool = False
    #: Fail a test whose budget ends inconclusive.
    strict: bool = False
    #: Where a footprint run is stopped before it takes the machine's memory.
    ceiling: Ceiling = Ceiling()

    def __post_init__(self) -> None:
        object.__setattr__(self, "gc", GcPolicy(self.gc))  # "off" -> OFF


@dataclass(frozen=True)
class BudgetSpec:
    budgets: tuple[Budget, ...]
    run: RunSettings

    @property
    def probes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b.probe for b in self.budgets))

    def for_probe(self, probe: str) -> dict[BudgetKind, Budget]:
        return {b.kind: b for b in self.budgets if b.probe == probe}


def split_budget_key(key: str) -> tuple[str, BudgetKind]:
    """'rss' -> ('rss', SLOPE); 'rss_peak' -> ('rss', PEAK); unknown -> SpecError."""
    if key in PROBES:
        return key, BudgetKind.SLOPE
    for kind in (BudgetKind.PEAK, BudgetKind.GROWTH, BudgetKind.RISE):
        if key.endswith(kind.suffix) and key[: -len(kind.suffix)] in PROBES:
            probe = key[: -len(kind.suffix)]
            if kind is BudgetKind.RISE and PROBES[probe].kind is ProbeKind.SECONDS:
                raise SpecError(
                    f"{key!r}: a rise budget limits how far a probe's memory or count went "
                    f"above its start; {probe} is a time: budget its slope ({probe}=) or its "
                    f"highest value ({probe}_peak=)")
            return probe, kind
    known = ", ".join(sorted(PROBES))
    raise SpecError(
        f"unknown budget {key!r}{_did_you_mean(key)}: budgets are named <probe>, "
        f"<probe>_peak, <probe>_growth or <probe>_rise, with a probe among: {known}; "
        f"run-control arguments are: {', '.join(RUN_KEYS)}"
    )


def _did_you_mean(key: str) -> str:
    """' (did you mean 'children_uss'?)' for a near miss of a budget or run keyword."""
    import difflib

    keywords = [p + kind.suffix for p in PROBES for kind in BudgetKind] + list(RUN_KEYS)
    close = difflib.get_close_matches(key, keywords, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def parse_quantity(info: ProbeInfo, kind: BudgetKind, value: object, where: str) -> float:
    """A budget value in the probe's base unit (bytes, count or seconds, per iteration for
    slopes)."""
    kind = BudgetKind(kind)
    label = info.name + kind.suffix
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise SpecError(
            f"{label}={value!r} {where}: expected a number or a string such as "
            f"{_example(info, kind)!r}, got {type(value).__name__}"
        )
    if isinstance(value, (int, float)):
        number = float(value)
        per_iter = None
        unit = ""
    else:
        match = _QUANTITY.match(value)
        if not match:
            raise SpecError(
                f"{label}={value!r} {where}: cannot read this as a quantity; "
                f"write it like {_example(info, kind)!r}"
            )
        number = float(match["num"])
        unit = match["unit"]
        per_iter = bool(match["per"])
    if not math.isfinite(number) or number < 0:
        raise SpecError(f"{label}={value!r} {where}: a budget must be a finite number >= 0")
    scale = _unit_scale(info, unit, label, value, where)
    if per_iter is not None:
        if kind is BudgetKind.SLOPE and not per_iter and unit:
            raise SpecError(
                f"{label}={value!r} {where}: this is a size, but {label} is a slope budget "
                f"(growth per iteration); write {value.strip() + '/iter'!r}, "  # type: ignore[union-attr]
                f"or use {info.name}_rise= / {info.name}_peak= / {info.name}_growth= for a "
                "size"
            )
        if kind is not BudgetKind.SLOPE and per_iter:
            raise SpecError(
                f"{label}={value!r} {where}: this is a slope (per iteration), but {label} "
                f"expects a size; use {info.name}= for a slope budget"
            )
    return number * scale


def _unit_scale(info: ProbeInfo, unit: str, label: str, value: object, where: str) -> float:
    if not unit:
        return 1.0
    table: Mapping[str, float]
    if info.kind is ProbeKind.BYTES:
        table = SIZE_UNITS
        key = unit.lower() if unit.lower() != "b" or unit == "B" else "?"
    elif info.kind is ProbeKind.SECONDS:
        table, key = TIME_UNITS, unit
    else:
        table = {info.unit: 1.0}
        key = unit
    if key not in table:
        allowed = {ProbeKind.BYTES: "B, KB, MB, GB, KiB, MiB, GiB",
                   ProbeKind.SECONDS: "s, ms, us, ns"}.get(
            info.kind, f"a plain number (or {info.unit})"
        )
        raise SpecError(f"{label}={value!r} {where}: unknown unit {unit!r}; use {allowed}")
    return float(table[key])


def _example(info: ProbeInfo, kind: BudgetKind) -> str:
    base = {ProbeKind.BYTES: "4 KiB", ProbeKind.SECONDS: "1 ms", ProbeKind.COUNT: "0"}[info.kind]
    if kind is BudgetKind.SLOPE and info.kind is not ProbeKind.COUNT:
        return base + "/iter"
    return base


def positive_int(name: str, value: object, where: str, *, minimum: int = 1) -> int:
    number = value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        number = int(value.strip())
    if isinstance(number, bool) or not isinstance(number, int):
        raise SpecError(
            f"{name}={value!r} {where}: expected a whole number >= {minimum}, "
            f"got {type(value).__name__}"
        )
    if number < minimum:
        raise SpecError(f"{name}={value!r} {where}: must be >= {minimum}")
    return number


def parse_iterations(value: object, where: str) -> int | None:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    try:
        return positive_int("iterations", value, where)
    except SpecError:
        raise SpecError(
            f"iterations={value!r} {where}: expected 'auto' or a whole number >= 1"
        ) from None


def parse_cap(value: object, where: str) -> int | None:
    """max_iterations: a whole number, or 'none' (no cap: max_seconds decides)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    try:
        return positive_int("max_iterations", value, where)
    except SpecError:
        raise SpecError(
            f"max_iterations={value!r} {where}: expected a whole number >= 1, or 'none' for no "
            "cap on the count (max_seconds still bounds the run)"
        ) from None


def parse_seconds(name: str, value: object, where: str) -> float:
    number = value
    if isinstance(value, str):
        match = _QUANTITY.match(value)
        if match and not match["per"] and (match["unit"] in TIME_UNITS or not match["unit"]):
            number = float(match["num"]) * TIME_UNITS.get(match["unit"] or "s", 1.0)
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not number > 0:
        raise SpecError(f"{name}={value!r} {where}: expected a number of seconds > 0")
    return float(number)


def parse_bool(name: str, value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise SpecError(f"{name}={value!r} {where}: expected true or false")


def parse_gc(value: object, where: str) -> GcPolicy:
    try:
        return GcPolicy(value)
    except ValueError:
        choices = ", ".join(p.value for p in GcPolicy)
        raise SpecError(f"gc={value!r} {where}: expected one of {choices}") from None


def parse_confidence(value: object, where: str) -> float:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)
    if isinstance(value, bool) or not isinstance(value, float) or not 0.5 < value < 1:
        raise SpecError(f"confidence={value!r} {where}: expected a number between 0.5 and 1")
    return value


#: The devices the cuda_* probes can read: "cuda" (the current one), "cuda:N" or an index N.
_CUDA_DEVICE = re.compile(r"cuda(:[0-9]+)?|[0-9]+")


def parse_device(value: object, where: str) -> str | None:
    """A CUDA device as text; a torch.device is taken by its text."""
    if value is None or value == "":
        return None
    text = value if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        text = str(value)
    elif isinstance(getattr(value, "type", None), str) and not isinstance(value, str):
        text = str(value)  # torch.device("cuda:1") -> "cuda:1"
    if text is not None and _CUDA_DEVICE.fullmatch(text.strip()):
        return text.strip()
    if text is not None and text.strip():
        raise SpecError(f"device={value!r} {where}: not a CUDA device; the cuda_* probes "
                        "read 'cuda' (the current one), 'cuda:N' or an index N such as 0")
    raise SpecError(f"device={value!r} {where}: expected a device such as 'cuda:0' or 0")


_MULTIPLE = re.compile(r"^\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*[xX]\s*$")


def parse_ceiling(value: object, where: str) -> Ceiling:
    """'machine' (the default: before the machine or its cgroup runs out of memory), '4x'
    (times the largest rss/uss rise or peak budget), a size of RSS rise such as '8 GiB'
    (either of these besides the machine's), or 'off'."""
    if isinstance(value, Ceiling):
        return value
    text = str(value).strip() if isinstance(value, (str, int, float)) else ""
    if text.lower() in ("off", "none", "false", "0"):
        return Ceiling(machine=False)
    if text.lower() in ("machine", "auto"):
        return Ceiling()
    multiple = _MULTIPLE.match(text)
    if multiple and float(multiple["num"]) >= 1:
        return Ceiling(multiple=float(multiple["num"]))
    try:
        return Ceiling(size=parse_quantity(PROBES["rss"], BudgetKind.RISE, value, where))
    except SpecError:
        pass
    raise SpecError(
        f"ceiling={value!r} {where}: expected 'machine' (stop before the machine or its "
        "cgroup runs out of memory), a multiple of the largest rss or uss rise or peak "
        "budget such as '4x' (at least 1x), a size of RSS rise such as '8 GiB', or 'off'")


#: Every run-control key, in the order of RunSettings, with the one function that reads its
#: value: the marker's keywords, the ini keys and the command-line flags all go through it.
RUN_PARSERS: dict[str, Callable[[object, str], Any]] = {
    "iterations": parse_iterations,
    "warmup": lambda value, where: positive_int("warmup", value, where, minimum=0),
    "min_iterations": lambda value, where: positive_int("min_iterations", value, where),
    "max_iterations": parse_cap,
    "max_seconds": lambda value, where: parse_seconds("max_seconds", value, where),
    "gc": parse_gc,
    "evidence": lambda value, where: parse_bool("evidence", value, where),
    "confidence": parse_confidence,
    "device": parse_device,
    "cuda_history": lambda value, where: parse_bool("cuda_history", value, where),
    "strict": lambda value, where: parse_bool("strict", value, where),
    "ceiling": parse_ceiling,
}
RUN_KEYS = tuple(RUN_PARSERS)


def parse_run_value(key: str, value: object, where: str) -> Any:
    """Validate one run-control value."""
    parser = RUN_PARSERS.get(key)
    if parser is None:
        raise SpecError(f"unknown run setting {key!r} {where}")
    return parser(value, where)


def parse_budget_line(line: str, where: str) -> Budget:
    """'rss=4 KiB/iter' (from the ini or the command line) -> Budget."""
    key, sep, value = line.partition("=")
    if not sep or not key.strip():
        raise SpecError(f"budget {line!r} {where}: write budgets as <probe>=<value>, e.g. rss=0")
    probe, kind = split_budget_key(key.strip())
    limit = parse_quantity(PROBES[probe], kind, value.strip(), where)
    return Budget(probe, kind, limit, where)


def build_spec(
    defaults: RunSettings,
    default_budgets: tuple[Budget, ...],
    marker_kwargs: Mapping[str, object],
    where: str,
) -> BudgetSpec:
    """Combine defaults (already ini < CLI) with one test's marker arguments (marker wins)."""
    run = {field: getattr(defaults, field) for field in RunSettings.__dataclass_fields__}
    budgets = {(b.probe, b.kind): b for b in default_budgets}
    for key, value in marker_kwargs.items():
        if key in RUN_KEYS:
            run[key] = parse_run_value(key, value, where)
            continue
        probe, kind = split_budget_key(key)
        if value is None:
            budgets.pop((probe, kind), None)
            continue
        budgets[(probe, kind)] = Budget(
            probe, kind, parse_quantity(PROBES[probe], kind, value, where), where
        )
    if _footprint_only(budgets.values()):
        run.update(_one_call(marker_kwargs, run))
    settings = RunSettings(**run)
    if (settings.iterations is None and settings.max_iterations is not None
            and settings.min_iterations > settings.max_iterations):
        raise SpecError(
            f"min_iterations={settings.min_iterations} is above "
            f"max_iterations={settings.max_iterations} {where}"
        )
    return BudgetSpec(tuple(budgets.values()), settings)


def _footprint_only(budgets: Iterable[Budget]) -> bool:
    """Whether every budget is about the highest point (``_peak``, ``_rise``): such a test
    asks how much one call of a phase needs, not whether calls leak."""
    kinds = [b.kind for b in budgets]
    return bool(kinds) and all(kind.footprint for kind in kinds)


def _one_call(marker_kwargs: Mapping[str, object], run: Mapping[str, Any]) -> dict[str, Any]:
    """The run of a footprint-only test: an 'auto' run has no slope to settle, so one
    measured call (a 25 GB phase runs once), after the warm-up its marker asks for and no
    other (the ini's and the command line's warm-up are for loops). A count the marker sets
    stays; a fixed count from the ini or the command line stays too."""
    found: dict[str, Any] = {} if "warmup" in marker_kwargs else {"warmup": 0}
    if "iterations" not in marker_kwargs and run["iterations"] is None:
        found["iterations"] = 1
    return found
