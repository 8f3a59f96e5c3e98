"""Correct ModelNew for KernelBench level 1 #63:
the same nn.Conv2d built in the same order (so the same weights after the same seed), called
through F.conv2d with the module's own weight and bias."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=False,
    ):
        super().__init__()
        self.conv2d = nn.Conv2d(
            in_channels,
            out_channels,
            (kernel_size, kernel_size),
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            bias=bias,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = self.conv2d
        return F.conv2d(x, c.weight, c.bias, c.stride, c.padding, c.dilation, c.groups)
