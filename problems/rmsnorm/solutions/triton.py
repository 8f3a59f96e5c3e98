import triton
import triton.language as tl
from task import input_t, output_t

EPS = 1e-6


@triton.jit
def rmsnorm_kernel(
    x_ptr, w_ptr, out_ptr, hidden, x_row_stride, out_row_stride, eps, BLOCK_SIZE: tl.constexpr
):
    # One program per row; the whole row fits in one block (BLOCK_SIZE >= hidden).
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < hidden
    x = tl.load(x_ptr + row * x_row_stride + offsets, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    mean_square = tl.sum(x * x, axis=0) / hidden  # padding lanes hold 0
    y = x / tl.sqrt(mean_square + eps) * w
    tl.store(out_ptr + row * out_row_stride + offsets, y.to(tl.bfloat16), mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x, weight, out = data
    x = x.contiguous()
    rows, hidden = x.shape
    # At least 16 lanes: tiny blocks gain nothing, and the masks cover the padding.
    block = max(triton.next_power_of_2(hidden), 16)
    num_warps = 16 if block >= 8192 else 8 if block >= 2048 else 4
    rmsnorm_kernel[(rows,)](
        x, weight, out, hidden, x.stride(0), out.stride(0), EPS,
        BLOCK_SIZE=block, num_warps=num_warps,
    )  # fmt: skip
    return out
