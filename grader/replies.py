"""Reading numbers out of what a runner (or a driver beside it) sends back: a reply is the
submission's to write, so each figure is taken only as a finite number of the expected type
within its range, never converted blindly (`float()` of an integer of 400 digits overflows,
NaN and infinities would make a report's JSON invalid)."""

from __future__ import annotations

import math
from typing import Any

# No figure the grader reads from a reply is meaningfully larger (seconds, MHz, percent).
LARGEST = 1e12


def number(value: Any, *, low: float = 0.0, high: float = LARGEST) -> float | None:
    """`value` as a float when it is an int or a float (not a bool), finite, and within
    [low, high]; else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int) and not -LARGEST <= value <= LARGEST:
        return None
    result = float(value)
    if not math.isfinite(result) or not low <= result <= high:
        return None
    return result


def count(value: Any, *, high: int = 1 << 53) -> int | None:
    """`value` when it is an int (not a bool) within [0, high]; else None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        return None
    return value
