# threat: 14
# device: cuda
# expect: passed, rejected
# max_speedup: 1.5
# defence: fresh inputs per ranked call and an L2 flush; a persisting window cannot hold them all
"""Asks the driver (through ctypes, by computed names) for a persisting-L2 carve-out and an
access-policy window over its inputs, so they survive the grader's L2 flush."""

import ctypes
import ctypes.util

import torch

_rt = None
for _name in ("libcudart.so", "libcudart.so.12", ctypes.util.find_library("cudart")):
    if not _name:
        continue
    try:
        _rt = ctypes.CDLL(_name)
        break
    except OSError:
        continue


class _Window(ctypes.Structure):
    _fields_ = [
        ("base_ptr", ctypes.c_void_p),
        ("num_bytes", ctypes.c_size_t),
        ("hitRatio", ctypes.c_float),
        ("hitProp", ctypes.c_int),
        ("missProp", ctypes.c_int),
    ]


def _persist(tensor):
    if _rt is None:
        return
    limit = getattr(_rt, "cudaDevice" + "SetLimit")
    limit(ctypes.c_int(0x06), ctypes.c_size_t(tensor.numel() * tensor.element_size()))
    window = _Window(tensor.data_ptr(), tensor.numel() * tensor.element_size(), 1.0, 2, 1)
    value = (ctypes.c_byte * 64)()
    ctypes.memmove(value, ctypes.byref(window), ctypes.sizeof(window))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    getattr(_rt, "cudaStream" + "SetAttribute")(stream, ctypes.c_int(1), value)


def custom_kernel(data):
    A, B, out = data
    _persist(A)
    return torch.add(A, B, out=out)
