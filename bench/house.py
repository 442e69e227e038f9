"""The form of the package, in figures: module-level tuning constants (and names defined in
more than one module), ``dict[str, Any]`` annotations, the evidence's ``*_SECONDS`` limits,
lists of probe names outside the catalog, and the longest modules and functions.

    python bench/house.py [--files] [--owned FILE...]

Figures, not assertions: tests/unit/test_house.py holds the limits that are rules (module and
function length, the number of tuning constants, the evidence's deadlines, probe lists outside
the catalog) and counts with this script's functions; this script prints the figures and names
each constant. ``--owned`` counts only the given files (paths under pytest_membudget/) beside
the whole package.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_membudget"
#: Folders where a list of probe names is a probe fact out of its place (the catalog).
NO_PROBE_LISTS = ("judge", "sweep", "evidence")


@dataclass(frozen=True)
class Constant:
    module: str
    name: str
    value: str


def modules(base: Path | None = None) -> list[Path]:
    return sorted(p for p in (base or PACKAGE).rglob("*.py") if "_build" not in p.parts)


def relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


#: Numbers the code states but does not choose: units, formats and limits set by another
#: program or a standard. Listed apart, each with what fixes it; every other numeric
#: constant is a tuning constant.
FACTS = {
    "SIZE_UNITS": "the units' definitions",
    "TIME_UNITS": "the units' definitions",
    "SCHEMA_VERSION": "the JSON report's format",
    "NUM_THREADS": "the field's index in /proc/<pid>/stat",
    "NO_TESTS": "pytest.ExitCode.NO_TESTS_COLLECTED",
    "BENCHER_NAME_LIMIT": "Bencher's limit on a benchmark's name",
    "ENTRIES": "CPython's type cache size (MCACHE_SIZE_EXP)",
    "SMALL_REQUEST": "pymalloc's largest request",
    "SMALL_LIMIT": "torch's largest small-pool block (kSmallSize)",
    "LEAST_CALLS": "a rise between calls needs two calls to show",
}


def _numeric(node: ast.expr) -> bool:
    """A number written in the source: a literal, arithmetic on literals (and names), or a
    tuple of them; ``float(...)`` and ``int(...)`` of such."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.Attribute):  # math.inf
        return ast.unparse(node) == "math.inf"
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        sides = (node.left, node.right)
        return any(_numeric(s) for s in sides) and all(
            _numeric(s) or isinstance(s, ast.Name) for s in sides)
    if isinstance(node, (ast.Tuple, ast.List)):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
            "float", "int"):
        return bool(node.args) and all(_numeric(a) for a in node.args)
    if isinstance(node, ast.Dict):  # a table of numbers (each step's share, each kind's)
        return bool(node.values) and all(_numeric(v) for v in node.values)
    return False


def _entries(node: ast.expr) -> int:
    """How many numbers a constant holds: one, or a table's (a tuple's) entries."""
    if isinstance(node, ast.Dict):
        return sum(_entries(v) for v in node.values)
    if isinstance(node, (ast.Tuple, ast.List)):
        return sum(_entries(e) for e in node.elts)
    return 1


def _assigned(body: Iterable[ast.stmt]) -> Iterator[tuple[str, ast.expr]]:
    for node in body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node.value
                elif (isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                      and len(target.elts) == len(node.value.elts)):
                    # A, B = 0.9, 0.1: one constant each
                    for name, value in zip(target.elts, node.value.elts, strict=True):
                        if isinstance(name, ast.Name):
                            yield name.id, value
        elif (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
              and node.value is not None):
            yield node.target.id, node.value


def constants(paths: Iterable[Path]) -> list[Constant]:
    """Module-level names in capitals bound to a number written in the source, or to a tuple
    or a dict of numbers (one constant each): the tuning constants (and a few facts: a
    page's size, a schema's version)."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text())
        for name, value in _assigned(tree.body):
            if name.isupper() and _numeric(value):
                found.append(Constant(relative(path), name, ast.unparse(value)))
    return found


def seconds_limits(paths: Iterable[Path]) -> list[Constant]:
    """Names ending in ``_SECONDS`` bound at module or class level to a number."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text())
        bodies = [tree.body, *(n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]
        for body in bodies:
            for name, value in _assigned(body):
                if name.endswith("_SECONDS") and _numeric(value):
                    found.append(Constant(relative(path), name, ast.unparse(value)))
    return found


def _is_dict_str_any(node: ast.AST) -> bool:
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id == "dict" and isinstance(node.slice, ast.Tuple)
            and [ast.unparse(e) for e in node.slice.elts] == ["str", "Any"])


def dict_any(path: Path) -> int:
    """``dict[str, Any]`` written in a module's code (annotations, aliases, casts)."""
    return sum(_is_dict_str_any(node) for node in ast.walk(ast.parse(path.read_text())))


def function_lengths(path: Path) -> Iterator[tuple[str, int]]:
    """Each function's lines, decorators and docstring included, by qualified name."""
    tree = ast.parse(path.read_text())

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                name = f"{prefix}{child.name}"
                yield name, (child.end_lineno or child.lineno) - start + 1
                yield from walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")

    return walk(tree, "")


def probe_lists(paths: Iterable[Path], names: set[str]) -> list[tuple[str, int, str]]:
    """Tuples, lists, sets and dict keys of strings that are all probe names (two or more,
    one in a set), names bound to one probe's name, prefixes of names (``startswith("cuda")``), and
    comparisons with one probe's name
    (``== "malloc"``, ``"heap" in``): (module, line, source)."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            elts: list[ast.expr | None] = []
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                elts = list(node.elts)
            elif isinstance(node, ast.Dict):
                elts = list(node.keys)
            strings = [e.value for e in elts if isinstance(e, ast.Constant)
                       and isinstance(e.value, str)]
            least = 1 if isinstance(node, ast.Set) else 2
            listed = len(strings) >= least and len(strings) == len(elts) and all(
                s in names or s == "pss" for s in strings)
            bound = (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                     and node.value.value in names)
            compared = isinstance(node, ast.Compare) and any(
                isinstance(side, ast.Constant) and side.value in names
                for side in (node.left, *node.comparators))
            prefix = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr == "startswith" and node.args
                      and isinstance(node.args[0], ast.Constant)
                      and any(n.startswith(str(node.args[0].value)) for n in names))
            if listed or compared or bound or prefix:
                found.append((relative(path), getattr(node, "lineno", 0),
                              ast.unparse(node)[:70]))
    return found


def probe_names() -> set[str]:
    import sys

    sys.path.insert(0, str(ROOT))
    from pytest_membudget.catalog import PROBES

    return set(PROBES)


def report(owned: list[str], files: bool) -> None:
    paths = modules()
    mine = [p for p in paths if relative(p) in owned] if owned else []
    consts = constants(paths)
    print(f"modules: {len(paths)}, lines: {sum(len(p.read_text().splitlines()) for p in paths)}")
    facts = [c for c in consts if c.name in FACTS]
    print(f"module-level numeric constants: {len(consts)}"
          + (f" (in the files counted: {len(constants(mine))})" if owned else ""))
    print(f"  of which facts (no setting would change them): {len(facts)}: "
          + ", ".join(f"{c.name} ({FACTS[c.name]})" for c in facts))
    tuning = [c for c in consts if c.name not in FACTS]
    values = sum(_entries(ast.parse(c.value, mode="eval").body) for c in tuning)
    print(f"  tuning constants: {len(tuning)} names, holding {values} numbers (a table's "
          "entries counted one by one)")
    defined = Counter(c.name for c in consts)
    twice = sorted(name for name, count in defined.items() if count > 1)
    print(f"  names defined in more than one module: {twice or 'none'}")
    if files:
        for c in consts:
            print(f"    {c.module}: {c.name} = {c.value}")
    anys = {relative(p): dict_any(p) for p in paths}
    print(f"dict[str, Any]: {sum(anys.values())}"
          + (f" (in the files counted: {sum(anys[relative(p)] for p in mine)})" if owned
             else ""))
    if files:
        for name, count in sorted(anys.items(), key=lambda kv: -kv[1]):
            if count:
                print(f"    {name}: {count}")
    evidence = [p for p in paths if relative(p).startswith("evidence/")
                or relative(p) == "measure/footprint.py"]
    limits = seconds_limits(evidence)
    print(f"*_SECONDS limits in evidence/ and measure/footprint.py: {len(limits)}: "
          + ", ".join(f"{c.module}:{c.name}" for c in limits))
    lists = probe_lists([p for p in paths if relative(p).split("/")[0] in NO_PROBE_LISTS],
                        probe_names())
    print(f"probe names listed or compared in {', '.join(NO_PROBE_LISTS)}: {len(lists)}")
    for module, line, source in lists:
        print(f"    {module}:{line}: {source}")
    sizes = sorted(((len(p.read_text().splitlines()), relative(p)) for p in paths),
                   reverse=True)
    print("longest modules: " + ", ".join(f"{name} {n}" for n, name in sizes[:3]))
    functions = sorted(((n, f"{relative(p)}:{name}") for p in paths
                        for name, n in function_lengths(p)), reverse=True)
    print("longest functions: " + ", ".join(f"{name} {n}" for n, name in functions[:3]))
    print(f"modules over 450 lines: {sum(n > 450 for n, _ in sizes)}; "
          f"functions over 60 lines: {sum(n > 60 for n, _ in functions)}")


def main() -> None:
    global PACKAGE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", action="store_true", help="list each constant and file")
    parser.add_argument("--owned", nargs="*", default=[],
                        help="files under pytest_membudget/ to count apart")
    parser.add_argument("--package", type=Path, default=ROOT / "pytest_membudget",
                        help="another copy of the package (an older commit's, extracted)")
    args = parser.parse_args()
    PACKAGE = args.package.resolve()
    report(args.owned, args.files)


if __name__ == "__main__":
    main()
