"""The one test for a figure that can be written down: a finite number, or None. NaN and the
infinities stand for "not established" inside the plugin; JSON, dashboards and the regression
rule have no such numbers."""

from __future__ import annotations

import math


def finite_or_none(value: object) -> float | None:
    """``value`` as a float when it is a finite int or float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None
