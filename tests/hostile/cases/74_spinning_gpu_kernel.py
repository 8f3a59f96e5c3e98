# threat: 25, 28
# device: cuda
# expect: timeout
# timeout_s: 20
# defence: the deadline kills the runner; its context goes with it and the GPU is free again
"""Launches a GPU kernel that spins for about an hour."""

import torch


def custom_kernel(data):
    A, B, out = data
    for _ in range(1000):
        torch.cuda._sleep(2**31 - 1)
    torch.add(A, B, out=out)
    torch.cuda.synchronize()
    return out
