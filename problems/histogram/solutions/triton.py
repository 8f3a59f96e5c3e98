import torch
import triton
import triton.language as tl
from task import input_t, output_t

NUM_BINS = 256


@triton.jit
def histogram_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, NUM_BINS: tl.constexpr):
    # Each program counts a strided share of the blocks in registers, then adds its
    # 256 counts to the output with one atomic add per bin.
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK_SIZE
    bins = tl.arange(0, NUM_BINS)
    counts = tl.zeros((NUM_BINS,), dtype=tl.int32)
    for start in range(pid * BLOCK_SIZE, n_elements, step):
        offsets = start + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask, other=0).to(tl.int32)
        # Masked-off lanes read 0: take them back out of bin 0.
        missing = BLOCK_SIZE - tl.sum(mask.to(tl.int32), axis=0)
        counts += tl.histogram(x, NUM_BINS) - tl.where(bins == 0, missing, 0)
    tl.atomic_add(out_ptr + bins, counts)


def custom_kernel(data: input_t) -> output_t:
    n = data.numel()
    out = torch.zeros(NUM_BINS, dtype=torch.int32, device=data.device)
    if n == 0:
        return out
    block = 4096
    programs = min(triton.cdiv(n, block), 2048)
    histogram_kernel[(programs,)](data, out, n, BLOCK_SIZE=block, NUM_BINS=NUM_BINS)
    return out
