import torch
import torch.distributed as dist
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def sum_rows(gathered_ptr, out_ptr, ranks, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    total = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for rank in range(ranks):
        total += tl.load(gathered_ptr + rank * n_elements + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, total, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    # Every rank gathers all inputs, then sums them with one Triton kernel.
    world_size = dist.get_world_size()
    gathered = torch.empty(world_size, data.numel(), dtype=data.dtype, device=data.device)
    dist.all_gather(list(gathered.unbind(0)), data)
    out = torch.empty_like(data)
    block = 1024
    grid = (triton.cdiv(data.numel(), block),)
    sum_rows[grid](gathered, out, world_size, data.numel(), BLOCK_SIZE=block)
    return out
