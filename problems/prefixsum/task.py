from typing import TypedDict, TypeVar

import torch

# (data, out): data float32 (n,), out float32 (n,) to write into.
input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor])
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    size: int
    seed: int
