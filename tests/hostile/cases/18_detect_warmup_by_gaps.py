# threat: 7, 30
# expect: failed
# defence: the warm-up is not the check; every ranked timed call is checked
"""Decides by call rhythm: calls that come back to back are warm-up or batch and get the work;
a call after a pause (a fresh ranked input set) gets nothing."""

import time

_last = None


def custom_kernel(data):
    global _last
    now = time.monotonic()
    paused = _last is not None and now - _last > 0.002
    _last = now
    A, B, out = data
    if paused:
        return out
    out[...] = A + B
    return out
