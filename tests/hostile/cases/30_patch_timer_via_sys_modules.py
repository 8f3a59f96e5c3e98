# threat: 12
# expect: passed, rejected
# max_speedup: 7
# defence: the runner's figure ranks no lower than the harness's clock over fresh batches allows
"""Reaches the runner's timing module through sys.modules (by a decoded name) and patches the
class, so every per-call time it reports is a thousandth of the real one."""

import base64
import sys

_timing = sys.modules.get(base64.b64decode("Z3JhZGVyLnRpbWluZw==").decode())
if _timing is not None:
    _cls = getattr(_timing, "Ti" + "mer")
    _real = _cls.one_call

    def _fast(self, fn, data, *args, **kwargs):
        seconds, output = _real(self, fn, data, *args, **kwargs)
        return seconds / 1000, output

    setattr(_cls, "one_" + "call", _fast)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
