# threat: 30, 12, 32
# problem: matmul
# expect: failed
# defence: own-clock batches on fresh sets, outputs poisoned before and a random choice checked
"""Tells the grader's own-clock batches from the timed calls (the runner's request handler is
reached through sys.modules['__main__'], found by a decoded name) and answers a batch
without doing its calls, so the harness's clock would see calls that cost nothing;
meanwhile every time it reports is a tenth of the real one. Each timed call computes the
right answer."""

import base64
import sys

_runner = sys.modules.get(base64.b64decode("X19tYWluX18=").decode())
_timing = sys.modules.get(base64.b64decode("Z3JhZGVyLnRpbWluZw==").decode())
if hasattr(_runner, "Run" + "ner") and _timing is not None:
    _cls = getattr(_runner, "Run" + "ner")
    _handle = _cls.handle

    def _skip_batches(self, request):
        if request.get("op") == "bat" + "ch":
            sets = self._sets[request["slab"]]
            return {"ok": True, "outputs": [{"__kj_" + "slot__": 0}] * sets.count}
        return _handle(self, request)

    setattr(_cls, "han" + "dle", _skip_batches)
    _timer = getattr(_timing, "Ti" + "mer")
    _real = _timer.one_call

    def _fast(self, fn, data, *args, **kwargs):
        seconds, output = _real(self, fn, data, *args, **kwargs)
        return seconds / 10, output

    setattr(_timer, "one_" + "call", _fast)


def custom_kernel(data):
    A, B = data
    return (A.float() @ B.float()).to(A.dtype)
