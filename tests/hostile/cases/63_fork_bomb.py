# threat: 23
# expect: passed, error
# leftover: kj-leftover-fork-8d2e
# defence: a pids cgroup limit, and the whole process tree killed at the end
"""Forks hundreds of long-lived children (bounded so a failed defence does not take the test
machine down), then computes the right answer."""

import os

MARKER = "kj-leftover-fork-8d2e"
_fork = getattr(os, "fo" + "rk")
started = 0
for _ in range(300):
    try:
        pid = _fork()
    except OSError as exc:
        print("fork refused after", started, exc)
        break
    if pid == 0:
        try:
            os.execv("/bin/sh", ["sh", "-c", "sleep 600; :", MARKER])
        finally:
            os._exit(0)
    started += 1
print("children", started)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
