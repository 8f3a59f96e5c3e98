# threat: 12, 32
# problem: matmul
# expect: passed
# max_speedup: 7
# defence: the runner's figure ranks no lower than the harness's clock over fresh batches allows
"""Does every call's work, the grader's own-clock batches included (they are checked), but
reports a twentieth of each timed call's real time."""

import base64
import sys

_timing = sys.modules.get(base64.b64decode("Z3JhZGVyLnRpbWluZw==").decode())
if _timing is not None:
    _timer = getattr(_timing, "Ti" + "mer")
    _real = _timer.one_call

    def _fast(self, fn, data, *args, **kwargs):
        seconds, output = _real(self, fn, data, *args, **kwargs)
        return seconds / 20, output

    setattr(_timer, "one_" + "call", _fast)


def custom_kernel(data):
    A, B = data
    return A @ B
