# threat: 12
# device: cuda
# expect: passed, rejected
# max_speedup: 3.5
# defence: the runner's figure ranks no lower than the harness's clock over fresh batches allows
"""Patches torch.cuda.Event.elapsed_time (computed names) to claim a nanosecond per call."""

import torch

_event = getattr(getattr(torch, "cu" + "da"), "Ev" + "ent")
setattr(_event, "elapsed_" + "time", lambda self, other: 1e-6)


def custom_kernel(data):
    A, B, out = data
    return torch.add(A, B, out=out)
