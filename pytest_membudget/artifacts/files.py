"""Report and baseline files: atomic writes, validated reads, the baseline directory.

Layout: ``<storage>/<machine fingerprint>/<NAME>.json``, one document per saved run, in the
format of :mod:`pytest_membudget.artifacts.document`. Pure: stdlib only, no pytest. Every problem
raises :class:`ReportFileError` whose message names the file and says what to do.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from pytest_membudget.artifacts.document import FORMAT, SCHEMA, Document, upgrade

NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$")
LATEST = "latest"


class ReportFileError(Exception):
    """A report or baseline file that cannot be written, read or used."""


def write_json(path: Path, document: Any) -> None:
    """Write ``document`` so that readers see the old file or the new one, never a part:
    a temporary file in the same directory, flushed to disk, then renamed over ``path``.
    The file gets the permissions of any file the user creates (0666 less the umask), or
    those of the file it replaces, so that a CI step under another user can read it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(document, indent=1, allow_nan=False) + "\n"
        handle, temporary = _create_beside(path)
    except (OSError, ValueError) as exc:
        raise ReportFileError(f"cannot write {path}: {exc}; check that the directory is "
                              "writable (or choose another path)") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            with contextlib.suppress(FileNotFoundError):
                os.chmod(temporary, stat.S_IMODE(path.stat().st_mode))
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise ReportFileError(f"cannot write {path}: {exc}; check the disk and the "
                              "directory's permissions") from None


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new, empty file next to ``path``, created with mode 0666 for the kernel to take the
    umask from (``tempfile.mkstemp`` would make it 0600)."""
    for _ in range(100):
        temporary = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def read_document(path: Path) -> Document:
    """A report or baseline, checked to be ours and of a schema this version understands."""
    redo = ("replace it with a report written by pytest --membudget-json, or save a new "
            "baseline with --membudget-save=NAME --membudget-save-overwrite")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportFileError(f"{path} does not exist; check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportFileError(f"cannot read {path}: {exc}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportFileError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}): "
            f"the file is damaged or truncated; {redo}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ReportFileError(
            f"{path} is not a pytest-membudget report or baseline (no \"format\": "
            f"\"{FORMAT}\" at its top level); pass a file written by pytest-membudget")
    schema = document.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        raise ReportFileError(f"{path} has no valid \"schema\" number; {redo}")
    if schema > SCHEMA:
        raise ReportFileError(
            f"{path} was written by a newer pytest-membudget (schema {schema}; this version "
            f"reads schema {SCHEMA}); upgrade pytest-membudget, or save a new baseline with "
            "this version")
    tests = document.get("tests")
    if not isinstance(tests, dict) or not all(
            isinstance(t, dict) and isinstance(t.get("probes", {}), dict)
            for t in tests.values()):
        raise ReportFileError(f"{path} has no valid \"tests\" mapping; {redo}")
    return upgrade(cast(Document, document))  # ours, of a schema read here, with its tests


def check_name(name: str, where: str) -> str:
    if not NAME.match(name) or name == LATEST:
        raise ReportFileError(
            f"baseline name {name!r} {where} cannot be used: use letters, digits, '.', '_' and "
            f"'-' (up to 100, not starting with '.' or '-', and not {LATEST!r})")
    return name


def machine_dir(storage: Path, fingerprint: str) -> Path:
    return storage / fingerprint


def check_save(storage: Path, fingerprint: str, name: str, *, overwrite: bool) -> Path:
    """Where ``--membudget-save=NAME`` will write; refuses an existing NAME unless told."""
    check_name(name, "from --membudget-save")
    path = machine_dir(storage, fingerprint) / f"{name}.json"
    if path.parent.exists() and not path.parent.is_dir():
        raise ReportFileError(f"{path.parent} is a file, not a baseline directory; move it "
                              "away or choose another --membudget-storage")
    if path.exists() and not overwrite:
        raise ReportFileError(
            f"a baseline named {name!r} already exists: {path}; choose another name, or add "
            "--membudget-save-overwrite to replace it")
    return path


def autosave_path(storage: Path, fingerprint: str, now: datetime | None = None) -> Path:
    """``auto-<UTC time>.json``, numbered on when that name is taken: never overwrites."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    folder = machine_dir(storage, fingerprint)
    path = folder / f"auto-{stamp}.json"
    number = 2
    while path.exists():
        path = folder / f"auto-{stamp}-{number}.json"
        number += 1
    return path


def saved_names(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json") if not p.name.startswith("."))


def find_baseline(storage: Path, fingerprint: str, name: str | None) -> Path:
    """The file ``--membudget-compare[=NAME]`` means: a saved NAME for this machine, the
    latest saved one for this machine when NAME is empty, or NAME as a path to a file."""
    if name and (name.endswith(".json") or os.sep in name or "/" in name):
        path = Path(name)
        if not path.is_file():
            raise ReportFileError(f"--membudget-compare={name}: no such file; pass the path "
                                  "of a report or baseline, or the NAME of a saved baseline")
        return path
    folder = machine_dir(storage, fingerprint)
    if name and name != LATEST:
        check_name(name, "from --membudget-compare")
        path = folder / f"{name}.json"
        if path.is_file():
            return path
        names = saved_names(folder)
        raise ReportFileError(
            f"no baseline named {name!r} for this machine in {folder}; "
            + (f"saved here: {', '.join(names)}" if names else "none is saved there")
            + "; save one with --membudget-save=NAME" + _elsewhere(storage, fingerprint))
    candidates = [folder / f"{n}.json" for n in saved_names(folder)]
    if not candidates:
        raise ReportFileError(
            f"no saved baseline for this machine ({fingerprint}) in {folder}; save one with "
            "--membudget-save=NAME or --membudget-autosave" + _elsewhere(storage, fingerprint))
    return max(candidates, key=lambda p: (str(read_document(p).get("created", "")), p.name))


def _elsewhere(storage: Path, fingerprint: str) -> str:
    others = sorted(p.name for p in storage.glob("*/") if p.is_dir() and p.name != fingerprint
                    and saved_names(p)) if storage.is_dir() else []
    if not others:
        return ""
    return (f" (baselines exist for other machines: {', '.join(others)}; they are not compared "
            "across machines, but a file path may be passed: --membudget-compare=PATH.json)")
