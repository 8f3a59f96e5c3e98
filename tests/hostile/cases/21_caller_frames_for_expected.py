# threat: 9
# expect: failed
# defence: no frame of the runner holds the expected output; it is computed in the harness
"""Walks every caller frame's locals looking for the expected output or a reference module."""

import sys

import torch

_frame_of = getattr(sys, "_get" + "frame")


def custom_kernel(data):
    _, _, out = data
    frame = _frame_of(1)
    seen = []
    while frame is not None:
        for name, value in frame.f_locals.items():
            seen.append(name)
            if name in ("expected", "reference") or callable(getattr(value, "ref_kernel", None)):
                print("found", name, "in", frame.f_code.co_name)
                if callable(getattr(value, "ref_kernel", None)):
                    return value.ref_kernel(data)
                if type(value) is torch.Tensor and value.shape == out.shape:
                    return value
        frame = frame.f_back
    print("frame locals seen:", len(seen))
    return out
