# threat: 31, 14
# device: cuda
# mode: benchmark
# expect: passed, rejected
# max_speedup: 1.5
# defence: the runner makes persisting L2 lines normal again before each timed call, then flushes
"""Benchmark mode times the same inputs again and again: this asks the driver (by computed
names, through libcuda) for the largest persisting-L2 carve-out once, and puts an
access-policy window over its inputs whenever they move, so they could stay in L2 across
the grader's flush. bench/l2_persisting.py measures the effect at sizes where it matters."""

import ctypes

import torch

_cu = ctypes.CDLL("lib" + "cuda.so.1")
_state = {"limit": False, "ptr": None}


class _Window(ctypes.Structure):
    _fields_ = [
        ("base_ptr", ctypes.c_void_p),
        ("num_bytes", ctypes.c_size_t),
        ("hitRatio", ctypes.c_float),
        ("hitProp", ctypes.c_int),
        ("missProp", ctypes.c_int),
    ]


def _persist(tensor):
    nbytes = tensor.numel() * tensor.element_size()
    if not _state["limit"]:
        largest = ctypes.c_int()
        device = ctypes.c_int()
        getattr(_cu, "cuCtx" + "GetDevice")(ctypes.byref(device))
        getattr(_cu, "cuDevice" + "GetAttribute")(ctypes.byref(largest), 108, device)
        result = getattr(_cu, "cuCtx" + "SetLimit")(0x06, ctypes.c_size_t(largest.value))
        print("carve-out", largest.value, "result", result, flush=True)
        _state["limit"] = True
    if _state["ptr"] != tensor.data_ptr():
        window = _Window(tensor.data_ptr(), nbytes, 1.0, 2, 1)
        value = (ctypes.c_byte * 64)()
        ctypes.memmove(value, ctypes.byref(window), ctypes.sizeof(window))
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        result = getattr(_cu, "cuStream" + "SetAttribute")(stream, 1, ctypes.byref(value))
        print("window", hex(tensor.data_ptr()), nbytes, "result", result, flush=True)
        _state["ptr"] = tensor.data_ptr()


def custom_kernel(data):
    A, B, out = data
    _persist(A)
    return torch.add(A, B, out=out)
