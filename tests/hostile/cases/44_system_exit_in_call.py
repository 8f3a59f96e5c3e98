# threat: 17
# expect: error
# defence: the runner catches BaseException and the harness treats any missing answer as an error
"""Raises SystemExit(0) inside custom_kernel on a timed call."""

_calls = 0


def custom_kernel(data):
    global _calls
    _calls += 1
    A, B, out = data
    out[...] = A + B
    if _calls > 1:
        raise SystemExit(0)
    return out
