import torch
from task import input_t, output_t

EPS = 1e-6


def custom_kernel(data: input_t) -> output_t:
    """Write x / sqrt(mean(x^2) + 1e-6) * weight (float32 inside) into out, as bfloat16."""
    x, weight, out = data
    xf = x.float()
    rms = torch.sqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    out[...] = (xf / rms * weight.float()).to(torch.bfloat16)
    return out
