# threat: 28
# expect: error
# message: exited before reporting
# defence: a runner that crashes ends only its own grading, with an error
"""Crashes its process with a segmentation fault inside custom_kernel (the CPU analogue of an
illegal memory access)."""

import ctypes


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    getattr(ctypes, "mem" + "set")(16, 0, 64)  # a write through a null pointer
    return out
