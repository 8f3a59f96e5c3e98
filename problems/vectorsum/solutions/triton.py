import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def partial_sums(x_ptr, partial_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(x, axis=0))


def custom_kernel(data: input_t) -> output_t:
    n = data.numel()
    block = 4096
    partial = torch.empty(triton.cdiv(n, block), device=data.device, dtype=torch.float32)
    while True:
        partial_sums[(partial.numel(),)](data, partial, n, BLOCK_SIZE=block)
        if partial.numel() == 1:
            return partial.reshape(())
        data, n = partial, partial.numel()
        partial = torch.empty(triton.cdiv(n, block), device=data.device, dtype=torch.float32)
