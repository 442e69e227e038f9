"""The room this process has left: the machine's available memory, or its cgroup's limit
less what is in use there (the inactive page cache counted as room), whichever is less."""

from __future__ import annotations

from pathlib import Path

from pytest_membudget.probes.room import RoomReader

MIB = 1024 * 1024
MEMINFO = "MemTotal:       8388608 kB\nMemFree:        1000 kB\nMemAvailable:   4194304 kB\n"


def write(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def reader(tmp_path: Path, table: str) -> RoomReader:
    (tmp_path / "meminfo").write_text(MEMINFO)
    (tmp_path / "cgroup").write_text(table)
    return RoomReader(str(tmp_path / "meminfo"), str(tmp_path / "cgroup"), str(tmp_path / "fs"))


def test_without_a_cgroup_limit_the_machine_is_the_room(tmp_path: Path) -> None:
    room = reader(tmp_path, "0::/\n").read()
    assert room is not None and room.where == "machine"
    assert (room.available, room.total) == (4 * 1024 * MIB, 8 * 1024 * MIB)


def test_a_cgroup_v2_limit_under_the_machine_is_the_room(tmp_path: Path) -> None:
    fs = tmp_path / "fs"
    write(fs, {"cgroup.controllers": "memory"})
    write(fs / "ci" / "job", {"memory.max": f"{1024 * MIB}\n",
                             "memory.current": f"{900 * MIB}\n",
                             "memory.stat": f"anon 1\ninactive_file {100 * MIB}\n"})
    write(fs / "ci", {"memory.max": "max\n", "memory.current": "0\n", "memory.stat": ""})
    room = reader(tmp_path, "0::/ci/job\n").read()
    assert room is not None and room.where == "cgroup /ci/job"
    # 1 GiB less 900 MiB in use, of which 100 MiB of page cache the kernel reclaims first.
    assert (room.available, room.total) == (224 * MIB, 1024 * MIB)


def test_a_cgroup_v1_limit_of_an_ancestor_counts(tmp_path: Path) -> None:
    memory = tmp_path / "fs" / "memory"
    write(memory / "slice", {"memory.limit_in_bytes": f"{512 * MIB}\n",
                             "memory.usage_in_bytes": f"{500 * MIB}\n",
                             "memory.stat": "total_inactive_file 0\n"})
    write(memory / "slice" / "test", {"memory.limit_in_bytes": "9223372036854771712\n",
                                      "memory.usage_in_bytes": f"{400 * MIB}\n",
                                      "memory.stat": ""})
    room = reader(tmp_path, "4:memory:/slice/test\n1:cpu:/\n").read()
    assert room is not None and room.where == "cgroup /slice"
    assert room.available == 12 * MIB


def test_a_system_that_says_nothing_gives_no_room(tmp_path: Path) -> None:
    room = RoomReader(str(tmp_path / "none"), str(tmp_path / "none"), str(tmp_path)).read()
    assert room is None
