import torch
import triton
import triton.language as tl
from task import input_t, output_t

BLOCK = 1024


@triton.jit
def scan_blocks(x_ptr, out_ptr, block_sums_ptr, n, BLOCK_SIZE: tl.constexpr):
    # Inclusive scan of each block on its own, and each block's total.
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.cumsum(x, axis=0), mask=mask)
    tl.store(block_sums_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def add_block_offsets(out_ptr, scanned_sums_ptr, n, BLOCK_SIZE: tl.constexpr):
    # Launched for blocks 1.. only: block b adds the inclusive sum of blocks 0..b-1.
    block = tl.program_id(0) + 1
    offsets = block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    offset = tl.load(scanned_sums_ptr + block - 1)
    values = tl.load(out_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, values + offset, mask=mask)


def inclusive_scan(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Scan blocks, scan the block totals (recursively), add them back: a tree of depth
    log_BLOCK(n), which keeps float32 rounding errors small."""
    n = x.numel()
    n_blocks = triton.cdiv(n, BLOCK)
    block_sums = torch.empty(n_blocks, device=x.device, dtype=torch.float32)
    scan_blocks[(n_blocks,)](x, out, block_sums, n, BLOCK_SIZE=BLOCK)
    if n_blocks > 1:
        scanned = inclusive_scan(block_sums, torch.empty_like(block_sums))
        add_block_offsets[(n_blocks - 1,)](out, scanned, n, BLOCK_SIZE=BLOCK)
    return out


def custom_kernel(data: input_t) -> output_t:
    x, out = data
    return inclusive_scan(x.contiguous(), out)
