# Helion (https://github.com/pytorch/helion): PyTorch with tiles, compiled to Triton. A GPU
# worker grades it when the package's `helion` extra is installed there. The config is
# fixed, so no autotuning runs during a grading.
import helion
import helion.language as hl
import torch
from task import input_t, output_t


@helion.kernel(config=helion.Config(block_sizes=[32, 64], num_warps=4), static_shapes=False)
def add(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    for tile_m, tile_n in hl.tile(out.size()):
        out[tile_m, tile_n] = a[tile_m, tile_n] + b[tile_m, tile_n]
    return out


def custom_kernel(data: input_t) -> output_t:
    a, b, out = data
    return add(a, b, out)
