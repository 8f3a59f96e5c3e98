# threat: 35
# expect: passed
# max_speedup: 1.5
# defence: on the CPU the harness's batches rank; the runner's figure moves them by 5% at most
"""Does the real work on every call, but wraps the runner's timer (found through sys.modules by
a decoded name) so that every per-call time it reports is half the real one: a forgery kept
inside any slack a cross-check of the runner's figures could allow."""

import base64
import sys

_timing = sys.modules.get(base64.b64decode("Z3JhZGVyLnRpbWluZw==").decode())
if _timing is not None:
    _cls = getattr(_timing, "Ti" + "mer")
    _real = _cls.one_call

    def _half(self, fn, data, *args, **kwargs):
        seconds, output = _real(self, fn, data, *args, **kwargs)
        return seconds * 0.5, output

    setattr(_cls, "one_" + "call", _half)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
