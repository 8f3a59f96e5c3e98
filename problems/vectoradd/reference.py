import torch
from task import input_t, output_t
from utils import grading_device, make_match_reference, seeded_generator


def ref_kernel(data: input_t) -> output_t:
    A, B, out = data
    out[...] = A + B
    return out


def generate_input(size: int, seed: int) -> input_t:
    device = grading_device()
    gen = seeded_generator(seed)
    A = torch.randn(size, size, device=device, dtype=torch.float16, generator=gen).contiguous()
    B = torch.randn(size, size, device=device, dtype=torch.float16, generator=gen).contiguous()
    out = torch.empty(size, size, device=device, dtype=torch.float16).contiguous()
    return A, B, out


check_implementation = make_match_reference(ref_kernel, rtol=1e-3, atol=1e-3)
