# threat: 18
# expect: passed, error, timeout
# timeout_s: 20
# defence: the harness is outside the runner's pid namespace; stopped, it would hang the worker
"""SIGSTOPs its parent (the harness) so the grading never concludes, then answers correctly."""

import os
import signal

_parent = os.getppid()
if _parent > 1:
    try:
        getattr(os, "ki" + "ll")(_parent, signal.SIGSTOP)
        print("stopped parent", _parent)
    except OSError as exc:
        print("cannot stop parent", exc)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
