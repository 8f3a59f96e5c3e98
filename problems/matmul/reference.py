import math

import torch
from task import input_t, output_t
from utils import count_mismatches, grading_device, seeded_generator

RTOL = 0.02
ATOL_PER_SQRT_K = 0.01


def ref_kernel(data: input_t) -> output_t:
    A, B = data
    # Products of bfloat16 values are exact in float32; only the sum order differs.
    return (A.float() @ B.float()).to(torch.bfloat16)


def generate_input(m: int, n: int, k: int, seed: int) -> input_t:
    device = grading_device()
    gen = seeded_generator(seed)
    A = torch.randn(m, k, device=device, dtype=torch.float32, generator=gen)
    B = torch.randn(k, n, device=device, dtype=torch.float32, generator=gen)
    return A.to(torch.bfloat16).contiguous(), B.to(torch.bfloat16).contiguous()


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    A, _ = data
    expected = ref_kernel(data)
    if not isinstance(output, torch.Tensor):
        return False, f"expected a torch.Tensor, got {type(output).__name__}"
    if output.shape != expected.shape:
        return False, f"shape mismatch: got {tuple(output.shape)}, expected {tuple(expected.shape)}"
    if output.dtype != expected.dtype:
        return False, f"dtype mismatch: got {output.dtype}, expected {expected.dtype}"
    # Entries of C have a spread of about sqrt(k): the absolute tolerance follows it.
    atol = ATOL_PER_SQRT_K * math.sqrt(max(A.shape[1], 1))
    reason = count_mismatches(output, expected, rtol=RTOL, atol=atol)
    return reason == "", reason
