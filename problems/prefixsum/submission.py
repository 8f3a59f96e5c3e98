import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """Write the inclusive prefix sum of data, (n,) float32, into out and return out."""
    x, out = data
    return torch.cumsum(x, dim=0, out=out)
