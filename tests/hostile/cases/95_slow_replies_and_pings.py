# threat: 36
# problem: matmul
# expect: passed
# max_speedup: 1.5
# defence: a batch's fixed costs are measured before the submission loads, not from it
"""Answers every request of the harness's slowly (half a millisecond before each reply, pings
included), hoping that a larger round trip is subtracted from each batch the harness times."""

import base64
import sys
import time

_main = sys.modules.get(base64.b64decode("X19tYWluX18=").decode())
_runner_cls = getattr(_main, "Run" + "ner", None) if _main is not None else None
if _runner_cls is not None:
    _handle = _runner_cls.handle

    def _slow(self, request):
        reply = _handle(self, request)
        time.sleep(0.0005)
        return reply

    setattr(_runner_cls, "han" + "dle", _slow)


def custom_kernel(data):
    a, b = data
    return a @ b
