# threat: 21
# expect: passed
# defence: seccomp denies ptrace; a pid namespace hides the harness; non-root inside
"""Seizes its parent and pid 1 with ptrace (through ctypes), interrupts them and detaches;
computes the right answer."""

import contextlib
import ctypes
import os

PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
WALL = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
_trace = getattr(_libc, "ptr" + "ace")
_trace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]

for target in {os.getppid(), 1}:
    if target <= 0:
        continue
    if _trace(PTRACE_SEIZE, target, None, None) != 0:
        print(f"ptrace {target} refused: errno {ctypes.get_errno()}")
        continue
    print(f"KJ-ESCAPE ptrace seized pid {target}")
    if _trace(PTRACE_INTERRUPT, target, None, None) == 0:
        with contextlib.suppress(OSError):
            os.waitpid(target, WALL)
    _trace(PTRACE_DETACH, target, None, None)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
