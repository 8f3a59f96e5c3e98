# Needs a CUDA device and nvcc; the first call compiles (tens of seconds, cached per grading).
from task import input_t, output_t
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>

// One thread per pixel; channels last, so pixel p's R, G, B are rgb[3p .. 3p + 2].
__global__ void grayscale_kernel(const float* __restrict__ rgb, float* __restrict__ out,
                                 int64_t n_pixels) {
    int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n_pixels) {
        const float* px = rgb + 3 * p;
        out[p] = 0.2989f * px[0] + 0.5870f * px[1] + 0.1140f * px[2];
    }
}

torch::Tensor grayscale_into(torch::Tensor rgb, torch::Tensor out) {
    TORCH_CHECK(rgb.is_cuda() && out.is_cuda(), "tensors must be on the GPU");
    TORCH_CHECK(rgb.scalar_type() == at::kFloat && out.scalar_type() == at::kFloat,
                "tensors must be float32");
    TORCH_CHECK(rgb.is_contiguous() && out.is_contiguous(), "tensors must be contiguous");
    int64_t n = out.numel();
    if (n == 0) return out;
    int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    grayscale_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        rgb.data_ptr<float>(), out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

CPP_SRC = "torch::Tensor grayscale_into(torch::Tensor rgb, torch::Tensor out);"

_module = None


def _load():
    global _module
    if _module is None:
        _module = load_inline(
            name="kj_grayscale",
            cpp_sources=CPP_SRC,
            cuda_sources="#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAException.h>\n"
            + CUDA_SRC,
            functions=["grayscale_into"],
            extra_cuda_cflags=["-O3"],
        )
    return _module


def custom_kernel(data: input_t) -> output_t:
    rgb, out = data
    if not out.is_cuda:
        raise RuntimeError("this solution needs a CUDA device")
    return _load().grayscale_into(rgb.contiguous(), out)
