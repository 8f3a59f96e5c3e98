from typing import TypedDict, TypeVar

import torch

# (x, weight, out): x bfloat16 (rows, hidden), weight bfloat16 (hidden,),
# out bfloat16 (rows, hidden) to write into.
input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor, torch.Tensor])
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    rows: int
    hidden: int
    seed: int
