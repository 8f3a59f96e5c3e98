# threat: 5
# expect: not-passed
# defence: the harness rebuilds plain tensors from raw bytes; the runner's type checks are moot
"""Rebinds `torch.Tensor` in its own process to a lazy subclass, so the runner's `type(x) is
torch.Tensor` test accepts it, and returns it without doing the work."""

import torch

_Real = torch.Tensor


class Promise(_Real):
    pass


setattr(torch, "Ten" + "sor", Promise)


def custom_kernel(data):
    return data[2].as_subclass(Promise)
