# threat: 11
# device: cuda
# expect: passed, failed, rejected
# max_speedup: 2
# defence: unjoined side-stream work is wrong, or its time is rejected by the harness clock
"""Launches the work on a side stream without joining it back, so the default-stream events
time nothing."""

import torch

_side = None


def custom_kernel(data):
    global _side
    A, B, out = data
    if _side is None:
        _side = torch.cuda.Stream()
    with torch.cuda.stream(_side):
        torch.cuda._sleep(1_000_000)
        torch.add(A, B, out=out)
    return out
