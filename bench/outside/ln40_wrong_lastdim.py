"""Wrong ModelNew for KernelBench level 1 #40 (LayerNorm): normalises over the last
dimension only instead of the whole (features, dim1, dim2) shape."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, x.shape[-1:])
