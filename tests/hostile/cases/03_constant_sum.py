# threat: 2
# problem: vectorsum
# expect: failed
# defence: the tolerance is the problem's (rtol 1e-5), checked in the harness on exact tensors
"""The sum of N uniform [0, 1) values is about N/2: return that without reading the data."""

import torch


def custom_kernel(data):
    return torch.tensor(data.numel() * 0.5, dtype=torch.float32)
