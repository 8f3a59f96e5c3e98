import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    # An exclusive scan (out[i] = data[0] + ... + data[i-1]): off by one element everywhere,
    # which shows most at the start, where the running sum is small.
    x, out = data
    out[0] = 0
    out[1:] = torch.cumsum(x[:-1], dim=0)
    return out
