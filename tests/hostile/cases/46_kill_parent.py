# threat: 18
# expect: passed, error
# defence: the harness is outside the runner's pid namespace; the runner cannot signal it
"""SIGKILLs its parent (the harness, or whatever is above it), then computes the right answer."""

import os
import signal

_parent = os.getppid()
if _parent > 1:
    try:
        getattr(os, "ki" + "ll")(_parent, signal.SIGKILL)
        print("signalled parent", _parent)
    except OSError as exc:
        print("cannot signal parent", exc)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
