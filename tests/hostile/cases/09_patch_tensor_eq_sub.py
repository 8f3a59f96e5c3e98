# threat: 4
# expect: failed
# defence: outputs cross as raw bytes and are compared by the harness, not by Tensor methods here
"""Patches `Tensor.__sub__`, `__eq__`, `__ne__` and `abs` so any difference looks like zero."""

import torch

_T = getattr(torch, "Ten" + "sor")
for _name in ("__sub__", "__rsub__"):
    setattr(_T, _name, lambda self, other: torch.zeros_like(self))
setattr(_T, "__e" + "q__", lambda self, other: torch.ones(self.shape, dtype=torch.bool))
setattr(_T, "__n" + "e__", lambda self, other: torch.zeros(self.shape, dtype=torch.bool))


def custom_kernel(data):
    return data[2].zero_()
