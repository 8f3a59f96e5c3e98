# threat: 39, 11
# device: cuda
# problem: matmul
# expect: passed, failed
# max_speedup: 1.25
# defence: the harness's clock stops at the runner's reply and its check reads the outputs at once
"""Launches every call's work on a side stream and patches the runner (found through
sys.modules) so that it replies without waiting for the device, hoping the harness stops its
clock while the work still runs."""

import base64
import sys

import torch

_side = None
_main = sys.modules.get(base64.b64decode("X19tYWluX18=").decode())
_runner_cls = getattr(_main, "Run" + "ner", None) if _main is not None else None
if _runner_cls is not None:
    _inner = _runner_cls._handle
    setattr(_runner_cls, "han" + "dle", lambda self, request: _inner(self, request))


def custom_kernel(data):
    global _side
    a, b = data
    if _side is None:
        _side = torch.cuda.Stream()
    out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        torch.matmul(a, b, out=out)
    return out
