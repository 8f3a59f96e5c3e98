import torch.nn.functional as F
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, k, v = data
    # The default scale is 1 / sqrt(head_dim); on CUDA this takes a flash-attention kernel.
    return F.scaled_dot_product_attention(q, k, v)
