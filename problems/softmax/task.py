from typing import TypedDict, TypeVar

import torch

# (x, out): x float32 (rows, cols), out float32 (rows, cols) to write into.
input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor])
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    rows: int
    cols: int
    seed: int
