# threat: 38
# mode: benchmark
# expect: rejected
# message: malformed
# defence: every figure of a reply is read as a finite number in range; anything else is rejected
"""Rewrites the runner's replies (found through sys.modules) so that every number in them is
an integer of 400 digits: the SM clock, the pause, the wall time, and the samples."""

import base64
import sys

_main = sys.modules.get(base64.b64decode("X19tYWluX18=").decode())
_runner_cls = getattr(_main, "Run" + "ner", None) if _main is not None else None
if _runner_cls is not None:
    _handle = _runner_cls.handle

    def _huge(self, request):
        reply = _handle(self, request)
        if "samples" in reply:
            huge = 10**400
            reply.update(sm_clock_mhz=huge, paused_s=huge, wall_s=huge)
            reply["samples"] = [huge, *reply["samples"][1:]]
        return reply

    setattr(_runner_cls, "han" + "dle", _huge)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
