import torch.nn.functional as F
from task import input_t, output_t

EPS = 1e-6


def custom_kernel(data: input_t) -> output_t:
    x, weight, _ = data
    # PyTorch's own RMSNorm (accumulates in float32 for bfloat16 inputs); returning its
    # new tensor is allowed.
    return F.rms_norm(x, (x.shape[-1],), weight, EPS)
