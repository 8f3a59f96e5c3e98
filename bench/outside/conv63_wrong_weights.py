"""Wrong ModelNew for KernelBench level 1 #63: right shapes, wrong weights (it ignores the
seeded nn.Conv2d weights and uses all-ones filters scaled like the default init)."""

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
        fan_in = in_channels // groups * kernel_size * kernel_size
        self.weight = nn.Parameter(
            torch.ones(out_channels, in_channels // groups, kernel_size, kernel_size) / fan_in
        )
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, self.weight, None, self.stride, self.padding, self.dilation, self.groups)
