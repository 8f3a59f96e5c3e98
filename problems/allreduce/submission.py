import torch.distributed as dist
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """Return the element-wise sum of every rank's `data` (a new tensor, on every rank)."""
    out = data.clone()
    dist.all_reduce(out)
    return out
