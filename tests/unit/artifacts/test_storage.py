"""Report and baseline files: atomic writes, clear errors, naming, finding the latest."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pytest_membudget.artifacts import files as storage
from pytest_membudget.artifacts.document import FORMAT, SCHEMA
from pytest_membudget.artifacts.files import ReportFileError

FP = "Linux-x86_64-CPython-3.11-8cpu"


def doc(created: str = "2024-01-01T00:00:00+00:00", **extra: object) -> dict:
    return {"format": FORMAT, "schema": SCHEMA, "created": created, "tests": {}, **extra}


def test_write_json_is_atomic_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "report.json"
    storage.write_json(path, doc(name="one"))
    storage.write_json(path, doc(name="two"))
    assert json.loads(path.read_text())["name"] == "two"
    assert os.listdir(path.parent) == ["report.json"]


@pytest.fixture
def umask_027() -> Iterator[None]:
    before = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(before)


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.usefixtures("umask_027")
def test_write_json_gives_a_new_file_the_umask_s_permissions(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    storage.write_json(path, doc())
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # 0666 less the umask, not 0600
    path.chmod(0o604)  # the user's choice for a file that exists stays
    storage.write_json(path, doc(name="again"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o604


def test_write_json_failure_keeps_the_old_file(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "report.json"
    storage.write_json(path, doc(name="old"))

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ReportFileError, match=r"cannot write .*report.json.*No space left"):
        storage.write_json(path, doc(name="new"))
    assert json.loads(path.read_text())["name"] == "old"
    assert os.listdir(tmp_path) == ["report.json"]


def test_write_json_refuses_nan(tmp_path: Path) -> None:
    with pytest.raises(ReportFileError, match="cannot write"):
        storage.write_json(tmp_path / "x.json", {"value": float("nan")})


@pytest.mark.parametrize(("content", "message"), [
    ('{"format": "pytest-membudget", "sche', "is not valid JSON .*damaged or truncated"),
    ('{"benchmarks": []}', "is not a pytest-membudget report"),
    ("[1, 2]", "is not a pytest-membudget report"),
    (json.dumps(doc() | {"schema": SCHEMA + 1}), "newer pytest-membudget .*upgrade"),
    (json.dumps(doc() | {"schema": "one"}), "no valid \"schema\""),
    (json.dumps(doc() | {"tests": []}), "no valid \"tests\""),
])
def test_read_document_errors_name_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ReportFileError, match=message) as info:
        storage.read_document(path)
    assert str(path) in str(info.value)


def test_read_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ReportFileError, match="does not exist"):
        storage.read_document(tmp_path / "nope.json")


def test_check_save_refuses_an_existing_name_unless_overwrite(tmp_path: Path) -> None:
    path = storage.check_save(tmp_path, FP, "main", overwrite=False)
    assert path == tmp_path / FP / "main.json"
    storage.write_json(path, doc())
    with pytest.raises(ReportFileError, match=r"already exists.*--membudget-save-overwrite"):
        storage.check_save(tmp_path, FP, "main", overwrite=False)
    assert storage.check_save(tmp_path, FP, "main", overwrite=True) == path


@pytest.mark.parametrize("name", ["../up", ".hidden", "a b", "latest", "", "x" * 101])
def test_bad_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(ReportFileError, match="cannot be used"):
        storage.check_save(tmp_path, FP, name, overwrite=False)


def test_autosave_never_overwrites(tmp_path: Path) -> None:
    now = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
    first = storage.autosave_path(tmp_path, FP, now)
    assert first.name == "auto-20240501T120000Z.json"
    storage.write_json(first, doc())
    second = storage.autosave_path(tmp_path, FP, now)
    assert second.name == "auto-20240501T120000Z-2.json"


def test_find_latest_by_created_time(tmp_path: Path) -> None:
    storage.write_json(tmp_path / FP / "zzz.json", doc("2024-01-01T00:00:00+00:00"))
    storage.write_json(tmp_path / FP / "aaa.json", doc("2024-02-01T00:00:00+00:00"))
    assert storage.find_baseline(tmp_path, FP, None).name == "aaa.json"
    assert storage.find_baseline(tmp_path, FP, "latest").name == "aaa.json"
    assert storage.find_baseline(tmp_path, FP, "zzz").name == "zzz.json"


def test_find_errors_say_what_exists(tmp_path: Path) -> None:
    with pytest.raises(ReportFileError,
                       match=r"no saved baseline for this machine .*--membudget-save"):
        storage.find_baseline(tmp_path, FP, None)
    storage.write_json(tmp_path / "Other-arm64" / "main.json", doc())
    with pytest.raises(ReportFileError, match="other machines: Other-arm64"):
        storage.find_baseline(tmp_path, FP, None)
    storage.write_json(tmp_path / FP / "main.json", doc())
    with pytest.raises(ReportFileError, match=r"no baseline named 'dev'.*saved here: main"):
        storage.find_baseline(tmp_path, FP, "dev")


def test_find_by_path(tmp_path: Path) -> None:
    path = tmp_path / "ci" / "base.json"
    storage.write_json(path, doc())
    assert storage.find_baseline(tmp_path / "store", FP, str(path)) == path
    with pytest.raises(ReportFileError, match="no such file"):
        storage.find_baseline(tmp_path, FP, str(tmp_path / "missing.json"))


def test_latest_with_a_corrupt_file_names_it(tmp_path: Path) -> None:
    storage.write_json(tmp_path / FP / "good.json", doc())
    (tmp_path / FP / "broken.json").write_text("{")
    with pytest.raises(ReportFileError, match=r"broken\.json is not valid JSON"):
        storage.find_baseline(tmp_path, FP, None)
