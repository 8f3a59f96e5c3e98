import math

import torch
from task import input_t, output_t
from utils import form_mismatch, grading_device, seeded_generator

BASE_RTOL = 1e-5
ATOL = 1e-6
# Up to this length the relative tolerance is BASE_RTOL; beyond, it grows as sqrt(n), like
# the random walk of float32 rounding errors along a scan (a blocked float32 scan reaches
# ~1e-5 relative error at n = 2^27).
RTOL_BASE_LENGTH = 1 << 20


def ref_kernel(data: input_t) -> output_t:
    x, out = data
    out[...] = torch.cumsum(x.double(), dim=0).float()
    return out


def generate_input(size: int, seed: int) -> input_t:
    device = grading_device()
    gen = seeded_generator(seed)
    x = torch.rand(size, device=device, dtype=torch.float32, generator=gen)
    out = torch.empty(size, device=device, dtype=torch.float32)
    return x.contiguous(), out.contiguous()


def rtol_for(n: int) -> float:
    return BASE_RTOL * max(1.0, math.sqrt(n / RTOL_BASE_LENGTH))


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    x, _ = data
    n = x.numel()
    wrong_form = form_mismatch(output, x.shape, torch.float32)
    if wrong_form:
        return False, wrong_form
    x64 = x.detach().double()
    expected = torch.cumsum(x64, dim=0).float().double()
    # The tolerance follows the running magnitude |x[0]| + ... + |x[i]| of each element.
    magnitude = torch.cumsum(x64.abs(), dim=0)
    rtol = rtol_for(n)
    error = (output.detach().to(x64.device, torch.float64) - expected).abs()
    bad = ~(error <= rtol * magnitude + ATOL)  # NaN counts as bad
    count = int(bad.sum())
    if count == 0:
        return True, ""
    first = int(bad.nonzero()[0, 0])
    worst = float((error / (magnitude + ATOL)).nan_to_num(float("inf")).max())
    return False, (
        f"{count} of {n} elements differ beyond rtol={rtol:.3g} of the running sum "
        f"(first at index {first}; worst relative error {worst:.3g})"
    )
