# threat: 2
# problem: vectorsum
# expect: failed
# defence: the harness checks dtype and a tolerance tight enough to expose float16 accumulation
"""Sums in float16 (half the bytes, a precision downgrade) and casts back to float32."""

import torch


def custom_kernel(data):
    return data.half().sum(dtype=torch.float16).float()
