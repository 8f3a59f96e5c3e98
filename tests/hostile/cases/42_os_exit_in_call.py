# threat: 17
# expect: error
# message: exited before reporting
# defence: a runner that dies without answering ends the grading with an error
"""Calls os._exit(0) inside custom_kernel, after computing the right answer."""

import os

_leave = getattr(os, "_ex" + "it")


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    _leave(0)
