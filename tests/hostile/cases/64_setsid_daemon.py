# threat: 23
# expect: passed
# leftover: kj-leftover-daemon-31a9
# defence: a pid namespace whose end kills every process in it, daemons in new sessions included
"""Double-forks a daemon into a new session (out of the runner's process group), which would
outlive a process-group kill; computes the right answer."""

import os

MARKER = "kj-leftover-daemon-31a9"
_fork = getattr(os, "fo" + "rk")
if _fork() == 0:
    try:
        os.setsid()
        if _fork() == 0:
            os.execv("/bin/sh", ["sh", "-c", "trap '' TERM HUP; sleep 600; :", MARKER])
    finally:
        os._exit(0)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
