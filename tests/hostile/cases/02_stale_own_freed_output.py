# threat: 1, 7
# expect: failed
# defence: every timed call gets fresh inputs and its own output checked, so stale memory is wrong
"""Computes right on the first (checked) call, frees the result, and afterwards returns
`torch.empty`, which the allocator tends to hand back with the old answer still in it."""

import torch

_calls = 0


def custom_kernel(data):
    global _calls
    _calls += 1
    A, B, out = data
    if _calls == 1:
        scratch = A + B
        out.copy_(scratch)
        del scratch
        return out
    return torch.empty(out.shape, dtype=out.dtype)
