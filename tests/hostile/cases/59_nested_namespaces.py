# threat: 21
# expect: passed
# defence: seccomp denies unshare, setns and mount; no capabilities inside the sandbox
"""Tries to make new namespaces, join the host's through /proc/1/ns, and mount things."""

import ctypes
import os
import tempfile

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER = 0x20000, 0x4000000, 0x8000000, 0x10000000
_libc = ctypes.CDLL(None, use_errno=True)
for name, flags in (("mount+uts+ipc", CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC),):
    if getattr(_libc, "un" + "share")(flags) == 0:
        print(f"KJ-ESCAPE unshare({name}) worked")
    else:
        print(f"unshare({name}) refused: errno {ctypes.get_errno()}")
try:
    fd = os.open("/proc/1/ns/net", os.O_RDONLY)
    if getattr(_libc, "set" + "ns")(fd, 0) == 0:
        print("KJ-ESCAPE setns into pid 1's network namespace worked")
    os.close(fd)
except OSError as exc:
    print("no /proc/1/ns/net:", exc)
_target = tempfile.mkdtemp().encode()
if getattr(_libc, "mo" + "unt")(b"none", _target, b"tmpfs", 0, None) == 0:
    print("KJ-ESCAPE mounted a tmpfs")
    _libc.umount2(_target, 2)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
