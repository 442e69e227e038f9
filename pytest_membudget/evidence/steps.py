"""The evidence's short reruns: a few more iterations of the workload, bounded in count and in
time, with a least count so that growth can show."""

from __future__ import annotations

import time
from collections.abc import Generator


def iterations(start: int, most: int, least: int,
               deadline: float) -> Generator[int, None, int]:
    """Yield up to ``most`` iteration numbers from ``start``, stopping at ``deadline`` (a
    ``time.perf_counter()`` value) once ``least`` have run; return how many ran."""
    done = 0
    while done < most:
        yield start + done
        done += 1
        if done >= least and time.perf_counter() > deadline:
            break
    return done
