# threat: 12
# device: cuda
# expect: passed, rejected
# max_speedup: 1.05
# defence: on a GPU the harness's own windows rank; the runner's figure is only shown (and flagged)
"""Patches torch.cuda.Event.elapsed_time (computed names) to claim a nanosecond per call."""

import torch

_event = getattr(getattr(torch, "cu" + "da"), "Ev" + "ent")
setattr(_event, "elapsed_" + "time", lambda self, other: 1e-6)


def custom_kernel(data):
    A, B, out = data
    return torch.add(A, B, out=out)
