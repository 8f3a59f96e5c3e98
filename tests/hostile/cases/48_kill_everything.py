# threat: 18
# expect: passed, error
# defence: in its own pid namespace, kill(-1) reaches only the runner's own processes
"""kill(-1, SIGKILL): every process it is allowed to signal, from inside custom_kernel."""

import os
import signal


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    try:
        getattr(os, "ki" + "ll")(-1, signal.SIGKILL)
    except OSError as exc:
        print("kill(-1) refused", exc)
    return out
