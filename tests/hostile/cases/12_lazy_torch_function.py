# threat: 5
# expect: error
# defence: only exact torch.Tensor outputs cross the channel; no object's methods run in the harness
"""A lazy result: a subclass that computes only when something operates on it (through
__torch_function__), so its timed call costs nothing."""

import torch


class Lazy(torch.Tensor):
    pending = None

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for arg in args:
            if isinstance(arg, Lazy) and arg.pending is not None:
                A, B, out = arg.pending
                arg.pending = None
                out[...] = A + B
        return super().__torch_function__(func, types, args, kwargs or {})


def custom_kernel(data):
    result = data[2].as_subclass(Lazy)
    result.pending = data
    return result
