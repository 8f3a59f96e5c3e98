# threat: 38
# mode: benchmark
# expect: rejected
# message: malformed
# defence: every figure of a reply is read as a finite number in range; anything else is rejected
"""Rewrites the runner's replies so that their numbers are NaN and infinities (a report
carrying them would not be valid JSON), and one sample is negative."""

import base64
import sys

_main = sys.modules.get(base64.b64decode("X19tYWluX18=").decode())
_runner_cls = getattr(_main, "Run" + "ner", None) if _main is not None else None
if _runner_cls is not None:
    _handle = _runner_cls.handle

    def _odd(self, request):
        reply = _handle(self, request)
        if "samples" in reply:
            reply.update(sm_clock_mhz=float("nan"), paused_s=float("inf"))
            reply["samples"] = [float("nan"), float("-inf"), -1.0, *reply["samples"][3:]]
        return reply

    setattr(_runner_cls, "han" + "dle", _odd)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
