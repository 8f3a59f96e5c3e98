# threat: 28
# device: cuda
# expect: error
# defence: the runner's context is its own: an illegal address ends only this grading
"""Launches a Triton kernel that stores through a wild pointer (an illegal memory access)."""

import triton
import triton.language as tl


@triton.jit
def _wild(out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs + (1 << 40), offs.to(tl.float16), mask=offs < n)


def custom_kernel(data):
    _, _, out = data
    _wild[(64,)](out, out.numel(), BLOCK=1024)
    out.sum().item()
    return out
