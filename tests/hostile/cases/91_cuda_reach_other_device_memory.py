# threat: 9, 21
# device: cuda
# expect: passed
# defence: each slab is its own allocation, handed over by fd; no other harness memory is exported
"""On a GPU: imports every file descriptor it holds as device memory (the slabs it was given
come as descriptors), and tries legacy CUDA IPC handles it makes up, looking for memory of
the harness's that is not a slab (its pristine inputs, the expected outputs). Anything that
maps beyond the slabs handed to it is printed as an escape; it then computes honestly."""

import ctypes
import os

import torch

_done = []


def _probe(data):
    lib = ctypes.CDLL("libcuda.so.1")
    seen = set()
    for name in os.listdir("/proc/self/fd"):
        handle = ctypes.c_ulonglong()
        fd = int(name)
        if lib.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), 1) == 0:
            seen.add(fd)
            lib.cuMemRelease(handle)
    # By its first call it has been handed two slabs: the windows' gate (before the
    # submission loaded) and the first case's inputs.
    if len(seen) > 2:
        print("KJ-ESCAPE imported", len(seen), "device allocations", flush=True)

    # Legacy IPC: a 64-byte handle made up (passed by value); opening it must fail.
    class IpcHandle(ctypes.Structure):
        _fields_ = [("reserved", ctypes.c_ubyte * 64)]

    made_up = IpcHandle()
    for i in range(64):
        made_up.reserved[i] = (7 * i + 3) % 256
    opener = getattr(lib, "cuIpcOpenMemHandle_v2", None) or lib.cuIpcOpenMemHandle
    pointer = ctypes.c_ulonglong()
    if opener(ctypes.byref(pointer), made_up, ctypes.c_uint(1)) == 0:
        print("KJ-ESCAPE opened a made-up IPC handle", flush=True)


def custom_kernel(data):
    if not _done:
        _done.append(True)
        torch.cuda.synchronize()
        _probe(data)
    A, B, out = data
    return torch.add(A, B, out=out)
