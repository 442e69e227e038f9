"""Where a thread is: its stack, read from another thread without making a frame object
(faulthandler's dump), and the line of the user's code it runs."""

from __future__ import annotations

import ctypes
import faulthandler
import os
import sys
import tempfile
from typing import Any

from pytest_membudget.frames import STACK_FRAMES, is_own, is_user_frame, is_wait
from pytest_membudget.probes.procfs import libc_function

#: Frames that count as the line of the function running them.
HELPERS = frozenset({"<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>", "<lambda>"})


def _held_file_calls() -> tuple[Any, Any, Any] | None:
    """The C library's lseek, pread and ftruncate, called without letting go of the GIL;
    None where there is no C library to call."""
    lseek, pread, ftruncate = (libc_function(name, keep_gil=True)
                               for name in ("lseek", "pread", "ftruncate"))
    if lseek is None or pread is None or ftruncate is None:
        return None
    lseek.restype, lseek.argtypes = ctypes.c_long, [ctypes.c_int, ctypes.c_long, ctypes.c_int]
    pread.restype = ctypes.c_ssize_t
    pread.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long]
    ftruncate.restype, ftruncate.argtypes = ctypes.c_int, [ctypes.c_int, ctypes.c_long]
    return lseek, pread, ftruncate


_HELD_FILE_CALLS = _held_file_calls()


Where = tuple[str, int, str]
#: The running thread's innermost frame, its first frame of the user's code, and whether it
#: was waiting for other threads.
Frames = tuple[Where | None, Where | None, bool]


def frames_of(stack: list[Where], waits: bool = True) -> Frames:
    """A thread's ``stack`` (innermost first) read for the line it runs: its innermost frame,
    its first frame of the user's code, and whether it is waiting for other threads. A
    comprehension, generator expression or lambda counts as the line of the function that
    runs it: a loop's rise is its function's, not its helper's. With ``waits``, a thread
    waiting in the standard library's locks, queues or futures is read at the frame that
    waits (pandas' ``read_csv`` while its pool parses), not at ``threading.py``: the memory
    is the other threads' work for that frame."""
    skipped = 0
    while waits and skipped < len(stack) - 1 and is_wait(stack[skipped][0]):
        skipped += 1
    inner = stack[skipped] if stack else None
    at = 0
    while at < len(stack) and not is_user_frame(stack[at][0]):
        at += 1
    # The plugin's own code above the user's frame (its judgement calling numpy, between
    # calls): the thread is in the plugin's work, whatever library it is in.
    inner = next((where for where in stack[:at] if is_own(where[0])), inner)
    while (at + 1 < len(stack) and stack[at][2] in HELPERS
           and is_user_frame(stack[at + 1][0])):
        at += 1
    return inner, stack[at] if at < len(stack) else None, skipped > 0


def stack_in(dump: bytes, header: bytes) -> list[Where]:
    """The stack of the thread whose block in faulthandler's ``dump`` starts with ``header``.
    A thread being started carries its starter's id until it runs ("<no Python frame>"):
    the block with frames is the thread's own."""
    start = dump.find(header)
    while start >= 0:
        end = dump.find(b"\n\n", start)
        stack = _stack_of(dump[start:end if end >= 0 else len(dump)])
        if stack:
            return stack
        start = dump.find(header, start + 1)
    return []


def other_stacks(dump: bytes, skipped: tuple[bytes, ...]) -> list[list[Where]]:
    """The stacks of faulthandler's ``dump`` but those of the threads whose blocks start
    with one of ``skipped`` headers, and the dumping thread's own ("Current thread")."""
    found = []
    for block in dump.split(b"\n\n"):
        head = block.lstrip(b"\n")
        if head.startswith(b"Current thread") or any(h in head[:64] for h in skipped):
            continue
        stack = _stack_of(head)
        if stack:
            found.append(stack)
    return found


def running_line(stacks: list[list[Where]]) -> tuple[Where, Where] | None:
    """Of other threads' ``stacks``, the line of the user's code most of those at work run
    (not waiting, not this plugin's): (innermost frame, user's frame); None where none is at
    work in the user's code. Memory a pool's workers allocate is theirs, not the line of
    the thread that waits for them."""
    counts: dict[tuple[Where, Where], int] = {}
    for stack in stacks:
        if not stack or is_wait(stack[0][0]) or any(is_own(where[0]) for where in stack):
            continue
        inner, user, _ = frames_of(stack, waits=False)
        if inner is not None and user is not None:
            counts[(inner, user)] = counts.get((inner, user), 0) + 1
    return max(counts, key=counts.__getitem__) if counts else None


def own_stack(dump: bytes) -> list[Where]:
    """The frames of a thread's dump of its own stack (ThreadStack.dump_own), innermost
    first."""
    return _stack_of(dump)


def _stack_of(block: bytes) -> list[Where]:
    """The frames of one thread's block of faulthandler's dump, innermost first."""
    stack = []
    for line in block.split(b"\n")[1:]:
        # '  File "name", line 12 in function' (line '???' where unknown)
        if not line.startswith(b'  File "'):
            continue
        name, _, rest = line[8:].rpartition(b'", line ')
        number, _, function = rest.partition(b" in ")
        stack.append((os.fsdecode(name), int(number) if number.isdigit() else 0,
                      function.decode("utf-8", "replace")))
    return stack


class ThreadStack:
    """One thread's stack, innermost frame first, as (file, line, function), read from
    another thread by faulthandler's dump of every thread's stack.

    The dump walks the frames in C with the GIL held and makes no frame object. A frame
    object the watch held (``sys._current_frames()``) would own the locals of a function
    that returned meanwhile: a 40 MiB temporary would outlive its call and the next call's
    would be counted on top of it (the workload's peak doubled by the instrument). The
    dump costs about 50 us (a few dozen writes to a file in memory); it is read only at a
    new step of a rise and when threads appear."""

    def __init__(self, ident: int) -> None:
        self._ident = ident
        self._header = b"hread 0x%0*x " % (2 * ctypes.sizeof(ctypes.c_ulong), ident)
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (read at every step, closed by close())
        self._fd = self._file.fileno()
        # Made here, before tracing begins: a thread reading its own stack reads into it.
        self._buffer = ctypes.create_string_buffer(1 << 14)

    def _dump(self, all_threads: bool, hold: bool = False) -> bytes:
        fd = self._fd
        # The dump first: it writes without letting go of the GIL, so the stack is the one
        # of the moment the watch got the GIL back (the RSS it just read). The file's calls
        # let go of it and let the workload run on: they come after, and the file is left
        # empty for the next read (a reset before the dump read a long C call's line as
        # the caller's, the call having returned meanwhile). ``hold``: the file's calls
        # keep the GIL too, for a thread that reads its own stack: letting go, it would
        # wait for the GIL again after each call behind every busy thread of the workload
        # (a loop starting fifty threads ran twice as slowly).
        faulthandler.dump_traceback(fd, all_threads=all_threads)
        if hold and _HELD_FILE_CALLS is not None:
            lseek, pread, ftruncate = _HELD_FILE_CALLS
            size = lseek(fd, 0, os.SEEK_CUR)
            if size > len(self._buffer):
                self._buffer = ctypes.create_string_buffer(size)
            buffer = self._buffer
            got = pread(fd, buffer, size, 0) if size > 0 else 0
            ftruncate(fd, 0)
            lseek(fd, 0, os.SEEK_SET)
            return ctypes.string_at(buffer, max(got, 0))
        size = os.lseek(fd, 0, os.SEEK_CUR)
        dump = os.pread(fd, size, 0)
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        return dump

    def read(self) -> list[Where]:
        return self.read_all()[0]

    def read_all(self) -> tuple[list[Where], list[list[Where]]]:
        """The thread's stack, and every other thread's but the reader's own."""
        dump = self._dump(all_threads=True)
        stack = stack_in(dump, self._header)
        others = other_stacks(dump, (self._header,))
        if stack:
            return stack, others
        # Not in the dump: faulthandler lists the newest 100 threads, and the measured one
        # is among the oldest. Its innermost frames, read the other way (see above).
        frame = sys._current_frames().get(self._ident)
        stack = []
        while frame is not None and len(stack) < STACK_FRAMES:
            stack.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
            frame = frame.f_back
        del frame
        return stack, others

    def dump_own(self) -> bytes:
        """The calling thread's own stack as faulthandler's dump of it alone (no frame object
        made), to be read by :func:`own_stack` later: a thread that reads its stack in the
        middle of a workload does as little as it can there."""
        return self._dump(all_threads=False, hold=True)

    def close(self) -> None:
        self._file.close()
