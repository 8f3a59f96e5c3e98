import torch
from task import input_t, output_t

WEIGHTS = (0.2989, 0.5870, 0.1140)


def custom_kernel(data: input_t) -> output_t:
    rgb, out = data
    weights = torch.tensor(WEIGHTS, device=rgb.device, dtype=rgb.dtype)
    return torch.sum(rgb * weights, dim=-1, out=out)
