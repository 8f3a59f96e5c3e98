# threat: 25, 23
# expect: timeout
# timeout_s: 6
# leftover: kj-leftover-spin-77b0
# defence: SIGKILL, not SIGTERM, for the whole tree (the pid namespace), at the deadline
"""Ignores SIGTERM and SIGHUP, leaves a child in a new session that ignores them too, and
spins forever at import."""

import os
import signal

MARKER = "kj-leftover-spin-77b0"
for _signal in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(_signal, signal.SIG_IGN)
if getattr(os, "fo" + "rk")() == 0:
    try:
        os.setsid()
        os.execv("/bin/sh", ["sh", "-c", "trap '' TERM HUP INT; while :; do sleep 1; done", MARKER])
    finally:
        os._exit(0)
while True:
    pass


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
