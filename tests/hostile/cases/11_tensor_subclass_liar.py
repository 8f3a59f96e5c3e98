# threat: 5
# expect: error
# defence: only exact torch.Tensor outputs cross the channel, as raw bytes
"""Returns a Tensor subclass whose comparisons always agree."""

import torch


class Agreeable(torch.Tensor):
    def __eq__(self, other):
        return torch.ones(self.shape, dtype=torch.bool)

    def __sub__(self, other):
        return torch.zeros_like(torch.Tensor(self))


def custom_kernel(data):
    return data[2].as_subclass(Agreeable)
