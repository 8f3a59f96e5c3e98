# Needs a CUDA device and nvcc; the first call compiles (tens of seconds, cached per grading).
import torch
from task import input_t, output_t
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_fp16.h>
#include <torch/extension.h>

__global__ void add_kernel(const __half* a, const __half* b, __half* out, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hadd(a[i], b[i]);
}

torch::Tensor add_into(torch::Tensor a, torch::Tensor b, torch::Tensor out) {
    int64_t n = out.numel();
    int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    add_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const __half*>(a.data_ptr<at::Half>()),
        reinterpret_cast<const __half*>(b.data_ptr<at::Half>()),
        reinterpret_cast<__half*>(out.data_ptr<at::Half>()), n);
    return out;
}
"""

CPP_SRC = "torch::Tensor add_into(torch::Tensor a, torch::Tensor b, torch::Tensor out);"

_module = None


def _load():
    global _module
    if _module is None:
        _module = load_inline(
            name="kj_vectoradd",
            cpp_sources=CPP_SRC,
            cuda_sources="#include <ATen/cuda/CUDAContext.h>\n" + CUDA_SRC,
            functions=["add_into"],
            extra_cuda_cflags=["-O3"],
        )
    return _module


def custom_kernel(data: input_t) -> output_t:
    A, B, out = data
    if not out.is_cuda:
        raise RuntimeError("this solution needs a CUDA device")
    return _load().add_into(A.contiguous(), B.contiguous(), out)
