import math

import torch
from task import input_t, output_t
from utils import count_mismatches, form_mismatch, grading_device, seeded_generator

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
    wrong_form = form_mismatch(output, expected.shape, expected.dtype)
    if wrong_form:
        return False, wrong_form
    # Entries of C have a spread of about sqrt(k): the absolute tolerance follows it.
    atol = ATOL_PER_SQRT_K * math.sqrt(max(A.shape[1], 1))
    reason = count_mismatches(output, expected, rtol=RTOL, atol=atol)
    return reason == "", reason
