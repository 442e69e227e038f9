"""A suite of about a thousand fast tests, a few of them leaking, for ``bench/sweep.py fast``.

The tests are of the kind a serializer's or a utility library's suite is made of: a body of
tens to hundreds of microseconds (encode and decode, parse, format, sort, a small class),
most of them parametrized. Five tests leak, each through another probe of the screen: an
object kept per call, 64 KiB kept per call, a descriptor and a thread left open per call, and
a dict that grows by one entry per call. Written out as files; nothing here runs a test.
"""

from __future__ import annotations

from pathlib import Path

CLEAN = '''
import base64, collections, dataclasses, datetime, decimal, fractions, json, re, struct
import pytest

WORDS = "the quick brown fox jumps over the lazy dog".split()
NUMBER = re.compile(r"-?\\d+(\\.\\d+)?")


@dataclasses.dataclass
class Point:
    x: float
    y: float

    def norm(self):
        return (self.x * self.x + self.y * self.y) ** 0.5


def document(n):
    return {"id": n, "name": WORDS[n % len(WORDS)] * 3, "tags": WORDS[: n % 7],
            "scores": [i * 0.5 for i in range(n % 20)], "nested": {"a": [None, True, n]}}


@pytest.mark.parametrize("n", range(@COUNT@))
def test_json_roundtrip_@K@(n):
    doc = document(n)
    assert json.loads(json.dumps(doc)) == doc


@pytest.mark.parametrize("n", range(@COUNT@))
def test_struct_pack_@K@(n):
    packed = struct.pack("<iqd16s", n, n * 7, n / 3, b"x" * (n % 16))
    assert struct.unpack("<iqd16s", packed)[0] == n


@pytest.mark.parametrize("n", range(@COUNT@))
def test_regex_numbers_@K@(n):
    text = " ".join(f"{w} {i * n}.{i}" for i, w in enumerate(WORDS))
    assert len(NUMBER.findall(text)) == len(WORDS)


@pytest.mark.parametrize("n", range(@COUNT@))
def test_sort_and_count_@K@(n):
    data = [(i * 7919 + n) % 101 for i in range(200)]
    counts = collections.Counter(data)
    assert sorted(data)[0] == min(counts)


@pytest.mark.parametrize("n", range(@COUNT@))
def test_dataclass_points_@K@(n):
    points = [Point(i, n) for i in range(30)]
    assert max(p.norm() for p in points) >= n


@pytest.mark.parametrize("n", range(@COUNT@))
def test_decimal_and_fraction_@K@(n):
    total = sum(decimal.Decimal(i) / 7 for i in range(1, 20 + n % 10))
    assert fractions.Fraction(n, 3) * 3 == n and total > 0


@pytest.mark.parametrize("n", range(@COUNT@))
def test_base64_and_dates_@K@(n):
    raw = bytes(range(n % 256)) * 4
    assert base64.b64decode(base64.b64encode(raw)) == raw
    day = datetime.date(2020, 1, 1) + datetime.timedelta(days=n)
    assert datetime.date.fromisoformat(day.isoformat()) == day


def test_string_formatting_@K@():
    lines = [f"{i:>5} {w:<10} {i / 3:.3f}" for i, w in enumerate(WORDS * 4)]
    assert len("\\n".join(lines).splitlines()) == 36
'''

LEAKS = '''
import os, threading

KEPT = []
REGISTRY = {}
STOP = threading.Event()


def test_leak_object_per_call():
    KEPT.append({"payload": list(range(20))})


def test_leak_64k_per_call():
    KEPT.append(bytearray(65536))


def test_leak_descriptor_per_call():
    KEPT.append(open(os.devnull))


def test_leak_thread_per_call():
    threading.Thread(target=STOP.wait, daemon=True).start()


def test_leak_registry_entry_per_call():
    REGISTRY[len(REGISTRY)] = object()
'''

#: Tests per parametrized function, and the leaking tests' names.
PER_FUNCTION = 20
MODULES = 7
LEAKING = ("test_leak_object_per_call", "test_leak_64k_per_call",
           "test_leak_descriptor_per_call", "test_leak_thread_per_call",
           "test_leak_registry_entry_per_call")


def write(where: Path) -> dict[str, str]:
    """The suite's files in ``where``; returns each test's truth ("leak" or "clean") by the
    name of its function (a parametrized function's tests share it)."""
    (where / "pytest.ini").write_text("[pytest]\n")
    truth: dict[str, str] = {}
    for k in range(MODULES):
        text = CLEAN.replace("@COUNT@", str(PER_FUNCTION)).replace("@K@", str(k))
        (where / f"test_fast_{k}.py").write_text(text)
    (where / "test_leaks.py").write_text(LEAKS)
    for name in LEAKING:
        truth[f"test_leaks.py::{name}"] = "leak"
    return truth


def count_tests() -> int:
    """Tests in the suite: seven parametrized functions and one plain one per module."""
    return MODULES * (7 * PER_FUNCTION + 1) + len(LEAKING)
