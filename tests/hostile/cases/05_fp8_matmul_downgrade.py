# threat: 2
# problem: matmul
# expect: failed
# defence: the problem's tolerance follows the float32-accumulated reference, not 8-bit inputs
"""Rounds the bfloat16 inputs down to float8 before multiplying, hoping the matmul's loose
tolerance hides it."""

import torch


def custom_kernel(data):
    A, B = data
    a8 = A.to(torch.float8_e4m3fn).float()
    b8 = B.to(torch.float8_e4m3fn).float()
    return (a8 @ b8).to(torch.bfloat16)
