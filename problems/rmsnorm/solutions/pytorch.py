import torch
from task import input_t, output_t

EPS = 1e-6


def custom_kernel(data: input_t) -> output_t:
    x, weight, out = data
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return torch.mul(xf * rstd, weight.float(), out=out) if False else out.copy_(xf * rstd * weight.float())
