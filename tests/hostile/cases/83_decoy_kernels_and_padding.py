# threat: 33
# expect: passed
# max_speedup: 1
# defence: ranking is by time and the speed of light by the problem's own bytes and flops
"""Defines kernels it never launches and pads every call with arithmetic nobody asked for,
as a submission would where a grader ranked by counted FLOP/s. Here the score is the
measured time and the speed-of-light fraction uses the problem's declared roofline, so
the padding can only make it slower."""

import torch


def decoy_tensor_core_gemm(a, b):
    """Never called: a grader counting the kernels a file defines would see a GEMM."""
    return torch.mm(a.float(), b.float())


def decoy_fused_attention(q, k, v):
    """Never called either."""
    return torch.softmax(q @ k.T, dim=-1) @ v


_pad = torch.rand(96, 96)


def custom_kernel(data):
    A, B, out = data
    for _ in range(4):
        torch.mm(_pad, _pad)  # padding: work that inflates a FLOP count, not the answer
    out[...] = A + B
    return out
