# threat: 38
# mode: benchmark
# expect: passed
# defence: a figure out of range is left out of the report (the SM clock is for reading only)
"""Reports honest samples but an SM clock of 10**400 MHz and a pause of NaN: the figures a
report only shows. The grading must end with a report, and its JSON must stay valid."""

import base64
import sys

_main = sys.modules.get(base64.b64decode("X19tYWluX18=").decode())
_runner_cls = getattr(_main, "Run" + "ner", None) if _main is not None else None
if _runner_cls is not None:
    _handle = _runner_cls.handle

    def _odd(self, request):
        reply = _handle(self, request)
        if "samples" in reply:
            reply.update(sm_clock_mhz=10**400, paused_s=float("nan"))
        return reply

    setattr(_runner_cls, "han" + "dle", _odd)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
