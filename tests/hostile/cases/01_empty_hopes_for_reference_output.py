# threat: 1, 8
# expect: failed
# defence: the reference runs in the harness process, and out is poisoned with NaN before each call
"""Does no work: returns fresh `torch.empty` memory, hoping it holds the reference's freed
output (the 150x speed-up that was really 3x slower)."""

import torch


def custom_kernel(data):
    _, _, out = data
    return torch.empty(out.shape, dtype=out.dtype, device=out.device)
