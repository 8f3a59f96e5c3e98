# threat: 25
# expect: timeout
# timeout_s: 6
# defence: SIGKILL cannot be blocked; the harness's deadline does not depend on the runner
"""Blocks every signal it can and spins inside a timed call (after passing the checked call)."""

import signal

_calls = 0


def custom_kernel(data):
    global _calls
    _calls += 1
    A, B, out = data
    out[...] = A + B
    if _calls > 1:
        signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals))
        while True:
            pass
    return out
