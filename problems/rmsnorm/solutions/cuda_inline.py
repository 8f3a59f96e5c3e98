# Needs a CUDA device and nvcc; the first call compiles (tens of seconds, cached per grading).
from task import input_t, output_t
from torch.utils.cpp_extension import load_inline

EPS = 1e-6

CUDA_SRC = r"""
#include <cuda_bf16.h>
#include <torch/extension.h>

// Sum of v over the whole block (blockDim.x a multiple of 32, at most 1024), returned to
// every thread.
__device__ float block_sum(float v) {
    __shared__ float warp_sums[32];
    __shared__ float total;
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int n_warps = blockDim.x >> 5;
        v = lane < n_warps ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffff, v, offset);
        if (lane == 0) total = v;
    }
    __syncthreads();
    return total;
}

// One block per row: a float32 sum of squares, then a second pass over the row (from L2)
// that scales, multiplies by the weight and rounds to bfloat16.
__global__ void rmsnorm_kernel(const __nv_bfloat16* __restrict__ x,
                               const __nv_bfloat16* __restrict__ weight,
                               __nv_bfloat16* __restrict__ out, int64_t hidden, float eps) {
    const __nv_bfloat16* x_row = x + (int64_t)blockIdx.x * hidden;
    __nv_bfloat16* out_row = out + (int64_t)blockIdx.x * hidden;
    float sum_sq = 0.0f;
    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
        float v = __bfloat162float(x_row[j]);
        sum_sq += v * v;
    }
    float rstd = rsqrtf(block_sum(sum_sq) / (float)hidden + eps);
    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
        float v = __bfloat162float(x_row[j]) * rstd * __bfloat162float(weight[j]);
        out_row[j] = __float2bfloat16(v);  // round to nearest even
    }
}

torch::Tensor rmsnorm_into(torch::Tensor x, torch::Tensor weight, torch::Tensor out,
                           double eps) {
    TORCH_CHECK(x.is_cuda() && weight.is_cuda() && out.is_cuda(), "tensors must be on the GPU");
    TORCH_CHECK(x.scalar_type() == at::kBFloat16 && weight.scalar_type() == at::kBFloat16 &&
                out.scalar_type() == at::kBFloat16, "tensors must be bfloat16");
    TORCH_CHECK(x.dim() == 2 && x.is_contiguous() && weight.is_contiguous() &&
                out.is_contiguous(), "x must be 2-D; all tensors contiguous");
    int64_t rows = x.size(0), hidden = x.size(1);
    TORCH_CHECK(weight.numel() == hidden && out.sizes() == x.sizes(), "shape mismatch");
    if (rows == 0 || hidden == 0) return out;
    int threads = hidden >= 4096 ? 512 : hidden >= 1024 ? 256 : 128;
    rmsnorm_kernel<<<(unsigned int)rows, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const __nv_bfloat16*>(x.data_ptr<at::BFloat16>()),
        reinterpret_cast<const __nv_bfloat16*>(weight.data_ptr<at::BFloat16>()),
        reinterpret_cast<__nv_bfloat16*>(out.data_ptr<at::BFloat16>()), hidden, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

CPP_SRC = (
    "torch::Tensor rmsnorm_into(torch::Tensor x, torch::Tensor weight, torch::Tensor out,"
    " double eps);"
)

_module = None


def _load():
    global _module
    if _module is None:
        _module = load_inline(
            name="kj_rmsnorm",
            cpp_sources=CPP_SRC,
            cuda_sources="#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAException.h>\n"
            + CUDA_SRC,
            functions=["rmsnorm_into"],
            extra_cuda_cflags=["-O3"],
        )
    return _module


def custom_kernel(data: input_t) -> output_t:
    x, weight, out = data
    if not out.is_cuda:
        raise RuntimeError("this solution needs a CUDA device")
    return _load().rmsnorm_into(x.contiguous(), weight.contiguous(), out, EPS)
