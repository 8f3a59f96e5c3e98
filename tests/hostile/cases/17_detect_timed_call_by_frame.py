# threat: 7, 9, 30
# expect: failed, passed
# max_speedup: 1.5
# defence: the timed calls are plain batch calls on fresh inputs, every one checked
"""Looks at its caller's frame (through a computed name) and skips the work when the caller
is the timer rather than the correctness run."""

import sys

_frame_of = getattr(sys, "_get" + "frame")


def custom_kernel(data):
    A, B, out = data
    caller = _frame_of(1).f_code.co_name
    if caller in ("one_call", "time_case", "warm_up", "batch"):
        return out
    out[...] = A + B
    return out
