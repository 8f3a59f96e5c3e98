# CuTe DSL (NVIDIA's nvidia-cutlass-dsl): CUDA kernels written in Python, compiled through
# MLIR. A GPU worker grades it when the package's `cute` extra is installed there. One
# thread per element over the flattened tensors; each shape is compiled once, on its first
# call, which the grader's warm-up calls absorb.
import cutlass
import cutlass.cute as cute
import torch
from cutlass.cute.runtime import from_dlpack
from task import input_t, output_t

THREADS = 256


@cute.kernel
def add_kernel(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < n:
        out[i] = a[i] + b[i]


@cute.jit
def add(a: cute.Tensor, b: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
    blocks = (n + THREADS - 1) // THREADS
    add_kernel(a, b, out, n).launch(grid=(blocks, 1, 1), block=(THREADS, 1, 1))


_compiled: dict[int, object] = {}


def custom_kernel(data: input_t) -> output_t:
    a, b, out = data
    n = out.numel()
    views = [from_dlpack(t.view(-1)) for t in (a, b, out)]
    if n not in _compiled:
        _compiled[n] = cute.compile(add, *views, n)
    _compiled[n](*views, n)
    return out
