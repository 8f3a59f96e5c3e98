# threat: 7, 32
# expect: failed
# defence: every ranked timed call's output is checked, and out is poisoned before each
"""Does the work on the first two calls (the checked ones), then skips it."""

_calls = 0


def custom_kernel(data):
    global _calls
    _calls += 1
    A, B, out = data
    if _calls <= 2:
        out[...] = A + B
    return out
