# threat: 35, 12
# device: cuda
# problem: matmul
# expect: passed
# max_speedup: 1.05
# defence: on a GPU the harness's own windows rank; the runner's figure is only shown (and flagged)
"""Does the real work on every call, and patches torch.cuda.Event.elapsed_time (computed names)
and the runner's timer so that every timed call claims one microsecond."""

import base64
import sys

import torch

_event = getattr(torch.cuda, "Ev" + "ent")
setattr(_event, "elapsed_" + "time", lambda self, end: 0.001)
_timing = sys.modules.get(base64.b64decode("Z3JhZGVyLnRpbWluZw==").decode())
if _timing is not None:
    _cls = getattr(_timing, "Ti" + "mer")
    _real = _cls.one_call

    def _one_microsecond(self, fn, data, *args, **kwargs):
        _, output = _real(self, fn, data, *args, **kwargs)
        return 1e-6, output

    setattr(_cls, "one_" + "call", _one_microsecond)


def custom_kernel(data):
    a, b = data
    return a @ b
