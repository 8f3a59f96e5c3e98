# threat: 15, 32
# expect: passed
# max_speedup: 7
# defence: the runner's figure ranks no lower than the harness's clock over fresh batches allows
"""Claims zero seconds for one benchmark case, which would make the geometric mean zero."""

import base64
import sys

_timing = sys.modules.get(base64.b64decode("Z3JhZGVyLnRpbWluZw==").decode())
if _timing is not None:
    _cls = getattr(_timing, "Ti" + "mer")
    _real = _cls.one_call

    def _claim(self, fn, data, *args, **kwargs):
        seconds, output = _real(self, fn, data, *args, **kwargs)
        return (0.0 if data[0].shape[0] == 96 else seconds), output

    setattr(_cls, "one_" + "call", _claim)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
