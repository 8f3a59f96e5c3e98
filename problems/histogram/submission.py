import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    """Return the 256-bin histogram of the uint8 tensor data as an int32 tensor."""
    counts = torch.zeros(256, dtype=torch.int32, device=data.device)
    counts.index_add_(0, data.to(torch.int64), torch.ones_like(data, dtype=torch.int32))
    return counts
