import torch.distributed as dist
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    # Right shape and dtype, wrong value: each rank's own input times the world size.
    return data * dist.get_world_size()
