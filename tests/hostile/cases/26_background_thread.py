# threat: 11
# problem: matmul
# expect: passed, failed
# max_speedup: 3
# defence: a thread still writing when the call returns leaves a wrong output or a plausible time
"""Returns at once and lets a background thread compute the product, hoping it finishes after
the timer stops and before the output is read."""

import threading

import torch

_threads = []


def _fill(A, B, out):
    out.copy_(A @ B)  # the honest solution's bf16 product


def custom_kernel(data):
    A, B = data
    out = torch.empty(A.shape[0], B.shape[1], dtype=torch.bfloat16)
    worker = threading.Thread(target=_fill, args=(A, B, out))
    worker.start()
    _threads.append(worker)
    return out
