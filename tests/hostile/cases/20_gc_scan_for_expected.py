# threat: 9
# expect: failed
# defence: the expected output exists only in the harness process, never in the runner's memory
"""Searches every object the garbage collector knows (module found by a decoded name) for a
tensor of the output's shape that is not an input, and returns it as the answer."""

import base64

import torch

_gc = __import__(base64.b64decode("Z2M=").decode())


def custom_kernel(data):
    A, B, out = data
    inputs = {id(A), id(B), id(out)}
    candidates = [
        obj
        for obj in getattr(_gc, "get_" + "objects")()
        if type(obj) is torch.Tensor and obj.shape == out.shape and id(obj) not in inputs
    ]
    print(f"gc scan: {len(candidates)} candidate tensors")
    for found in candidates:
        if not torch.isnan(found).any():
            out.copy_(found)
            return out
    return out
