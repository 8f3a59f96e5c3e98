# Needs a CUDA device and nvcc; the first call compiles (tens of seconds, cached per grading).
# A plain tiled shared-memory GEMM on the CUDA cores (no tensor cores): correct, not fast.
from task import input_t, output_t
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cuda_bf16.h>
#include <torch/extension.h>

constexpr int BM = 64;       // rows of C per block
constexpr int BN = 64;       // columns of C per block
constexpr int BK = 16;       // depth of one shared-memory stage
constexpr int THREADS = 256; // 16 x 16 threads, each computing 4 x 4 elements of C
constexpr int TM = BM / 16;
constexpr int TN = BN / 16;

__global__ void __launch_bounds__(THREADS) gemm_bf16_kernel(
    const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
    __nv_bfloat16* __restrict__ c, int64_t m, int64_t n, int64_t k) {
    // Tiles held as float; As is stored k-major so the inner loop reads a column of it.
    __shared__ float as[BK][BM + 1];
    __shared__ float bs[BK][BN + 1];
    const int tx = threadIdx.x % 16;
    const int ty = threadIdx.x / 16;
    const int64_t row0 = (int64_t)blockIdx.y * BM;
    const int64_t col0 = (int64_t)blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int64_t k0 = 0; k0 < k; k0 += BK) {
        // A tile: BM x BK; consecutive threads read consecutive k of one row.
        for (int idx = threadIdx.x; idx < BM * BK; idx += THREADS) {
            const int r = idx / BK, cc = idx % BK;
            const int64_t gr = row0 + r, gc = k0 + cc;
            as[cc][r] = (gr < m && gc < k) ? __bfloat162float(a[gr * k + gc]) : 0.0f;
        }
        // B tile: BK x BN; consecutive threads read consecutive columns of one row.
        for (int idx = threadIdx.x; idx < BK * BN; idx += THREADS) {
            const int r = idx / BN, cc = idx % BN;
            const int64_t gr = k0 + r, gc = col0 + cc;
            bs[r][cc] = (gr < k && gc < n) ? __bfloat162float(b[gr * n + gc]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float av[TM], bv[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) av[i] = as[kk][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < TN; ++j) bv[j] = bs[kk][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int64_t r = row0 + ty + 16 * i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int64_t cc = col0 + tx + 16 * j;
            if (r < m && cc < n) c[r * n + cc] = __float2bfloat16(acc[i][j]);
        }
    }
}

torch::Tensor matmul_bf16(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(a.scalar_type() == at::kBFloat16 && b.scalar_type() == at::kBFloat16,
                "inputs must be bfloat16");
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "bad shapes");
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    const int64_t m = ac.size(0), k = ac.size(1), n = bc.size(1);
    auto c = torch::empty({m, n}, ac.options());
    if (m == 0 || n == 0) return c;
    dim3 grid((unsigned)((n + BN - 1) / BN), (unsigned)((m + BM - 1) / BM));
    gemm_bf16_kernel<<<grid, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const __nv_bfloat16*>(ac.data_ptr<at::BFloat16>()),
        reinterpret_cast<const __nv_bfloat16*>(bc.data_ptr<at::BFloat16>()),
        reinterpret_cast<__nv_bfloat16*>(c.data_ptr<at::BFloat16>()), m, n, k);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return c;
}
"""

CPP_SRC = "torch::Tensor matmul_bf16(torch::Tensor a, torch::Tensor b);"

_module = None


def _load():
    global _module
    if _module is None:
        _module = load_inline(
            name="kj_matmul",
            cpp_sources=CPP_SRC,
            cuda_sources="#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAException.h>\n"
            + CUDA_SRC,
            functions=["matmul_bf16"],
            extra_cuda_cflags=["-O3"],
        )
    return _module


def custom_kernel(data: input_t) -> output_t:
    A, B = data
    if not A.is_cuda:
        raise RuntimeError("this solution needs a CUDA device")
    return _load().matmul_bf16(A, B)
