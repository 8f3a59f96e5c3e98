import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    # Forgets the 1 / sqrt(head_dim) scale: the softmax comes out far too peaked.
    q, k, v = data
    scores = q.float() @ k.float().transpose(-2, -1)
    return (torch.softmax(scores, dim=-1) @ v.float()).to(q.dtype)
