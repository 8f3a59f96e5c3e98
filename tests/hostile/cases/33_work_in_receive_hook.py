# threat: 13
# problem: matmul
# expect: passed, rejected
# max_speedup: 7
# defence: the clock starts before the inputs land and stops at the batch's reply
"""Hooks the runner's message receiving (found through sys.modules['__main__'] by computed
names) to compute the product while a request arrives, before the runner's timed region:
the inputs of the set a request names are found through the runner's own objects (the
shared slab the harness handed it), and the timed call only hands back the stashed result.
The product is the same bf16 matmul as the problem's honest solution, so any speed-up over
it would be work hidden from the clock."""

import gc
import sys

import torch

_stash = {}
_runner = []
_main = sys.modules["__" + "main__"]
_name = "recv_" + "message"
_real = getattr(_main, _name, None)


def _the_runner():
    if not _runner:
        for obj in gc.get_objects():
            if type(obj).__name__ == "Runner" and hasattr(obj, "_sets"):
                _runner.append(obj)
                break
    return _runner[0] if _runner else None


def _receive_and_work(*args, **kwargs):
    request = _real(*args, **kwargs)
    runner = _the_runner()
    if isinstance(request, dict) and runner is not None and "slab" in request:
        sets = runner._sets.get(request["slab"])
        index = request.get("set", 0)
        if sets is not None and isinstance(index, int):
            data = sets.data(index)
            if isinstance(data, (tuple, list)) and len(data) == 2:
                A, B = data
                _stash[A.data_ptr()] = torch.matmul(A, B)
    return request


if _real is not None:
    setattr(_main, _name, _receive_and_work)


def custom_kernel(data):
    A, B = data
    ready = _stash.pop(A.data_ptr(), None)
    if ready is not None:
        return ready
    return torch.matmul(A, B)
