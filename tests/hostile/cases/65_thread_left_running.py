# threat: 23
# expect: passed, rejected
# defence: the runner is killed at the end; a thread skewing its times gets it rejected
"""Starts a non-daemon thread that spins forever, so the runner never exits by itself."""

import threading


def _spin():
    while True:
        pass


threading.Thread(target=_spin, daemon=False).start()


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
