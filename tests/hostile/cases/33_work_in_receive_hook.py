# threat: 13
# problem: matmul
# expect: passed, rejected
# max_speedup: 3
# defence: the harness's own clock around each call includes receiving; claims are cross-checked
"""Hooks the runner's message receiving (found through sys.modules['__main__'] by computed
names) to compute the product while the inputs arrive, outside the timed region; the timed
call only hands back the stashed result."""

import sys

import torch

_stash = {}
_main = sys.modules["__" + "main__"]
_name = "recv_" + "message"
_real = getattr(_main, _name, None)


def _receive_and_work(*args, **kwargs):
    request = _real(*args, **kwargs)
    data = request.get("data") if isinstance(request, dict) else None
    if isinstance(data, (tuple, list)) and len(data) == 2:
        A, B = data
        _stash[id(A)] = (A.float() @ B.float()).to(torch.bfloat16)
    return request


if _real is not None:
    setattr(_main, _name, _receive_and_work)


def custom_kernel(data):
    A, B = data
    ready = _stash.pop(id(A), None)
    if ready is not None:
        return ready
    return (A.float() @ B.float()).to(torch.bfloat16)
