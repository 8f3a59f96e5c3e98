import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, _ = data
    # torch.softmax has no out= argument; returning the new tensor is allowed.
    return torch.softmax(x, dim=-1)
