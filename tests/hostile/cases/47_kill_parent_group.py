# threat: 18
# expect: passed, error
# defence: the harness is outside the runner's pid namespace and session
"""SIGKILLs its parent's process group and session leader, then computes the right answer."""

import os
import signal

_parent = os.getppid()
for _target in ("group", "session"):
    try:
        leader = os.getpgid(_parent) if _target == "group" else os.getsid(_parent)
        if leader > 1 and leader != os.getpgid(0):
            getattr(os, "kill" + "pg")(leader, signal.SIGKILL)
            print("signalled", _target, leader)
    except OSError as exc:
        print("cannot signal", _target, exc)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
