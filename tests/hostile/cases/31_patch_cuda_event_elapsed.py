# threat: 12
# device: cuda
# expect: rejected
# defence: a claimed time under the physical floor is rejected; the harness cross-checks its clock
"""Patches torch.cuda.Event.elapsed_time (computed names) to claim a nanosecond per call."""

import torch

_event = getattr(getattr(torch, "cu" + "da"), "Ev" + "ent")
setattr(_event, "elapsed_" + "time", lambda self, other: 1e-6)


def custom_kernel(data):
    A, B, out = data
    return torch.add(A, B, out=out)
